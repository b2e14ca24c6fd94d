"""Each LLM-judge request is a GenAI `chat` span, linked to the judged run, through real litellm.

The scripted OpenAI-compatible server on 127.0.0.1 answers; the spans go to the real SDK's in-memory exporter.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tests.openai_server import OpenAIServer, Reply, completion_body
from tests.pipeline_builders import by_name, registry_with
from tests.serve_harness import Downstream, ServeProcess, serve_config
from tests.test_pipeline_judge import end_run, judged, verdict
from toolscore.collector import instrument
from toolscore.collector.pipeline import PipelineConfig
from toolscore.scorers import AgentRun, LLMJudge, Score, ScoreFailure, ToolCall
from toolscore.scorers._llm_judge_trace import CAPTURE_CONTENT_ENV, JUDGE_SCOPE

TRACE_ID, SPAN_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
RUN = AgentRun(
    trace_id=TRACE_ID,
    span_id=SPAN_ID,
    agent_name="weather",
    input="What's the weather in Paris?",
    output="Sunny.",
    calls=(ToolCall(name="get_weather", args={"city": "Paris"}),),
)
VERDICT = {
    "evaluations": [{"call": 1, "tool_called": "get_weather", "was_appropriate": True, "reasoning": "asked"}],
    "missing_tools": [],
    "no_tool_appropriate": None,
    "reason": "fine",
}


@pytest.fixture
def spans() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def judge(server: OpenAIServer, **params: Any) -> LLMJudge:
    defaults: dict[str, Any] = {"api_key": "test", "backoff_s": 0.01, "timeout_s": 5.0, "cache_size": 0}
    return LLMJudge(model="openai/judge-test", api_base=server.base_url, **(defaults | params))


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


async def test_a_judge_request_is_a_genai_chat_span_linked_to_the_run(
    openai_server: OpenAIServer, spans: tuple[TracerProvider, InMemorySpanExporter], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(CAPTURE_CONTENT_ENV, raising=False)
    provider, exporter = spans
    openai_server.push(Reply.json(VERDICT))

    result = await judge(openai_server).ascore(RUN, tracer=provider.get_tracer(JUDGE_SCOPE))

    assert isinstance(result, Score)
    assert result.value == 1.0
    (span,) = exporter.get_finished_spans()
    assert (span.name, span.kind, span.parent) == ("chat judge-test", SpanKind.CLIENT, None)
    assert span.context is not None
    assert f"{span.context.trace_id:032x}" != TRACE_ID
    (link,) = span.links
    assert (f"{link.context.trace_id:032x}", f"{link.context.span_id:016x}") == (TRACE_ID, SPAN_ID)
    a = attrs(span)
    assert a["gen_ai.operation.name"] == "chat"
    assert (a["gen_ai.provider.name"], a["gen_ai.request.model"]) == ("openai", "judge-test")
    assert a["gen_ai.request.temperature"] == 0.0
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (1, 1)
    assert isinstance(a["gen_ai.response.model"], str)
    assert a["gen_ai.response.model"]
    assert a["toolscore.judge.attempt"] == 1
    assert "error.type" not in a
    assert span.status.status_code != StatusCode.ERROR
    assert "gen_ai.input.messages" not in a
    assert "gen_ai.output.messages" not in a


async def test_message_content_is_recorded_only_when_capture_is_on(
    openai_server: OpenAIServer, spans: tuple[TracerProvider, InMemorySpanExporter], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    provider, exporter = spans
    openai_server.push(Reply.json(VERDICT))

    await judge(openai_server).ascore(RUN, tracer=provider.get_tracer(JUDGE_SCOPE))

    a = attrs(exporter.get_finished_spans()[0])
    sent = json.loads(a["gen_ai.input.messages"])
    assert [m["role"] for m in sent] == ["system", "user"]
    assert "What's the weather in Paris?" in sent[1]["parts"][0]["content"]
    (reply,) = json.loads(a["gen_ai.output.messages"])
    assert reply["role"] == "assistant"
    assert json.loads(reply["parts"][0]["content"]) == VERDICT


async def test_every_attempt_is_a_span_and_a_failed_one_says_its_error_type(
    openai_server: OpenAIServer, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    openai_server.push(Reply.error(503), Reply.json(VERDICT))

    result = await judge(openai_server, max_retries=1).ascore(RUN, tracer=provider.get_tracer(JUDGE_SCOPE))

    assert isinstance(result, Score)
    first, second = sorted(exporter.get_finished_spans(), key=lambda s: attrs(s)["toolscore.judge.attempt"])
    assert first.status.status_code == StatusCode.ERROR
    assert attrs(first)["error.type"] == "ServiceUnavailableError"
    assert "error.type" not in attrs(second)
    assert second.status.status_code != StatusCode.ERROR


async def test_a_malformed_verdict_fails_its_span(
    openai_server: OpenAIServer, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    openai_server.push(Reply(content="Sure, fine."))

    await judge(openai_server, max_retries=0).ascore(RUN, tracer=provider.get_tracer(JUDGE_SCOPE))

    (span,) = exporter.get_finished_spans()
    assert attrs(span)["error.type"] == "MalformedVerdict"
    assert attrs(span)["gen_ai.usage.output_tokens"] == 1  # the reply came: what it cost is still recorded


async def test_the_cost_litellm_prices_the_request_at_is_on_its_span(
    openai_server: OpenAIServer, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    import litellm

    provider, exporter = spans
    body = json.loads(completion_body(json.dumps(VERDICT)))
    body["model"] = "gpt-4o-mini"  # a model litellm has a price for
    body["usage"] = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}
    openai_server.push(Reply(raw_body=json.dumps(body)))

    priced = LLMJudge(model="openai/gpt-4o-mini", api_base=openai_server.base_url, api_key="test", cache_size=0)
    await priced.ascore(RUN, tracer=provider.get_tracer(JUDGE_SCOPE))

    prompt_usd, completion_usd = litellm.cost_per_token(model="gpt-4o-mini", prompt_tokens=1000, completion_tokens=500)
    (span,) = exporter.get_finished_spans()
    assert prompt_usd + completion_usd > 0
    assert attrs(span)["toolscore.judge.cost_usd"] == pytest.approx(prompt_usd + completion_usd)
    assert attrs(span)["gen_ai.usage.input_tokens"] == 1000


async def test_a_request_with_no_reply_in_time_is_an_error_span_without_a_response(
    openai_server: OpenAIServer, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    openai_server.push(Reply.json(VERDICT, delay_s=2.0))

    result = await judge(openai_server, timeout_s=0.5, max_retries=0).ascore(
        RUN, tracer=provider.get_tracer(JUDGE_SCOPE)
    )

    assert isinstance(result, ScoreFailure)
    assert result.error_type == "judge_timeout", result.message
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code == StatusCode.ERROR
    assert attrs(span)["error.type"] in ("Timeout", "TimeoutError")
    assert "gen_ai.response.model" not in attrs(span)
    assert "toolscore.judge.cost_usd" not in attrs(span)


def test_in_process_the_judge_span_goes_where_the_applications_spans_go_and_is_not_scored(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push(verdict("search_flights", "book_flight"))
    provider, exporter = TracerProvider(), InMemorySpanExporter()
    with registry_with(judged(openai_server)) as registry:
        processor = instrument(
            registry, tracer_provider=provider, exporter=exporter, config=PipelineConfig(settle_ms=20)
        )
        end_run(provider.get_tracer("app"))
        assert processor.force_flush(10_000)
        assert processor.force_flush(10_000)  # the judge span ends on the judge's thread, then passes
        found = by_name(exporter.get_finished_spans())
        provider.shutdown()

    run, chat = found["invoke_agent travel"], found["chat judge-test"]
    assert run.context is not None
    assert chat.instrumentation_scope is not None
    assert chat.instrumentation_scope.name == JUDGE_SCOPE
    (link,) = chat.links
    assert (link.context.trace_id, link.context.span_id) == (run.context.trace_id, run.context.span_id)
    assert not any(k.startswith("toolscore.evaluation") for k in attrs(chat))  # passed on, never read as a run
    assert attrs(run)["toolscore.evaluation.travel.llm_judge.score"] == 1.0


def test_serve_forwards_each_judge_span_downstream_beside_the_run(openai_server: OpenAIServer, tmp_path: Path) -> None:
    openai_server.push(verdict("search_flights", "book_flight"))
    expectations = tmp_path / "judged.yaml"
    expectations.write_text(yaml.safe_dump({"expectations": [judged(openai_server, timeout_s=60.0)]}))
    downstream = Downstream()
    try:
        # a cold serve imports litellm on its first judge: on a loaded machine that alone can take seconds
        held = {"settle_ms": 100, "max_hold_ms": 90_000, "judge": {"timeout_s": 90.0}}
        with ServeProcess(serve_config(tmp_path, [expectations], downstream, pipeline=held), tmp_path) as serve:
            serve.wait_ready()
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(GrpcExporter(endpoint=serve.grpc_endpoint, insecure=True)))
            end_run(provider.get_tracer("app"))
            provider.shutdown()
            deadline = time.monotonic() + 120
            wanted = {"chat judge-test", "invoke_agent travel"}
            while time.monotonic() < deadline and not wanted <= {s.name for _, s in downstream.spans()}:
                time.sleep(0.05)
        received = {span.name: (resource, span) for resource, span in downstream.spans()}
    finally:
        downstream.stop()

    _run_resource, run = received["invoke_agent travel"]
    judge_resource, chat = received["chat judge-test"]
    assert judge_resource["service.name"] == "toolscore"
    (link,) = chat.links
    assert (link.trace_id, link.span_id) == (run.trace_id, run.span_id)
    chat_attrs = {kv.key for kv in chat.attributes}
    assert {"gen_ai.operation.name", "gen_ai.request.model", "gen_ai.usage.input_tokens"} <= chat_attrs
    assert any(kv.key == "toolscore.evaluation.travel.llm_judge.score" for kv in run.attributes)
