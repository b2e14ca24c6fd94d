"""Spans per second from OTLP protobuf bytes to rebuilt runs, against parsing and walking the same bytes.

The batches are GenAI-convention agent traces made with the real SDK (an `invoke_agent` span, one
`chat` span per model step, one `execute_tool` span per call, 10-15 attributes per span, ~200-byte
JSON arguments, 3-8 calls per run) and encoded once with the OTLP exporter's encoder, about 500
spans per batch as the batch span processor sends them. The baseline is the floor any decoder
pays: `ExportTraceServiceRequest` parse plus reading every attribute of every resource, span and event.
"""

from __future__ import annotations

import json
import random
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer, use_span

from tests.bench.harness import Bench
from tests.bench.workload import TOOLS, make_args
from toolscore.collector.extract import rebuild_runs
from toolscore.collector.sources import spans_from_proto_bytes, spans_from_request
from toolscore.collector.sources.otlp_proto import parse_trace_export

EPOCH_NS = 1_767_225_600_000_000_000
RUNS_PER_BATCH = 40
BATCHES = 10
MODEL = {"gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4.1", "server.address": "api.openai.com"}


def chat_attributes(rng: random.Random, calls: list[tuple[str, str, str]], temperature: float | None) -> dict[str, Any]:
    """A GenAI `chat` span's attributes for a model response asking for `calls` (call id, name, JSON args)."""
    parts = [{"type": "tool_call", "id": cid, "name": name, "arguments": json.loads(args)} for cid, name, args in calls]
    attributes: dict[str, Any] = {
        **MODEL,
        "gen_ai.operation.name": "chat",
        "gen_ai.response.model": "gpt-4.1-2025-04-14",
        "gen_ai.response.id": f"resp-{rng.getrandbits(48):x}",
        "gen_ai.response.finish_reasons": ["tool_calls"],
        "gen_ai.usage.input_tokens": rng.randint(200, 4000),
        "gen_ai.usage.output_tokens": rng.randint(20, 400),
    }
    if temperature is not None:
        attributes["gen_ai.request.temperature"] = temperature
    attributes["gen_ai.output.messages"] = json.dumps([{"role": "assistant", "parts": parts}])
    attributes["server.port"] = 443
    return attributes


def _chat(tracer: Tracer, rng: random.Random, t: int, calls: list[tuple[str, str, str]]) -> None:
    span = tracer.start_span("chat gpt-4.1", kind=SpanKind.CLIENT, start_time=t)
    span.set_attributes(chat_attributes(rng, calls, temperature=0.2))
    span.end(end_time=t + 900_000)


def _tool(tracer: Tracer, rng: random.Random, t: int, call: tuple[str, str, str], fail: bool) -> None:
    call_id, name, args = call
    span = tracer.start_span(f"execute_tool {name}", start_time=t)
    span.set_attributes(
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.call.arguments": args,
            "gen_ai.tool.call.result": json.dumps({"ok": not fail, "items": rng.randint(0, 9)}),
            "gen_ai.tool.description": f"{name.replace('_', ' ')} for the user",
            "gen_ai.agent.name": "travel-agent",
            "gen_ai.conversation.id": "conv-1",
            "code.function.name": f"tools.{name}",
        }
    )
    if fail:
        span.add_event("exception", {"exception.type": "TimeoutError", "exception.message": "upstream timed out"})
        span.set_status(Status(StatusCode.ERROR, "upstream timed out"))
        span.set_attribute("error.type", "TimeoutError")
    span.end(end_time=t + 400_000)


def _run(tracer: Tracer, rng: random.Random, t: int) -> None:
    root = tracer.start_span("invoke_agent travel-agent", kind=SpanKind.INTERNAL, start_time=t)
    root.set_attributes(
        {
            **MODEL,
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "travel-agent",
            "gen_ai.agent.id": "agent-7",
            "gen_ai.conversation.id": f"conv-{rng.getrandbits(32):x}",
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Plan it"}]}]),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "Done"}]}]
            ),
            "gen_ai.usage.input_tokens": rng.randint(1000, 9000),
            "gen_ai.usage.output_tokens": rng.randint(100, 900),
        }
    )
    with use_span(root, end_on_exit=False):
        ctx_t = t + 1_000_000
        calls = [(f"call_{i}", rng.choice(TOOLS), json.dumps(make_args(rng))) for i in range(rng.randint(3, 8))]
        for step in range(0, len(calls), 2):
            _chat(tracer, rng, ctx_t, calls[step : step + 2])
            for call in calls[step : step + 2]:
                ctx_t += 1_000_000
                _tool(tracer, rng, ctx_t, call, fail=rng.random() < 0.05)
        _chat(tracer, rng, ctx_t + 1_000_000, [])
    root.end(end_time=ctx_t + 2_000_000)


def make_batches(
    seed: int = 11, batches: int = BATCHES, runs_per_batch: int = RUNS_PER_BATCH
) -> tuple[list[bytes], int]:
    """Encoded requests holding whole traces, and how many spans they hold in all."""
    rng = random.Random(seed)
    resource = Resource.create(
        {"service.name": "travel-agent", "service.version": "1.4.2", "deployment.environment": "prod"}
    )
    encoded, total = [], 0
    for b in range(batches):
        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=resource)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("opentelemetry.instrumentation.openai_agents", "0.9.0")
        for r in range(runs_per_batch):
            _run(tracer, rng, EPOCH_NS + (b * runs_per_batch + r) * 10**9)
        spans: list[ReadableSpan] = list(exporter.get_finished_spans())
        provider.shutdown()
        encoded.append(encode_spans(spans).SerializeToString())
        total += len(spans)
    return encoded, total


_NESTED = ("array_value", "kvlist_value")


def _walk_value(value: Any) -> None:
    which = value.WhichOneof("value")
    if which == "array_value":
        for item in value.array_value.values:
            _walk_value(item)
    elif which == "kvlist_value":
        for kv in value.kvlist_value.values:
            _walk_value(kv.value)
    elif which is not None:
        getattr(value, which)


def _walk(key_values: Any) -> None:
    for kv in key_values:
        _ = kv.key
        value = kv.value
        which = value.WhichOneof("value")
        if which in _NESTED:
            _walk_value(value)
        elif which is not None:
            getattr(value, which)


def parse_and_walk(data: bytes) -> None:
    """The baseline: parse, then read every attribute key and value of every resource, span and event."""
    req = ExportTraceServiceRequest.FromString(data)
    for resource_spans in req.resource_spans:
        _walk(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                _walk(span.attributes)
                for event in span.events:
                    _walk(event.attributes)


def bench(b: Bench, *, quick: bool = False) -> None:
    """`quick`: one small batch, one pair, for the smoke test."""
    n_batches, per_batch, pairs = (1, 5, 1) if quick else (BATCHES, RUNS_PER_BATCH, 9)
    batches, total = make_batches(batches=n_batches, runs_per_batch=per_batch)
    runs = [rebuild_runs(spans_from_proto_bytes(data)) for data in batches]
    assert sum(len(r) for r in runs) == n_batches * per_batch, "every generated run is rebuilt"
    assert all(3 <= len(run.calls) <= 8 for batch in runs for run in batch), "every run keeps its calls"
    del runs  # not held while timing: the collector's full passes would walk them too, as anything the process holds

    def baseline() -> None:
        for data in batches:
            parse_and_walk(data)

    def decode_only() -> None:
        for data in batches:
            spans_from_proto_bytes(data)

    def extract() -> None:
        for data in batches:
            rebuild_runs(spans_from_proto_bytes(data))

    def extract_pure() -> None:  # the pure-Python decoder, as where the compiled one is not built
        for data in batches:
            rebuild_runs(spans_from_request(parse_trace_export(data)))

    base = "extract.baseline.spans_per_s"
    b.pair("extract.decode.spans_per_s", decode_only, base, baseline, total, unit="spans/s", runs=pairs)
    b.pair("extract.spans_per_s", extract, base, baseline, total, unit="spans/s", runs=pairs)
    b.pair("extract.pure_python.spans_per_s", extract_pure, base, baseline, total, unit="spans/s", runs=pairs)
    b.target("extract.spans_per_s", ">=", 0.5)  # issue #24's floor
