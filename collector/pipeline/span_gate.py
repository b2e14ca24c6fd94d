"""The span processor's compiled pass-through for plain spans (`_gate.c`), when the install built it.

`ToolscoreSpanProcessor.on_end` runs on the application's thread for every span it ends, and most of those
spans are no agent's: for them the pre-filter's test (`markers`) is all toolscore does. In Python that test
still cost a frame and a dozen attribute reads, ~2.5 µs a span beside a service's ~40 µs to make one. The
gate makes the same test in C and passes a plain span on itself; every other span (one of an agent trace,
one showing a marker, a span of another type, anything it is not sure of) goes to the processor's Python
`on_end`, which decides it from the start. So the gate changes which code decides, never the decision:
`tests/test_span_gate.py` holds the two to the same answers.

The same module decodes, on the pipeline's worker, each span that does reach it (`span_decoder`): the SDK
span's `SpanRecord`, built in C for the common shape and by `sources.sdk.record_from_readable` otherwise
(`tests/test_span_decoder.py` holds the two to the same records).

`span_gate(...)` and `span_decoder()` are None where the module was not built (no C compiler at install:
`setup.py` builds it as optional) or `TOOLSCORE_PURE_PYTHON` is set, as for the wire decoder (`sources._accel`);
the Python `on_end` then decides every span, and `record_from_readable` decodes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, SpanKind, StatusCode

from toolscore.collector.pipeline.markers import Markers
from toolscore.collector.sources.sdk import record_from_readable, resource_attributes
from toolscore.collector.spans import SpanRecord
from toolscore.scorers._accel import compiled_module

__all__ = ["span_decoder", "span_gate"]


def span_decoder(environ: Mapping[str, str] | None = None) -> Callable[[ReadableSpan], SpanRecord | None] | None:
    """`record_from_readable`, compiled for the common shape of an SDK-ended span; None when unavailable."""
    module = compiled_module("toolscore.collector.pipeline._gate", environ)
    if module is None:
        return None
    kinds = tuple(sorted(SpanKind, key=lambda kind: kind.value))  # OTLP's number is the index + 1
    statuses = tuple(sorted(StatusCode, key=lambda code: code.value))
    module.configure_decoder(
        ReadableSpan,
        SpanContext,
        BoundedAttributes,
        SpanRecord,
        kinds,
        statuses,
        resource_attributes,
        record_from_readable,
    )
    decoder: Callable[[ReadableSpan], SpanRecord | None] = module.decode_readable
    return decoder


def span_gate(
    *,
    agent_ids: Mapping[int, None],
    markers: Markers,
    stop_scopes: frozenset[str],
    passed: Callable[[ReadableSpan], object],
    counted: Iterator[object],
    slow: Callable[[ReadableSpan], None],
    failed: Callable[[BaseException], object],
    environ: Mapping[str, str] | None = None,
) -> Callable[[ReadableSpan], None] | None:
    """An `on_end` for a processor, or None when the compiled gate is unavailable.

    A span of no trace in `agent_ids` (read live: the dict `AgentTraces.ids` gives), of a scope neither among
    the markers' nor in `stop_scopes`, with no marker key among the SDK's attributes is counted (`counted`, an
    iterator, is advanced) and `passed(span)`; any other span, or a call of another shape, goes to `slow`. An
    `Exception` from `counted` or `passed` goes to `failed`, never to the caller.
    """
    module = compiled_module("toolscore.collector.pipeline._gate", environ)
    if module is None or not isinstance(agent_ids, dict):
        return None
    gate: Callable[[ReadableSpan], None] = module.SpanGate(
        ReadableSpan,
        BoundedAttributes,
        agent_ids,
        markers.scopes | stop_scopes,
        markers.keys,
        passed,
        counted,
        slow,
        failed,
    )
    return gate
