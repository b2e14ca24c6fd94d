"""The compiled span decoder (`pipeline.span_gate.span_decoder`) gives exactly `record_from_readable`'s records,
and the compiled size of kept attributes (`_gate.attributes_bytes`) `group.python_attributes_bytes`' count.

`record_from_readable` is the reference. The decoder builds the record itself for the common shape of an ended
SDK span and hands every other span to it; either way the record must be the same, or the same exception
raised. Spans: every capture's, as ReadableSpans with their parents, kinds, statuses, times, resources and
events; the SDK's own from a live provider (the in-process benchmark's agent runs and the mixed load); and odd
shapes. The decoder is asked for with an empty environment, so this runs under `make test-oldest` too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode

from tests.accel_checks import bytes_kept, outcome
from tests.bench.bench_inprocess import RESOURCE
from tests.bench.bench_inprocess import _play as play_agent_runs
from tests.bench.mixed import generated_spans
from tests.test_prefilter import CAPTURES
from tests.test_span_gate import _sdk_values
from toolscore.collector.pipeline import ToolscoreSpanProcessor, _gate
from toolscore.collector.pipeline.group import python_attributes_bytes, record_bytes
from toolscore.collector.pipeline.span_gate import span_decoder
from toolscore.collector.registry import Registry
from toolscore.collector.registry.stores import MemoryStore
from toolscore.collector.sources import read_trace_file
from toolscore.collector.sources.sdk import record_from_readable
from toolscore.collector.spans import SpanRecord
from toolscore.scorers._accel import PURE_PYTHON_ENV

_decoder = span_decoder({})
_KINDS = {kind.value + 1: kind for kind in SpanKind}
_CODES = {code.value: code for code in StatusCode}


def _decode() -> Callable[[Any], SpanRecord | None]:
    assert _decoder is not None, "the install did not build collector/pipeline/_gate.c"
    return _decoder


def _same(spans: list[Any]) -> None:
    for span in spans:
        assert outcome(_decode(), span) == outcome(record_from_readable, span), span


def _readable(record: SpanRecord, resource: Resource) -> ReadableSpan:
    """The span as the SDK ends it: its context, parent, kind, status, times, frozen attributes and events."""
    context = SpanContext(int(record.trace_id, 16), int(record.span_id, 16), is_remote=False)
    parent = SpanContext(int(record.trace_id, 16), int(record.parent_id, 16), False) if record.parent_id else None
    events = [
        Event(event.name, BoundedAttributes(attributes=_sdk_values(event.attributes), immutable=True), event.time_ns)
        for event in record.events
    ]
    return ReadableSpan(
        record.name,
        context,
        parent=parent,
        resource=resource,
        attributes=BoundedAttributes(attributes=_sdk_values(record.attributes), immutable=True),
        events=events,
        kind=_KINDS.get(record.kind, SpanKind.INTERNAL),
        status=Status(_CODES[record.status_code], record.status_message or None),
        start_time=record.start_ns,
        end_time=record.end_ns,
        instrumentation_scope=InstrumentationScope(record.scope),
    )


def _live_spans() -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=RESOURCE)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    play_agent_runs(provider, 40)
    provider.shutdown()
    mixed, _ = generated_spans(0.1, 1_000)
    return [*exporter.get_finished_spans(), *mixed]


def test_the_test_install_builds_the_decoder() -> None:
    assert _decoder is not None


def test_the_environment_variable_turns_it_off() -> None:
    assert span_decoder({PURE_PYTHON_ENV: "1"}) is None


def test_it_gives_the_python_records_of_every_capture() -> None:
    resource = Resource.create({"service.name": "captured"})
    spans = [_readable(record, resource) for capture in CAPTURES for record in read_trace_file(capture)]
    assert len(spans) > 500
    _same(spans)


def test_it_gives_the_python_records_of_live_sdk_spans() -> None:
    spans = _live_spans()
    assert sum(1 for span in spans if span.events) > 0  # some go to the Python path
    _same(spans)


def _odd_spans() -> list[Any]:
    ctx = SpanContext(0xABC, 0xDEF, is_remote=False)
    frozen = BoundedAttributes(attributes={"a": 1, "seq": ("x", "y"), "n": (1, 2)}, immutable=True)
    scope = InstrumentationScope("s")

    class OwnSpan(ReadableSpan):
        pass

    class OwnContext(SpanContext):
        pass

    def span(name: str, context: Any = ctx, **fields: Any) -> ReadableSpan:
        fields.setdefault("attributes", frozen)
        fields.setdefault("instrumentation_scope", scope)
        return ReadableSpan(name, context, **fields)

    odd: list[Any] = [
        span("plain"),
        span("tuples to lists"),
        span("no scope", instrumentation_scope=None),
        span("no attributes", attributes=None),
        span("dict attributes", attributes={"a": (1, 2)}),
        span("mutable", attributes=BoundedAttributes(attributes={"a": 1}, immutable=False)),
        span("no context", context=None),
        span("zero trace id", context=SpanContext(0, 0xDEF, is_remote=False)),
        span("zero span id", context=SpanContext(0xABC, 0, is_remote=False)),
        span("trace id past 128 bits", context=SpanContext(2**130 + 5, 0xDEF, is_remote=False)),
        span("span id past 64 bits", context=SpanContext(0xABC, 2**70, is_remote=False)),
        span("negative id", context=SpanContext(-5, 0xDEF, is_remote=False)),
        span("largest ids", context=SpanContext(2**128 - 1, 2**64 - 1, is_remote=False)),
        span("parent", parent=SpanContext(0xABC, 0x123, is_remote=True)),
        span("parent of another type", parent=OwnContext(0xABC, 0x123, is_remote=True)),
        span("context of another type", context=OwnContext(0xABC, 0xDEF, is_remote=False)),
        span("no times", start_time=None, end_time=None),
        span("times", start_time=5, end_time=9),
        span("error", status=Status(StatusCode.ERROR, "it broke")),
        span("ok", status=Status(StatusCode.OK)),
        span("every kind", kind=SpanKind.CONSUMER),
        span("events", events=[Event("e", {"k": "v"}, 7)]),
        span("no resource", resource=None),
        span("resource", resource=Resource.create({"service.name": "other"})),
        OwnSpan("subclass", ctx, attributes=frozen),
        "not a span at all",
        None,
    ]
    for kind in SpanKind:
        odd.append(span(f"kind {kind.name}", kind=kind))
    return odd


def test_it_gives_the_python_record_or_exception_of_odd_shapes() -> None:
    _same(_odd_spans())


def test_attribute_sequences_become_lists_in_a_copy() -> None:
    span = _odd_spans()[1]
    record = _decode()(span)
    assert record is not None
    assert record.attributes == {"a": 1, "seq": ["x", "y"], "n": [1, 2]}
    assert span._attributes._dict["seq"] == ("x", "y")  # the span's own dict is left as it was
    assert record.attributes is not span._attributes._dict


def test_the_processor_decodes_with_it_unless_pure_python_is_asked_for() -> None:
    registry = Registry(MemoryStore())
    processor = ToolscoreSpanProcessor(registry, SimpleSpanProcessor(InMemorySpanExporter()))
    try:
        expected = record_from_readable if span_decoder() is None else _decoder
        assert processor.engine.decode is expected
    finally:
        processor.shutdown()
        registry.close()


def test_configure_decoder_takes_eight_arguments() -> None:
    with pytest.raises(TypeError, match="configure_decoder"):
        _gate.configure_decoder(1, 2, 3)  # type: ignore[call-arg]


def test_the_decoder_keeps_no_memory_on_any_path() -> None:
    spans = _live_spans()[:200] + _odd_spans()
    deep: dict[str, Any] = {}
    for _ in range(10_000):
        deep = {"k": deep}
    sized = [{"list": ["ab", {"x": "y"}, 1]}, {7: "int key"}, deep]

    def work() -> None:
        for span in spans:
            outcome(_decode(), span)
        for attributes in sized:
            outcome(_compiled_bytes, attributes)

    grown = bytes_kept(work, 30)
    assert grown < 20_000, grown  # one object kept per span would be ~200 KB


# --- the bytes kept attributes count for --------------------------------------------------------------------


def _compiled_bytes(attributes: Any) -> int:
    return int(_gate.attributes_bytes(90, 16, python_attributes_bytes, attributes))


def _same_bytes(attributes: Any) -> None:
    assert outcome(_compiled_bytes, attributes) == outcome(python_attributes_bytes, attributes), attributes


def test_attributes_bytes_count_as_python_counts_every_capture() -> None:
    records = [record for capture in CAPTURES for record in read_trace_file(capture)]
    for record in records:
        _same_bytes(record.attributes)
        for event in record.events:
            _same_bytes(event.attributes)
    assert record_bytes(records[0]) > 700  # the per-span cost and its text, through whichever walk is installed


class _Key(str):
    def __len__(self) -> int:
        return 1000


class _DictLike(dict[str, Any]):
    """A dict subclass: not the exact dict the walk reads, so the Python walk counts it."""


def test_attributes_bytes_count_as_python_counts_odd_values() -> None:
    deep: dict[str, Any] = {}
    for _ in range(100_000):
        deep = {"k": deep}
    for attributes in (
        {},
        {"a": "x" * 10, "é": "ü", "n": 1, "f": 1.5, "b": True, "none": None, "t": ("x", "y")},
        {"list": ["ab", 1, {"name": "tool", "args": {"q": "v"}}, ["nested"], None]},
        {"body": {"tool_calls": [{"id": "c1", "function": {"name": "f"}}]}},
        {_Key("k"): "v"},
        {7: "int key"},  # len() of an int raises TypeError, as Python's walk does
        deep,  # RecursionError, as Python's walk raises
        _DictLike({"a": "b"}),
    ):
        _same_bytes(attributes)
