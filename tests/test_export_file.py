"""`toolscore.export.OTLPFileSpanExporter`: the files an OTel Collector's file exporter writes, read back by eval.

Written through the real SDK (`BatchSpanProcessor`, `SimpleSpanProcessor` from many threads), read back by
`toolscore eval` and `toolscore extract` run as a user runs them, and checked against the file exporter's
formats: one OTLP/JSON request per line (hex ids), or protobuf requests each after a 4-byte big-endian size.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolscore.export import OTLPFileSpanExporter

ROOT = Path(__file__).resolve().parent.parent
EXPECTATION = """\
name: book-flight
match: {agent: travel}
scorers:
  - {type: tool_selection, expected_tool: book_flight}
"""


def _agent_run(provider: TracerProvider, tool: str) -> None:
    tracer = provider.get_tracer("app")
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel"}
    with tracer.start_as_current_span("invoke_agent travel", attributes=attributes):
        tool_attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": "c1",
        }
        with tracer.start_as_current_span(f"execute_tool {tool}", attributes=tool_attributes):
            pass


def _cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolscore.collector.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "160"},
    )


@pytest.mark.integration
@pytest.mark.parametrize(("file_format", "name"), [("json", "agent.jsonl"), ("proto", "agent.pb")])
def test_eval_and_extract_read_back_what_the_exporter_wrote(tmp_path: Path, file_format: str, name: str) -> None:
    path = tmp_path / "traces" / name  # the directory does not exist yet
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPFileSpanExporter(path, format=file_format)))  # type: ignore[arg-type]
    for tool in ("book_flight", "book_flight", "cancel"):
        _agent_run(provider, tool)
    provider.shutdown()
    (tmp_path / "expectations.yaml").write_text(EXPECTATION)

    proc = _cli(
        "eval", "-t", tmp_path / "traces", "-e", tmp_path / "expectations.yaml", "--json", tmp_path / "out.json"
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # one run of three fails
    assert proc.stdout.startswith("toolscore eval: 1 trace file(s), 6 spans, 3 runs;"), proc.stdout
    (result,) = json.loads((tmp_path / "out.json").read_text())["expectations"]
    assert (result["passed"], result["failed"]) == (2, 1)

    extracted = _cli("extract", path)
    assert extracted.returncode == 0, extracted.stderr
    runs = [json.loads(line) for line in extracted.stdout.splitlines()]
    assert sorted(call["name"] for run in runs for call in run["calls"]) == ["book_flight", "book_flight", "cancel"]


def test_json_lines_are_one_otlp_json_request_per_export_with_hex_ids(tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    exporter = OTLPFileSpanExporter(path)
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    _agent_run(provider, "book_flight")
    provider.shutdown()

    lines = path.read_text().splitlines()
    assert len(lines) == 2, "SimpleSpanProcessor exports each span alone: one request per line"
    spans = [
        span
        for line in lines
        for resource in json.loads(line)["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
    ]
    written = {(s["traceId"], s["spanId"], s.get("parentSpanId")) for s in spans}
    expected = {
        (
            f"{s.context.trace_id:032x}",
            f"{s.context.span_id:016x}",
            f"{s.parent.span_id:016x}" if s.parent is not None else None,
        )
        for s in memory.get_finished_spans()
    }
    assert written == expected, "ids in hex, as OTLP/JSON writes them (not the JSON mapping's base64)"
    run = next(s for s in spans if s["name"] == "invoke_agent travel")
    assert run["kind"] == 1, "enums as integers (SPAN_KIND_INTERNAL)"
    assert isinstance(run["startTimeUnixNano"], str), "64-bit integers as strings"
    assert {"key": "gen_ai.agent.name", "value": {"stringValue": "travel"}} in run["attributes"]


def test_proto_requests_each_follow_their_4_byte_big_endian_size(tmp_path: Path) -> None:
    path = tmp_path / "agent.pb"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPFileSpanExporter(path, format="proto")))
    _agent_run(provider, "book_flight")
    provider.shutdown()

    data, names, pos = path.read_bytes(), [], 0
    while pos < len(data):
        size = int.from_bytes(data[pos : pos + 4], "big")
        request = ExportTraceServiceRequest.FromString(data[pos + 4 : pos + 4 + size])
        names += [s.name for r in request.resource_spans for sc in r.scope_spans for s in sc.spans]
        pos += 4 + size
    assert pos == len(data)
    assert names == ["execute_tool book_flight", "invoke_agent travel"]


def test_exports_from_many_threads_each_land_whole(tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPFileSpanExporter(path)))
    threads = [
        threading.Thread(target=lambda: [_agent_run(provider, "book_flight") for _ in range(25)]) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    provider.shutdown()
    lines = path.read_text().splitlines()
    assert len(lines) == 8 * 25 * 2
    assert all(json.loads(line)["resourceSpans"] for line in lines)


def test_max_bytes_bounds_the_file_and_shutdown_closes_it_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "agent.jsonl"
    exporter = OTLPFileSpanExporter(path, max_bytes=4096)
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for _ in range(20):
        _agent_run(provider, "book_flight")
    spans = memory.get_finished_spans()
    results = [exporter.export([span]) for span in spans]
    assert SpanExportResult.FAILURE in results
    assert results[0] is SpanExportResult.SUCCESS
    assert exporter.force_flush()
    assert 0 < path.stat().st_size <= 4096
    assert exporter.dropped_spans == results.count(SpanExportResult.FAILURE)
    assert [r.getMessage() for r in caplog.records].count(
        f"OTLPFileSpanExporter({path}): the file reached max_bytes=4096; further spans are dropped"
    ) == 1
    exporter.shutdown()
    exporter.shutdown()
    assert exporter.export(spans[:1]) is SpanExportResult.FAILURE
    assert all(json.loads(line) for line in path.read_text().splitlines()), "no line cut short"


def test_a_bad_format_is_refused_at_construction(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="format must be one of json, proto, got 'protobuf'"):
        OTLPFileSpanExporter(tmp_path / "x", format="protobuf")  # type: ignore[arg-type]
