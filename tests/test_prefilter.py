"""The pre-filter skips only what extraction would not read: every capture gives the same runs with and without it.

The markers are the conventions' gates (`pipeline.markers`); a span any extractor recognises, asked directly
(not through the gated dispatch), must carry one. Then each capture goes through `serve`'s wire pre-filter as
one request, and as one request per span in the order the spans ended (as an exporter sends them, children
first): the spans it keeps must rebuild the same runs as all of them. In process, the processor passes a
plain trace's spans on from the thread that ends them, unread, and scores an agent trace as without it.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.trace import set_span_in_context

from tests.pipeline_builders import Recording, registry_with, run_attrs, tool_attrs
from tests.test_pipeline_parity import SYNTHETIC
from toolscore.collector.extract import rebuild_runs
from toolscore.collector.extract.conventions import EXTRACTORS, Gate
from toolscore.collector.pipeline import PipelineConfig, ToolscoreSpanProcessor
from toolscore.collector.pipeline.markers import AgentTraces, Markers, convention_markers
from toolscore.collector.serve._prefilter import PlainRequest, SpanPlan, WirePrefilter
from toolscore.collector.sources import LogBatch, join_log_events, read_trace_file
from toolscore.collector.sources._accel import request_index, span_table
from toolscore.collector.sources.otlp_proto import spans_from_request
from toolscore.collector.spans import SpanRecord

TESTDATA = Path(__file__).parent / "testdata"
CAPTURES = sorted(p for p in (TESTDATA / "traces").glob("*/*.pb") if not p.name.endswith(".logs.pb")) + sorted(
    (TESTDATA / "mcp").glob("*.pb")
)
TRAVEL = {"name": "travel", "match": {"agent": "travel"}, "scorers": [{"type": "tool_selection", "expected_tool": "a"}]}


def _markers() -> Markers:
    markers = convention_markers()
    assert markers is not None
    return markers


def _with_events(capture: Path, spans: list[SpanRecord]) -> list[SpanRecord]:
    """The spans with the GenAI log events of the logs export beside the capture joined, as extraction reads them."""
    beside = capture.with_name(capture.name.replace(".pb", ".logs.pb"))
    if beside.exists():
        logs = LogBatch()
        read_trace_file(beside, logs=logs)
        join_log_events(spans, logs.events)
    return spans


def test_the_markers_are_the_union_of_every_conventions_gate() -> None:
    markers = _markers()
    gates = [extractor.gate for extractor in EXTRACTORS]
    assert markers.keys == frozenset().union(*(gate.keys for gate in gates))
    assert markers.scopes == frozenset().union(*(gate.scopes for gate in gates))
    assert {"gen_ai.operation.name", "openinference.span.kind", "traceloop.span.kind"} <= markers.keys


def test_an_extractor_without_a_gate_turns_the_prefilter_off() -> None:
    class Ungated:
        name = "ungated"

    assert convention_markers((*EXTRACTORS, Ungated())) is None  # type: ignore[arg-type]
    assert convention_markers((*EXTRACTORS[:-1],)) is not None
    assert isinstance(EXTRACTORS[-1].gate, Gate)


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_span_any_convention_recognises_carries_a_marker(capture: Path) -> None:
    markers = _markers()
    recognised = 0
    for span in read_trace_file(capture):
        for extractor in EXTRACTORS:
            try:
                role = extractor.classify(span)
            except Exception:
                continue
            if role is not None:
                recognised += 1
                assert markers.marks(span.scope, span.attributes), (extractor.name, span.name, span.scope)
    assert recognised


@pytest.mark.parametrize("case", sorted(SYNTHETIC))
def test_every_synthetic_span_a_convention_recognises_carries_a_marker(case: str) -> None:
    markers = _markers()
    for span in SYNTHETIC[case]:
        if any(extractor.classify(span) is not None for extractor in EXTRACTORS):
            assert markers.marks(span.scope, span.attributes), span.name


def _one_request_per_span(request: ExportTraceServiceRequest) -> list[ExportTraceServiceRequest]:
    """Each span alone in a request under its resource and scope, in the order the spans ended."""
    singles = []
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                single = ExportTraceServiceRequest()
                resource = single.resource_spans.add(schema_url=rs.schema_url)
                resource.resource.CopyFrom(rs.resource)
                scope = resource.scope_spans.add(schema_url=ss.schema_url)
                scope.scope.CopyFrom(ss.scope)
                scope.spans.add().CopyFrom(span)
                singles.append(single)
    return sorted(singles, key=lambda r: r.resource_spans[0].scope_spans[0].spans[0].end_time_unix_nano)


def _kept(prefilter: WirePrefilter, requests: list[ExportTraceServiceRequest]) -> list[SpanRecord]:
    kept: list[SpanRecord] = []
    for request in requests:
        plan = prefilter.agent_spans(request, request.SerializeToString())
        records = spans_from_request(request)
        if not isinstance(plan, PlainRequest):
            kept += [record for record, of_agent in zip(records, plan[0], strict=True) if of_agent]
    return kept


@pytest.mark.parametrize("per_span", [False, True], ids=["one-request", "request-per-span"])
@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_wire_prefilter_changes_no_run_of_any_capture(capture: Path, per_span: bool) -> None:
    request = ExportTraceServiceRequest.FromString(capture.read_bytes())
    everything = _with_events(capture, read_trace_file(capture))
    requests = _one_request_per_span(request) if per_span else [request]
    kept = _with_events(capture, _kept(WirePrefilter(_markers(), 1000), requests))
    runs = rebuild_runs(everything)
    assert runs
    assert rebuild_runs(kept) == runs


def test_a_plain_request_is_left_whole_until_its_trace_shows_a_marker() -> None:
    """A plain span before its trace's first marker is forwarded unread; the root that ends last is read."""
    capture = TESTDATA / "traces" / "openai-agents" / "b_sequential.pb"
    request = ExportTraceServiceRequest.FromString(capture.read_bytes())
    prefilter = WirePrefilter(_markers(), 1000)
    plain = ExportTraceServiceRequest()
    scope = plain.resource_spans.add().scope_spans.add()
    scope.scope.name = "opentelemetry.instrumentation.fastapi"
    root = scope.spans.add(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="POST /chat")
    root.attributes.add(key="http.request.method").value.string_value = "POST"
    whole = prefilter.agent_spans(plain, plain.SerializeToString())  # before any agent span: held whole
    assert whole == PlainRequest({b"\x01" * 16: 1}, {b"\x01" * 16}, 1, 2)
    plan = prefilter.agent_spans(request, request.SerializeToString())
    assert not isinstance(plan, PlainRequest)
    assert all(plan[0])
    root.trace_id = request.resource_spans[0].scope_spans[0].spans[0].trace_id  # the agent trace's root, ended last
    plan = prefilter.agent_spans(plain, plain.SerializeToString())
    assert not isinstance(plan, PlainRequest)
    assert plan[0] == [True]


def test_a_marker_quoted_inside_another_value_is_no_marker() -> None:
    """Only a span's attribute key or its scope's name marks it: the compiled walk reads them exactly, and a request
    that quotes a marker in a value is held whole as plain; without it, the search of the bytes takes the quote for
    one, which costs a read of the span, never a score."""
    prefilter = WirePrefilter(_markers(), 10)
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    quoting = spans.add(trace_id=b"\x03" * 16, span_id=b"\x04" * 8, name="GET /docs")
    quoting.attributes.add(key="note").value.string_value = "gen_ai.operation.name"
    spans.add(trace_id=b"\x05" * 16, span_id=b"\x06" * 8, name="GET /health")
    plan = prefilter.agent_spans(request, request.SerializeToString())
    if span_table is not None:
        assert plan == PlainRequest({b"\x03" * 16: 1, b"\x05" * 16: 1}, {b"\x03" * 16, b"\x05" * 16}, 2, 2)
    else:
        assert not isinstance(plan, PlainRequest)
        assert plan.agent == [True, False]


def test_agent_traces_forget_the_oldest_past_capacity() -> None:
    traces: AgentTraces[int] = AgentTraces(2)
    traces.add_all([1, 2])
    traces.add(3)
    assert (1 in traces, 2 in traces, 3 in traces, len(traces)) == (False, True, True, 2)


class _Collecting(SpanProcessor):
    def __init__(self) -> None:
        self.spans: list[tuple[str, str]] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append((span.name, threading.current_thread().name))

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def _play(processor: ToolscoreSpanProcessor) -> None:
    """A plain request, then an agent's request whose database span ends before its first agent span."""
    provider = TracerProvider()
    provider.add_span_processor(processor)
    http, db = provider.get_tracer("opentelemetry.instrumentation.fastapi"), provider.get_tracer("psycopg")
    agent = provider.get_tracer("agent-app")
    health = http.start_span("GET /health", attributes={"http.request.method": "GET"})
    health.end()
    root = http.start_span("POST /chat", attributes={"http.request.method": "POST"})
    run = agent.start_span("invoke_agent travel", set_span_in_context(root), attributes=run_attrs("travel"))
    tool = agent.start_span("execute_tool a", set_span_in_context(run), attributes=tool_attrs("a", "c1"))
    db.start_span("SELECT", set_span_in_context(tool), attributes={"db.system.name": "postgresql"}).end()
    for span in (tool, run, root):
        span.end()
    assert processor.force_flush(5_000)
    provider.shutdown()


def test_in_process_a_plain_span_goes_on_from_the_thread_that_ends_it_and_runs_score_as_without_the_filter() -> None:
    results = {}
    for prefilter in (True, False):
        collecting, telemetry = _Collecting(), Recording()
        with registry_with(TRAVEL) as registry:
            config = PipelineConfig(settle_ms=5, prefilter=prefilter)
            _play(ToolscoreSpanProcessor(registry, collecting, config, telemetry))
        results[prefilter] = (collecting.spans, telemetry)
    (spans, telemetry), (unfiltered, plain_telemetry) = results[True], results[False]
    here = threading.current_thread().name
    assert ("GET /health", here) in spans  # unread, on the app thread
    assert ("SELECT", here) in spans  # it ended before the trace's first agent span
    assert ("GET /health", here) not in unfiltered
    assert sorted(name for name, _ in spans) == sorted(name for name, _ in unfiltered)
    assert telemetry.outcomes == plain_telemetry.outcomes == {"matched": 1}
    assert telemetry.counts["received"] == telemetry.counts["passed"] == 5  # the skipped ones counted too


def test_a_request_is_read_from_its_bytes_only_when_the_walk_can_say_and_every_id_is_usable() -> None:
    """`request_plan` (the receivers' unparsed path): held whole when no span shows a marker and none is of a trace
    known to be an agent's; the plan of its agent traces' spans when one is; anything else (an unusable id, too
    many spans) goes the parsed way (`agent_spans`), which reads the same traces."""
    prefilter = WirePrefilter(_markers(), 10)
    plain = ExportTraceServiceRequest()
    spans = plain.resource_spans.add().scope_spans.add().spans
    root = spans.add(trace_id=b"\x07" * 16, span_id=b"\x08" * 8, name="GET /orders")
    spans.add(trace_id=b"\x07" * 16, span_id=b"\x09" * 8, parent_span_id=root.span_id, name="SELECT orders")
    data = plain.SerializeToString()
    expected = PlainRequest({b"\x07" * 16: 2}, {b"\x07" * 16}, 2, 2)
    compiled = request_index is not None  # without it (TOOLSCORE_PURE_PYTHON, no C compiler) every request is parsed
    assert prefilter.request_plan(data, 100) == (expected if compiled else None)
    assert prefilter.request_plan(data, 1) is None  # more spans than the receiver takes: its refusal
    assert prefilter.agent_spans(plain, data) == expected
    marked = ExportTraceServiceRequest()
    marked.CopyFrom(plain)
    marked.resource_spans[0].scope_spans[0].spans[1].attributes.add(key="gen_ai.operation.name")
    walked = prefilter.request_plan(marked.SerializeToString(), 100)
    assert walked.agent == [True, True] if isinstance(walked, SpanPlan) else not compiled and walked is None
    zero = ExportTraceServiceRequest()
    zero.CopyFrom(marked)
    zero.resource_spans[0].scope_spans[0].spans[0].trace_id = bytes(16)
    assert prefilter.request_plan(zero.SerializeToString(), 100) is None  # a zero trace id: the pipeline reports it
    other = WirePrefilter(_markers(), 10)
    other.traces.add(b"\x07" * 16)  # the trace showed a marker in another request
    known = other.request_plan(data, 100)
    assert known.agent == [True, True] if isinstance(known, SpanPlan) else not compiled and known is None
    plan = other.agent_spans(plain, data)
    assert not isinstance(plan, PlainRequest)
    assert plan.agent == [True, True]
