"""Extraction against spans that real agent frameworks emit, live, with scripted models.

Every scenario of `tests.frameworks` runs in pydantic-ai, the OpenAI Agents SDK (OpenInference) and
LangGraph (OpenInference); the spans are caught by the real OTel SDK, and the runs toolscore rebuilds
are compared with the script: run count, agent names, call names, parsed arguments, model order,
errors and which run a nested agent's calls belong to. The same spans also go through the real
OTLP protobuf encoder and must give the same runs.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.frameworks import FRAMEWORKS, SCENARIOS, ScriptedRun, apply_hermetic_env, run_openai_agents_handoff
from toolscore.collector.extract import rebuild_runs
from toolscore.collector.sources import spans_from_proto_bytes, spans_from_readable
from toolscore.scorers import AgentRun

RUN_SPAN_FRAMEWORKS = {"pydantic-ai", "openai-agents"}
"""Frameworks that mark the run with a span of its own; LangGraph's graph roots carry no agent marker,
so its runs are inferred from the tree by design."""

CASES = [(framework, scenario) for framework in FRAMEWORKS for scenario in SCENARIOS]
_captures: dict[tuple[str, str], tuple[tuple[ReadableSpan, ...], tuple[ScriptedRun, ...]]] = {}


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    apply_hermetic_env(monkeypatch)


LOCAL_HOSTS = {"127.0.0.1", "::1", "localhost"}


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Proves the scenarios hermetic: any lookup or connection beyond loopback is refused and fails the test."""
    attempts: list[object] = []
    connect, getaddrinfo = socket.socket.connect, socket.getaddrinfo

    def guarded_connect(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in LOCAL_HOSTS:
            attempts.append(address)
            raise OSError(f"network access in a hermetic test: {address}")
        connect(sock, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in LOCAL_HOSTS and host is not None:
            attempts.append(host)
            raise socket.gaierror(f"name lookup in a hermetic test: {host}")
        return getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    yield
    assert attempts == []


async def _capture(framework: str, scenario: str) -> tuple[tuple[ReadableSpan, ...], tuple[ScriptedRun, ...]]:
    """Runs each scenario once per session: the tests below read the same spans in different ways."""
    key = (framework, scenario)
    if key not in _captures:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        truth = await FRAMEWORKS[framework](scenario, provider)
        provider.shutdown()
        _captures[key] = (exporter.get_finished_spans(), truth)
    return _captures[key]


def _calls(run: AgentRun) -> list[tuple[str, Any, bool]]:
    return [(call.name, call.args, call.error) for call in run.calls]


def _scripted_calls(run: ScriptedRun) -> list[tuple[str, Any, bool]]:
    return [(call.name, call.args, call.error) for call in run.calls]


def _shape(runs: Sequence[AgentRun]) -> list[dict[str, Any]]:
    """What scoring reads from a run, for comparing two decodings of the same spans."""
    return [
        {
            "run": run.run_id,
            "agent": run.agent_name,
            "parent": run.parent_span_id,
            "inferred": run.inferred,
            "calls": [call.to_json() for call in run.calls],
        }
        for run in runs
    ]


@pytest.mark.parametrize(("framework", "scenario"), CASES)
async def test_runs_and_calls_match_the_script(framework: str, scenario: str) -> None:
    spans, truth = await _capture(framework, scenario)
    runs = rebuild_runs(spans_from_readable(spans))
    assert [run.agent_name for run in runs] == [run.agent_name for run in truth], _shape(runs)
    for run, scripted in zip(runs, truth, strict=True):
        assert _calls(run) == _scripted_calls(scripted), run.agent_name
        assert all(call.args_state == "value" for call in run.calls)
        if framework in RUN_SPAN_FRAMEWORKS:
            assert not run.inferred


@pytest.mark.parametrize(("framework", "scenario"), CASES)
async def test_runs_belong_to_the_captured_trace(framework: str, scenario: str) -> None:
    spans, _ = await _capture(framework, scenario)
    span_ids = {format(span.context.span_id, "016x") for span in spans}
    trace_ids = {format(span.context.trace_id, "032x") for span in spans}
    runs = rebuild_runs(spans_from_readable(spans))
    assert runs
    assert {run.trace_id for run in runs} == trace_ids
    assert all(run.span_id in span_ids for run in runs)
    assert all(call.span_id in span_ids for run in runs for call in run.calls)


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
async def test_call_ids_are_the_models(framework: str) -> None:
    spans, truth = await _capture(framework, "c_parallel")
    runs = rebuild_runs(spans_from_readable(spans))
    assert [[call.call_id for call in run.calls] for run in runs] == [
        [call.call_id for call in run.calls] for run in truth
    ]


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
async def test_parallel_calls_keep_model_order_whatever_the_span_order(framework: str) -> None:
    spans, truth = await _capture(framework, "c_parallel")
    scripted = [call.name for call in truth[0].calls]
    for ordered in (spans, tuple(reversed(spans)), tuple(sorted(spans, key=lambda s: -(s.start_time or 0)))):
        runs = rebuild_runs(spans_from_readable(ordered))
        assert [call.name for call in runs[0].calls] == scripted


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
async def test_failed_tool_call_is_an_error_and_the_retry_is_not(framework: str) -> None:
    spans, _ = await _capture(framework, "e_tool_error_retry")
    (run,) = rebuild_runs(spans_from_readable(spans))
    failed, retried = run.calls
    assert (failed.args, failed.error) == ({"city": "Atlantis"}, True)
    assert (retried.args, retried.error) == ({"city": "Paris"}, False)


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
async def test_nested_agent_is_its_own_run_linked_to_its_parent(framework: str) -> None:
    spans, _ = await _capture(framework, "n_nested")
    runs = {run.agent_name: run for run in rebuild_runs(spans_from_readable(spans))}
    assert set(runs) == {"coordinator", "sub_researcher"}
    assert runs["coordinator"].tool_names == ["delegate_research"]
    assert runs["sub_researcher"].tool_names == ["search"]
    assert runs["sub_researcher"].parent_span_id == runs["coordinator"].span_id
    assert runs["coordinator"].parent_span_id is None


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
async def test_two_runs_in_one_trace_stay_apart(framework: str) -> None:
    spans, truth = await _capture(framework, "g_two_runs_one_trace")
    runs = rebuild_runs(spans_from_readable(spans))
    assert len({run.trace_id for run in runs}) == 1
    assert len({run.span_id for run in runs}) == 2
    assert [run.agent_name for run in runs] == ["chat_agent", "chat_agent"]
    assert [run.calls[0].args for run in runs] == [run.calls[0].args for run in truth]


@pytest.mark.parametrize(("framework", "scenario"), CASES)
async def test_otlp_protobuf_gives_the_same_runs_as_sdk_spans(framework: str, scenario: str) -> None:
    spans, _ = await _capture(framework, scenario)
    body = encode_spans(spans).SerializeToString()
    from_proto = rebuild_runs(spans_from_proto_bytes(body))
    from_sdk = rebuild_runs(spans_from_readable(spans))
    assert _shape(from_proto) == _shape(from_sdk)
    assert [run.attributes for run in from_proto] == [run.attributes for run in from_sdk]


async def test_an_openai_agents_handoff_is_a_call_of_the_agent_handing_off_with_the_models_arguments() -> None:
    """OpenInference leaves the handoff's `{}` out of the model span and puts the agent's name in the
    handoff span's `input.value`: neither may become the call's arguments."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    truth = await run_openai_agents_handoff(provider)
    provider.shutdown()

    runs = rebuild_runs(spans_from_readable(exporter.get_finished_spans()))

    assert [(run.agent_name, _calls(run)) for run in runs] == [(run.agent_name, _scripted_calls(run)) for run in truth]
    handoff = runs[0].calls[0]
    assert (handoff.call_id, handoff.args_state) == ("call_h1", "value")


async def test_every_framework_emits_its_own_convention() -> None:
    """Guards the harness: each framework must really be traced by its own instrumentation."""
    scopes = {}
    for framework in FRAMEWORKS:
        spans, _ = await _capture(framework, "a_single_tool")
        scopes[framework] = {span.instrumentation_scope.name for span in spans if span.instrumentation_scope}
    assert scopes == {
        "pydantic-ai": {"pydantic-ai"},
        "openai-agents": {"openinference.instrumentation.openai_agents"},
        "langgraph": {"openinference.instrumentation.langchain"},
    }
