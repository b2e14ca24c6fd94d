"""Every span source gives the same `SpanRecord`s: captured traces, the real SDK and its OTLP encoder."""

from __future__ import annotations

import base64
import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from tests.signal_exports import logs_export, metrics_export
from toolscore.collector.sources import (
    DecodeStats,
    SpanDecodeError,
    TraceFileError,
    read_trace_file,
    record_from_readable,
    spans_from_json,
    spans_from_json_bytes,
    spans_from_json_lines,
    spans_from_proto_bytes,
    spans_from_readable,
    spans_from_request,
)
from toolscore.collector.spans import SpanRecord

TRACES = Path(__file__).parent / "testdata" / "traces"
TRUTH = Path(__file__).parent / "testdata" / "truth"
CAPTURES = sorted(p.with_suffix("") for p in TRACES.glob("*/*.pb") if not p.name.endswith(".logs.pb"))
EPOCH_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z


def by_span_id(records: list[SpanRecord]) -> dict[str, SpanRecord]:
    return {r.span_id: r for r in records}


def otlp_json(req: ExportTraceServiceRequest, *, snake_case: bool = False) -> dict[str, Any]:
    """The OTLP/JSON form of a request: the proto JSON mapping, with ids as hex instead of base64."""
    doc = MessageToDict(req, use_integers_for_enums=True, preserving_proto_field_name=snake_case)

    def hex_ids(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"):
                    node[key] = base64.b64decode(value).hex()
                else:
                    hex_ids(value)
        elif isinstance(node, list):
            for item in node:
                hex_ids(item)

    hex_ids(doc)
    return doc


# -- captured traces ----------------------------------------------------------------------------------


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_protobuf_and_json_captures_give_identical_records(capture: Path) -> None:
    from_pb = spans_from_proto_bytes(capture.with_suffix(".pb").read_bytes())
    from_json = spans_from_json_bytes(capture.with_suffix(".json").read_bytes())
    assert from_pb
    assert from_pb == from_json
    assert read_trace_file(capture.with_suffix(".pb")) == from_pb
    assert read_trace_file(capture.with_suffix(".json")) == from_pb


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_capture_records_hold_the_truth_runs_spans(capture: Path) -> None:
    records = by_span_id(read_trace_file(capture.with_suffix(".pb")))
    truth = json.loads((TRUTH / capture.parent.name / f"{capture.name}.truth.json").read_text())
    for run in truth["runs"]:
        agent = records[run["agent_span_id"]]
        assert agent.trace_id == run["trace_id"]
        assert len(agent.trace_id) == 32
        assert agent.end_ns >= agent.start_ns > 0
    roots = [r for r in records.values() if r.parent_id is None]
    assert roots, "every capture has a root span"
    assert all(r.parent_id in records for r in records.values() if r.parent_id is not None)


def test_spans_of_one_resource_share_one_resource_dict() -> None:
    records = read_trace_file(TRACES / "vercel-ai" / "b_sequential.pb")
    assert len({id(r.resource) for r in records}) == 1
    assert records[0].service_name == "capture-vercel-ai"
    assert records[0].scope == "gen_ai"


# -- the real SDK and its OTLP encoder ----------------------------------------------------------------


def sdk_spans() -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "shop", "deploy.regions": ["eu", "us"]}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agents = provider.get_tracer("agents-lib")
    tools = provider.get_tracer("tools-lib", "1.2")
    with agents.start_as_current_span("invoke_agent shop", start_time=EPOCH_NS, end_on_exit=False) as run:
        run.set_attributes({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"})
        tool = tools.start_span("execute_tool search", kind=SpanKind.INTERNAL, start_time=EPOCH_NS + 10)
        tool.set_attributes(
            {
                "gen_ai.tool.name": "search",
                "gen_ai.tool.call.arguments": '{"q": "shoes"}',
                "retries": 2,
                "ratio": 0.5,
                "cached": False,
                "tags": ["a", "b"],
                "sizes": [40, 41],
                "weights": [1.5, 2.5],
                "flags": [True, False],
            }
        )
        tool.add_event("exception", {"exception.type": "ValueError", "exception.message": "no"}, EPOCH_NS + 15)
        tool.set_status(Status(StatusCode.ERROR, "tool failed"))
        tool.end(end_time=EPOCH_NS + 20)
        chat = agents.start_span("chat model", kind=SpanKind.CLIENT, start_time=EPOCH_NS + 30)
        chat.set_status(Status(StatusCode.OK))
        chat.end(end_time=EPOCH_NS + 40)
        run.end(end_time=EPOCH_NS + 50)
    provider.shutdown()
    return list(exporter.get_finished_spans())


def test_sdk_spans_equal_their_otlp_protobuf_and_json_encodings() -> None:
    spans = sdk_spans()
    req = encode_spans(spans)
    from_sdk = by_span_id(spans_from_readable(spans))
    assert from_sdk == by_span_id(spans_from_proto_bytes(req.SerializeToString()))
    assert from_sdk == by_span_id(spans_from_json(otlp_json(req)))
    assert from_sdk == by_span_id(spans_from_json(otlp_json(req, snake_case=True)))


def _copy(s: ReadableSpan, cls: type[ReadableSpan] = ReadableSpan, attributes: Any = None) -> ReadableSpan:
    """A new `cls` holding the span's fields (and `attributes` instead of its own, when given)."""
    return cls(
        name=s.name, context=s.context, parent=s.parent, resource=s.resource,
        attributes=s.attributes if attributes is None else attributes, events=s.events, kind=s.kind,
        status=s.status, start_time=s.start_time, end_time=s.end_time, instrumentation_scope=s.instrumentation_scope,
    )  # fmt: skip


def _with_plain_attributes(s: ReadableSpan) -> ReadableSpan:
    """The span with plain-dict attributes, as a processor that copies spans builds it (the decoder's public path)."""
    return _copy(s, attributes=dict(s.attributes or {}))


def test_ended_sdk_spans_and_rebuilt_readable_spans_give_equal_records_that_own_their_attributes() -> None:
    spans = sdk_spans()
    rebuilt = [_with_plain_attributes(s) for s in spans]
    records = [record_from_readable(s) for s in spans]
    assert records == [record_from_readable(s) for s in rebuilt] == spans_from_readable(spans)
    tool = next(r for r in records if r is not None and r.name == "execute_tool search")
    assert isinstance(tool.attributes, dict)
    tool.attributes["retries"] = 3  # a record's attributes are its own: the span is unchanged
    assert next(s for s in spans if s.name == "execute_tool search").attributes["retries"] == 2  # type: ignore[index]


def test_spans_of_interleaved_traces_each_get_their_own_trace_id() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agents-lib")
    for n in range(4):  # four traces of one span each
        with tracer.start_as_current_span(f"root {n}"):
            pass
    provider.shutdown()
    spans = list(exporter.get_finished_spans())
    ended = [
        spans[0],
        spans[1],
        spans[1],
        spans[0],
        spans[2],
        spans[0],
        spans[3],
        spans[0],
    ]  # one trace's between others'
    records = [record_from_readable(s) for s in ended]
    assert [r.trace_id if r is not None else None for r in records] == [
        f"{s.context.trace_id:032x}" if s.context is not None else None for s in ended
    ]
    assert len({r.trace_id for r in records if r is not None}) == 4


class _OwnReadableSpan(ReadableSpan):
    """A `ReadableSpan` subclass, as another SDK component may hand over: read through its public properties."""


def test_readable_span_subclasses_are_read_through_their_properties_to_the_same_records() -> None:
    spans = sdk_spans()
    subclassed = [_copy(s, _OwnReadableSpan) for s in spans]
    records = spans_from_readable(spans)
    assert [r.name for r in records] == [s.name for s in spans]
    assert records == spans_from_readable(subclassed)
    assert any(r.events for r in records), "the sample has events, so both paths read them"


def test_sdk_records_carry_ids_kinds_status_events_and_scope() -> None:
    records = {r.name: r for r in spans_from_readable(sdk_spans())}
    run, tool, chat = records["invoke_agent shop"], records["execute_tool search"], records["chat model"]
    assert run.parent_id is None
    assert tool.parent_id == run.span_id == chat.parent_id
    assert tool.trace_id == run.trace_id
    assert len(tool.trace_id) == 32
    assert tool.trace_id == tool.trace_id.lower()
    assert (run.kind, tool.kind, chat.kind) == (1, 1, 3)  # OTLP numbering: INTERNAL=1, CLIENT=3
    assert (tool.status_code, tool.status_message, chat.status_code) == (2, "tool failed", 1)
    assert tool.attributes["tags"] == ["a", "b"]
    assert tool.attributes["flags"] == [True, False]
    assert [(e.name, e.time_ns, e.attributes["exception.type"]) for e in tool.events] == [
        ("exception", EPOCH_NS + 15, "ValueError")
    ]
    assert (run.scope, tool.scope) == ("agents-lib", "tools-lib")
    assert run.resource["deploy.regions"] == ["eu", "us"]
    assert run.resource is tool.resource
    assert (tool.start_ns, tool.end_ns) == (EPOCH_NS + 10, EPOCH_NS + 20)


# -- attribute values ---------------------------------------------------------------------------------


def kv(key: str, value: AnyValue) -> KeyValue:
    return KeyValue(key=key, value=value)


def request_with(attributes: list[KeyValue], *, trace_id: bytes = b"\x01" * 16, span_id: bytes = b"\x02" * 8) -> Any:
    req = ExportTraceServiceRequest()
    scope_spans = req.resource_spans.add().scope_spans.add()
    scope_spans.spans.add(trace_id=trace_id, span_id=span_id, name="s", attributes=attributes)
    return req


def test_protobuf_any_values_decode_to_plain_python_values() -> None:
    nested = KeyValueList(values=[kv("inner", AnyValue(int_value=-3)), kv("none", AnyValue())])
    req = request_with(
        [
            kv("s", AnyValue(string_value="x")),
            kv("b", AnyValue(bool_value=True)),
            kv("i", AnyValue(int_value=2**62)),
            kv("d", AnyValue(double_value=1.25)),
            kv("raw", AnyValue(bytes_value=b"\x00\xff")),
            kv("arr", AnyValue(array_value=ArrayValue(values=[AnyValue(string_value="a"), AnyValue(int_value=1)]))),
            kv("map", AnyValue(kvlist_value=nested)),
            kv("unset", AnyValue()),
            # zero values: each reads like an unset field of another kind, so the kind must decide
            kv("s0", AnyValue(string_value="")),
            kv("i0", AnyValue(int_value=0)),
            kv("neg", AnyValue(int_value=-5)),
            kv("f", AnyValue(bool_value=False)),
            kv("d0", AnyValue(double_value=0.0)),
            kv("raw0", AnyValue(bytes_value=b"")),
            kv("arr0", AnyValue(array_value=ArrayValue())),
        ]
    )
    (record,) = spans_from_request(req)
    expected = {
        "s": "x",
        "b": True,
        "i": 2**62,
        "d": 1.25,
        "raw": b"\x00\xff",
        "arr": ["a", 1],
        "map": {"inner": -3, "none": None},
        "unset": None,
        "s0": "",
        "i0": 0,
        "neg": -5,
        "f": False,
        "d0": 0.0,
        "raw0": b"",
        "arr0": [],
    }
    assert record.attributes == expected
    assert {k: type(v) for k, v in record.attributes.items()} == {k: type(v) for k, v in expected.items()}
    assert spans_from_json(otlp_json(req)) == [record]


def test_json_accepts_int64_as_strings_or_numbers_and_enums_by_name() -> None:
    doc = {
        "resource_spans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
                "scope_spans": [
                    {
                        "scope": {"name": "lib"},
                        "spans": [
                            {
                                "trace_id": "0AF7651916CD43DD8448EB211C80319C",
                                "span_id": "B7AD6B7169203331",
                                "parent_span_id": "",
                                "name": "op",
                                "kind": "SPAN_KIND_CLIENT",
                                "start_time_unix_nano": 1_700_000_000_000_000_000,
                                "endTimeUnixNano": "1700000000000000500",
                                "status": {"code": "STATUS_CODE_ERROR", "message": "boom"},
                                "attributes": [
                                    {"key": "n", "value": {"intValue": "9007199254740993"}},
                                    {"key": "m", "value": {"int_value": 7}},
                                    {"key": "inf", "value": {"doubleValue": "Infinity"}},
                                    {
                                        "key": "raw",
                                        "value": {"bytesValue": base64.urlsafe_b64encode(b"\xfb\xff").decode()},
                                    },
                                    {"key": "arr", "value": {"arrayValue": {"values": [{"boolValue": False}]}}},
                                    {"key": "kv", "value": {"kvlistValue": {"values": [{"key": "a", "value": {}}]}}},
                                ],
                                "events": [{"name": "e", "timeUnixNano": "1700000000000000100"}],
                            }
                        ],
                    }
                ],
            }
        ]
    }
    (record,) = spans_from_json(doc)
    assert (record.trace_id, record.span_id, record.parent_id) == (
        "0af7651916cd43dd8448eb211c80319c",
        "b7ad6b7169203331",
        None,
    )
    assert (record.kind, record.status_code, record.status_message) == (3, 2, "boom")
    assert (record.start_ns, record.end_ns) == (1_700_000_000_000_000_000, 1_700_000_000_000_000_500)
    assert record.attributes == {
        "n": 9007199254740993,
        "m": 7,
        "inf": float("inf"),
        "raw": b"\xfb\xff",
        "arr": [False],
        "kv": {"a": None},
    }
    assert record.events[0].time_ns == 1_700_000_000_000_000_100
    assert (record.service_name, record.scope) == ("svc", "lib")


def test_json_field_of_the_wrong_type_names_its_path() -> None:
    doc = otlp_json(request_with([kv("s", AnyValue(string_value="x"))]))
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["startTimeUnixNano"] = "yesterday"
    with pytest.raises(SpanDecodeError, match=r"resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]\.startTimeUnixNano"):
        spans_from_json(doc)


# -- bad ids, bad bytes, bad files --------------------------------------------------------------------


def test_spans_with_wrong_length_ids_are_skipped_and_counted() -> None:
    req = request_with([])
    spans = req.resource_spans[0].scope_spans[0].spans
    spans.add(trace_id=b"\x01" * 16, span_id=b"\x03" * 4, name="short span id")
    spans.add(trace_id=b"\x01" * 8, span_id=b"\x04" * 8, name="short trace id")
    spans.add(trace_id=b"\x01" * 16, span_id=b"\x05" * 8, parent_span_id=b"\x06" * 3, name="short parent")
    stats = DecodeStats()
    records = spans_from_proto_bytes(req.SerializeToString(), stats)
    assert [r.name for r in records] == ["s"]
    assert stats.spans == 1
    assert stats.skipped == {"bad_span_id": 1, "bad_trace_id": 1, "bad_parent_span_id": 1}
    assert "short span id" in stats.examples[0]

    doc = otlp_json(request_with([]))
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"] = base64.b64encode(b"\x02" * 6).decode()
    json_stats = DecodeStats()
    assert spans_from_json(doc, json_stats) == []
    assert json_stats.skipped == {"bad_span_id": 1}
    assert "is not 16 hex digits (OTLP/JSON) nor 12 base64 characters" in json_stats.examples[0]


def test_otlp_json_ids_are_read_as_hex_or_as_the_protobuf_json_mappings_base64() -> None:
    """`MessageToJson` (the protobuf JSON mapping) writes ids as base64; the OTLP/JSON spec as hex. Both name
    the same span, told apart by length: 32/16 hex digits, 24/12 base64 characters (22/11 unpadded)."""
    req = request_with([], trace_id=bytes.fromhex("fbff" * 8), span_id=bytes.fromhex("5b8efff798038103"))
    hex_doc = otlp_json(req)
    mapping_doc = MessageToDict(req)
    span = mapping_doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert (len(span["traceId"]), len(span["spanId"])) == (24, 12)
    hex_stats, mapping_stats = DecodeStats(), DecodeStats()
    assert spans_from_json(mapping_doc, mapping_stats) == spans_from_json(hex_doc, hex_stats) != []
    assert (hex_stats.id_encodings, mapping_stats.id_encodings) == ({"hex": 1}, {"base64": 1})
    assert "+" in span["traceId"]
    span["traceId"] = span["traceId"].rstrip("=").replace("+", "-").replace("/", "_")  # URL-safe, unpadded
    assert spans_from_json(mapping_doc) == spans_from_json(hex_doc)


def test_malformed_protobuf_names_the_offset_and_field() -> None:
    data = (TRACES / "pydantic-ai" / "a_single_tool.pb").read_bytes()
    with pytest.raises(SpanDecodeError, match=r"resource_spans: length \d+ runs past the end") as info:
        spans_from_proto_bytes(data[:-10])
    assert info.value.offset == 1
    with pytest.raises(SpanDecodeError, match="not a valid OTLP ExportTraceServiceRequest"):
        spans_from_proto_bytes(b"\x0a\xff")
    with pytest.raises(SpanDecodeError, match="without resource_spans"):
        spans_from_proto_bytes(b"\x10\x01")


@pytest.mark.parametrize(
    ("export", "what"),
    [
        (metrics_export, "an OTLP metrics export (ExportMetricsServiceRequest)"),
        (logs_export, "an OTLP logs export (ExportLogsServiceRequest)"),
    ],
    ids=["metrics", "logs"],
)
def test_a_pb_file_of_another_signals_export_is_an_error_naming_the_file(
    tmp_path: Path, export: Callable[[], bytes], what: str
) -> None:
    """Their bytes share the trace export's outer shape: read as traces, they gave spans without ids (a trace
    of no spans, which an evaluation passes) or an error about a span field the file never had."""
    data = export()
    path = tmp_path / "export.pb"
    for content in (data, gzip.compress(data)):
        path.write_bytes(content)
        with pytest.raises(TraceFileError) as info:
            read_trace_file(path)
        assert (
            str(info.value) == f"{path}: not an OTLP trace export: {what} of {len(data)} bytes, without resource_spans"
        )
    path.write_bytes(len(data).to_bytes(4, "big") + data)  # the Collector's file exporter, `format: proto`
    framed = rf"^{re.escape(str(path))}: byte 4: frame at byte 0: not an OTLP trace export: {re.escape(what)} "
    with pytest.raises(TraceFileError, match=framed):
        read_trace_file(path)


def test_a_trace_export_whose_spans_all_lack_ids_is_still_read_as_traces() -> None:
    """Told apart from another signal's export: its spans are skipped and counted, as before."""
    req = request_with([], trace_id=b"", span_id=b"")
    req.resource_spans[0].scope_spans[0].spans.add(name="no ids either", start_time_unix_nano=EPOCH_NS)
    stats = DecodeStats()
    assert spans_from_proto_bytes(req.SerializeToString(), stats) == []
    assert stats.skipped == {"bad_trace_id": 2}


def test_truncated_trace_file_error_names_the_file_and_byte(tmp_path: Path) -> None:
    path = tmp_path / "cut.pb"
    path.write_bytes((TRACES / "vercel-ai" / "c_parallel.pb").read_bytes()[:500])
    with pytest.raises(TraceFileError, match=r"cut\.pb: byte 1: .*runs past the end") as info:
        read_trace_file(path)
    assert info.value.path == str(path)
    assert info.value.offset == 1


def test_invalid_json_file_error_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{\n  "resourceSpans": [\n    {"resource": }\n  ]\n}\n')
    with pytest.raises(TraceFileError, match=r"bad\.json: line 3: invalid JSON") as info:
        read_trace_file(path)
    assert info.value.line == 3


def test_json_lines_with_one_bad_line_still_yield_the_other_lines(tmp_path: Path) -> None:
    docs = [json.loads((TRACES / "vercel-ai" / f"{name}.json").read_text()) for name in ("a_single_tool", "c_parallel")]
    path = tmp_path / "export.jsonl"
    path.write_text(json.dumps(docs[0]) + "\n" + '{"resourceSpans": [oops\n' + json.dumps(docs[1]) + "\n")
    errors: list[TraceFileError] = []
    records = read_trace_file(path, errors=errors)
    assert records == spans_from_json(docs[0]) + spans_from_json(docs[1])
    assert [(e.line, e.path) for e in errors] == [(2, str(path))]
    assert f"{path}: line 2: invalid JSON" in str(errors[0])
    with pytest.raises(TraceFileError, match="line 2"):
        read_trace_file(path)
    with pytest.raises(SpanDecodeError, match="line 2"):
        spans_from_json_lines(path.read_bytes())


def test_json_lines_with_invalid_utf8_in_one_line_still_yield_the_other_lines(tmp_path: Path) -> None:
    docs = [json.loads((TRACES / "vercel-ai" / f"{name}.json").read_text()) for name in ("a_single_tool", "c_parallel")]
    path = tmp_path / "export.jsonl"
    bad = json.dumps(docs[0]).encode().replace(b'"name": "', b'"name": "\xff', 1)
    path.write_bytes(json.dumps(docs[0]).encode() + b"\n" + bad + b"\n" + json.dumps(docs[1]).encode() + b"\n")
    errors: list[TraceFileError] = []

    records = read_trace_file(path, errors=errors)

    assert records == spans_from_json(docs[0]) + spans_from_json(docs[1])
    assert [(e.line, e.path) for e in errors] == [(2, str(path))]
    assert f"{path}: line 2: invalid UTF-8" in str(errors[0])


def test_json_lines_whose_first_line_is_bad_are_still_read_as_lines(tmp_path: Path) -> None:
    doc = json.loads((TRACES / "pydantic-ai" / "a_single_tool.json").read_text())
    path = tmp_path / "export.jsonl"
    path.write_text("{not json\n" + json.dumps(doc) + "\n")
    errors: list[TraceFileError] = []
    assert read_trace_file(path, errors=errors) == spans_from_json(doc)
    assert [e.line for e in errors] == [1]


def test_gzip_and_length_prefixed_files_read_like_plain_ones(tmp_path: Path) -> None:
    pb = (TRACES / "openai-agents" / "c_parallel.pb").read_bytes()
    expected = spans_from_proto_bytes(pb)
    (tmp_path / "t.pb.gz").write_bytes(gzip.compress(pb))
    assert read_trace_file(tmp_path / "t.pb.gz") == expected
    (tmp_path / "t.json.gz").write_bytes(gzip.compress((TRACES / "openai-agents" / "c_parallel.json").read_bytes()))
    assert read_trace_file(tmp_path / "t.json.gz") == expected
    # the Collector's file exporter with `format: proto`: 4-byte big-endian size before each message
    (tmp_path / "t.bin").write_bytes(2 * (len(pb).to_bytes(4, "big") + pb))
    assert read_trace_file(tmp_path / "t.bin") == expected + expected
    (tmp_path / "cut.gz").write_bytes(gzip.compress(pb)[:100])
    with pytest.raises(TraceFileError, match=r"cut\.gz: byte 0: gzip data is corrupt or truncated"):
        read_trace_file(tmp_path / "cut.gz")


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ('{"foo": 1}', "a JSON object with the keys 'foo', without resourceSpans"),
        (
            (TRUTH / "vercel-ai" / "a_single_tool.truth.json").read_text(),
            "a JSON object with the keys 'conventions', 'framework', 'framework_version', 'instrumentation', "
            "… (6 keys), without resourceSpans",
        ),
        ('{"resourceMetrics": []}', "an OTLP metrics export, without resourceSpans"),
        ('["resourceSpans"]', "expected a JSON object, got list"),
    ],
    ids=["other-json", "ground-truth", "metrics", "array"],
)
def test_a_json_file_that_is_not_a_trace_export_is_an_error_naming_the_file(
    tmp_path: Path, text: str, what: str
) -> None:
    """Not a trace of no spans: an evaluation of a file that holds none would pass."""
    path = tmp_path / "not-traces.json"
    path.write_text(text)
    with pytest.raises(TraceFileError) as info:
        read_trace_file(path)
    assert str(info.value).startswith(f"{path}: not an OTLP trace export: {what}")


@pytest.mark.parametrize("text", ["{}", '{"resourceSpans": []}', '{"resource_spans": []}', "\n"])
def test_an_empty_trace_export_is_read_as_no_spans(tmp_path: Path, text: str) -> None:
    path = tmp_path / "empty.json"
    path.write_text(text)
    assert read_trace_file(path) == []


def test_json_lines_and_json_frames_that_are_not_trace_exports_are_errors_at_their_line_or_byte(
    tmp_path: Path,
) -> None:
    doc = (TRACES / "vercel-ai" / "a_single_tool.json").read_text()
    lines = tmp_path / "export.jsonl"
    lines.write_text(json.dumps(json.loads(doc)) + '\n{"resourceLogs": []}\n{}\n')
    errors: list[TraceFileError] = []
    assert read_trace_file(lines, errors=errors) == spans_from_json(json.loads(doc))
    assert [str(e) for e in errors] == [
        f"{lines}: line 2: not an OTLP trace export: an OTLP logs export, without resourceSpans (an empty export "
        'is {} or {"resourceSpans": []})'
    ]
    frames = tmp_path / "export.bin"
    frame = b'{"runs": []}'
    frames.write_bytes(len(frame).to_bytes(4, "big") + frame)
    with pytest.raises(TraceFileError, match=r"export\.bin: byte 4: frame at byte 0: not an OTLP trace export"):
        read_trace_file(frames)


def test_missing_file_error_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(TraceFileError, match=r"nope\.pb: No such file"):
        read_trace_file(tmp_path / "nope.pb")


def test_protobuf_that_starts_like_json_is_read_as_protobuf(tmp_path: Path) -> None:
    # 0x0a (field 1, a newline) then a length of 123 (`{`): looks like JSON to a naive sniffer
    for size in range(1, 200):
        req = request_with([kv("pad", AnyValue(string_value="x" * size))])
        if req.resource_spans[0].ByteSize() == 123:
            break
    data = req.SerializeToString()
    assert data[:2] == b"\n{"
    (tmp_path / "tricky.pb").write_bytes(data)
    assert read_trace_file(tmp_path / "tricky.pb") == spans_from_request(req)


def test_an_all_zero_parent_id_is_a_root() -> None:
    """Some SDKs send a root's parent as eight zero bytes; taken as a parent, the live pipeline never saw
    the trace's root and scored its inferred runs only at the idle timeout, flagged incomplete."""
    req = request_with([])
    req.resource_spans[0].scope_spans[0].spans[0].parent_span_id = bytes(8)
    as_json = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "01" * 16, "spanId": "02" * 8, "parentSpanId": "0" * 16, "name": "s"}
    ]}]}]}  # fmt: skip

    assert [r.parent_id for r in spans_from_request(req)] == [None]
    assert [r.parent_id for r in spans_from_json(as_json)] == [None]


def test_all_zero_ids_are_skipped_and_counted() -> None:
    req = request_with([], trace_id=bytes(16))
    req.resource_spans[0].scope_spans[0].spans.add(trace_id=b"\x01" * 16, span_id=bytes(8), name="zero span")
    stats = DecodeStats()
    assert spans_from_request(req, stats) == []
    assert stats.skipped == {"bad_trace_id": 1, "bad_span_id": 1}


def test_invalid_utf8_in_a_json_body_names_its_byte_once() -> None:
    with pytest.raises(SpanDecodeError) as caught:
        spans_from_json_bytes(b'{"resourceSpans": [{"x": "\xc3\x28"}]}')
    assert str(caught.value) == "byte 26: invalid UTF-8 (invalid continuation byte): OTLP/JSON must be UTF-8"


@pytest.mark.parametrize("data", [b"[" * 3000 + b"]" * 3000, b'{"resourceSpans": ' + b"[" * 3000])
def test_json_nested_thousands_deep_is_a_decode_error_not_a_recursion_error(data: bytes) -> None:
    with pytest.raises(SpanDecodeError, match="nested too deeply"):
        spans_from_json_bytes(data)
