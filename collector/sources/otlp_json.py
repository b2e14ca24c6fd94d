"""The OTLP/JSON trace reader (`ExportTraceServiceRequest` / `TracesData`), for files and request bodies alike.

`read_trace_json` walks a document's resource, scope and span blocks once, checks every span's ids
(`otlp_json_ids`: hex, or the protobuf JSON mapping's base64) and hands each block to a `TraceJsonSink`.
Two sinks: this module's, which turns spans into `SpanRecord`s directly (trace files, `extract` and
`eval`), and the receivers', which builds the protobuf request they forward (`serve.otlp_json_request`).
So a document is accepted, refused and partly skipped by the same rules whichever way it comes in: a
malformed document (not JSON, a field of the wrong type) raises `SpanDecodeError` naming the path of
the bad field (`resourceSpans[0].scopeSpans[1].spans[3].kind`); a span whose ids cannot identify it is
skipped and handed to the sink's `reject`, with its reason, place and name, and the others are read.

JSON Lines, one request per line, is what the Collector's file exporter writes with `format: json`. A
file's documents (and each JSON Lines line) must be trace exports (`trace_export`); a request body need
not, since OTLP/JSON receivers ignore fields they do not know.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from toolscore.collector.sources.errors import DecodeStats, SpanDecodeError, echo
from toolscore.collector.sources.otlp_json_ids import HEX, IdEncoding, id_problem, json_id
from toolscore.collector.sources.otlp_json_values import (
    json_attributes,
    json_field,
    json_int,
    json_list,
    json_loads,
    json_obj,
)
from toolscore.collector.spans import SpanEvent, SpanRecord

__all__ = [
    "NOT_A_TRACE_EXPORT",
    "SPAN_BLOCKS",
    "SpanIds",
    "TraceJsonSink",
    "read_trace_json",
    "span_ids",
    "spans_from_json",
    "spans_from_json_bytes",
    "spans_from_json_lines",
    "trace_export",
]

NOT_A_TRACE_EXPORT = "not an OTLP trace export"
"""How `trace_export`'s errors begin, so a caller can tell them from a broken export."""

SPAN_BLOCKS = (("resourceSpans", "resource_spans"), ("scopeSpans", "scope_spans"), ("spans", "spans"))
"""The (camel, snake) names of a trace export's resource blocks, scope blocks and spans (`json_counts`)."""

_ZERO32, _ZERO16 = "0" * 32, "0" * 16
_HEX32 = re.compile(r"[0-9a-fA-F]{32}").fullmatch
_HEX16 = re.compile(r"[0-9a-fA-F]{16}").fullmatch
_KINDS = {
    f"SPAN_KIND_{n}": i for i, n in enumerate(("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"))
}
_STATUS_CODES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_OTHER_SIGNALS = {
    "resourceMetrics": "metrics",
    "resource_metrics": "metrics",
    "resourceLogs": "logs",
    "resource_logs": "logs",
    "resourceProfiles": "profiles",
    "resource_profiles": "profiles",
}


class SpanIds(NamedTuple):
    """A span's checked ids, as lowercase hex; `parent` as written ("" for none, zeros kept), `encoding` that
    of its trace id."""

    trace: str
    span: str
    parent: str
    encoding: IdEncoding


class TraceJsonSink(Protocol):
    """What `read_trace_json` hands each block to, in document order. Raise `SpanDecodeError` (with the
    `path` as its field) for a block that cannot be read: the whole document is refused."""

    def resource(self, block: Mapping[str, Any], path: str) -> None:
        """A `ResourceSpans` begins; its scope blocks follow."""

    def scope(self, block: Mapping[str, Any], path: str) -> None:
        """A `ScopeSpans` of the last resource begins; its spans follow."""

    def span(self, span: Mapping[str, Any], ids: SpanIds, path: str) -> None:
        """A span of the last scope, with usable ids."""

    def reject(self, reason: str, detail: str) -> None:
        """A span left out: `reason` is `bad_trace_id`, `bad_span_id` or `bad_parent_span_id`; `detail` its
        place, name and what is wrong (`resourceSpans[0].scopeSpans[0].spans[1] 'x': spanId 'ab' is not ...`)."""


def span_ids(span: Mapping[str, Any]) -> SpanIds | tuple[str, str]:
    """The span's ids, or (reason, why) when they cannot identify it: not hex or base64 of the id's size, or
    all zeros. An all-zero parent is a root, as some SDKs send it."""
    trace = json_field(span, "traceId", "trace_id")
    span_id = json_field(span, "spanId", "span_id")
    parent = json_field(span, "parentSpanId", "parent_span_id")
    if (  # the common case first: the spec's hex, read at the cost of three regular expressions
        type(trace) is str
        and type(span_id) is str
        and _HEX32(trace)
        and _HEX16(span_id)
        and (not parent or (type(parent) is str and _HEX16(parent)))
        and trace != _ZERO32
        and span_id != _ZERO16
    ):
        return SpanIds(trace.lower(), span_id.lower(), parent.lower() if parent else "", HEX)
    return _any_span_ids(trace, span_id, parent)


def _any_span_ids(raw_trace: Any, raw_span: Any, raw_parent: Any) -> SpanIds | tuple[str, str]:
    trace = json_id(raw_trace, 16)
    if trace is None:
        return "bad_trace_id", id_problem("traceId", echo(raw_trace))
    if trace[0] == _ZERO32:
        return "bad_trace_id", f"traceId {echo(raw_trace)} is all zeros, which is not a valid id"
    span_id = json_id(raw_span, 8)
    if span_id is None:
        return "bad_span_id", id_problem("spanId", echo(raw_span))
    if span_id[0] == _ZERO16:
        return "bad_span_id", f"spanId {echo(raw_span)} is all zeros, which is not a valid id"
    parent = json_id(raw_parent, 8) if raw_parent else ("", trace[1])
    if parent is None:
        return "bad_parent_span_id", id_problem("parentSpanId", echo(raw_parent)) + ", or empty"
    return SpanIds(trace[0], span_id[0], parent[0], trace[1])


def _named(path: str, name: Any) -> str:
    """A span's place, and its name when it has one (a span without one is not called `None`)."""
    return path if name is None else f"{path} {echo(name)}"


def read_trace_json(document: Any, sink: TraceJsonSink) -> None:
    """Walk an OTLP/JSON trace export (parsed), handing every block and span to `sink` in document order."""
    document = json_obj(document, "(document)")
    resources = json_list(json_field(document, "resourceSpans", "resource_spans"), "resourceSpans")
    for r, item in enumerate(resources):
        path = f"resourceSpans[{r}]"
        block = json_obj(item, path)
        sink.resource(block, path)
        for s, scope_item in enumerate(json_list(json_field(block, "scopeSpans", "scope_spans"), f"{path}.scopeSpans")):
            scope_path = f"{path}.scopeSpans[{s}]"
            scope = json_obj(scope_item, scope_path)
            sink.scope(scope, scope_path)
            for i, span_item in enumerate(json_list(scope.get("spans"), f"{scope_path}.spans")):
                span_path = f"{scope_path}.spans[{i}]"
                span = json_obj(span_item, span_path)
                ids = span_ids(span)
                if isinstance(ids, SpanIds):
                    sink.span(span, ids, span_path)
                else:
                    sink.reject(ids[0], f"{_named(span_path, span.get('name'))}: {ids[1]}")


class _Records:
    """The sink that reads spans into `SpanRecord`s, counting skipped spans and id encodings in `stats`."""

    def __init__(self, stats: DecodeStats | None) -> None:
        self.out: list[SpanRecord] = []
        self.stats = stats
        self._resource: dict[str, Any] = {}
        self._scope = ""

    def resource(self, block: Mapping[str, Any], path: str) -> None:
        attributes = json_obj(block.get("resource"), f"{path}.resource").get("attributes")
        self._resource = json_attributes(attributes, f"{path}.resource.attributes", depth=3)

    def scope(self, block: Mapping[str, Any], path: str) -> None:
        self._scope = str(json_obj(block.get("scope"), f"{path}.scope").get("name") or "")

    def span(self, span: Mapping[str, Any], ids: SpanIds, path: str) -> None:
        status = json_obj(span.get("status"), f"{path}.status")
        events = tuple(
            _event(json_obj(event, f"{path}.events[{i}]"), f"{path}.events[{i}]")
            for i, event in enumerate(json_list(span.get("events"), f"{path}.events"))
        )
        self.out.append(
            SpanRecord(
                ids.trace,
                ids.span,
                ids.parent if ids.parent and ids.parent != _ZERO16 else None,
                str(span.get("name", "")),
                json_int(span.get("kind"), f"{path}.kind", _KINDS),
                json_int(json_field(span, "startTimeUnixNano", "start_time_unix_nano"), f"{path}.startTimeUnixNano"),
                json_int(json_field(span, "endTimeUnixNano", "end_time_unix_nano"), f"{path}.endTimeUnixNano"),
                json_int(status.get("code"), f"{path}.status.code", _STATUS_CODES),
                str(status.get("message") or ""),
                json_attributes(span.get("attributes"), f"{path}.attributes"),
                events,
                self._resource,
                self._scope,
            )
        )
        if self.stats is not None:
            self.stats.read_ids(ids.encoding)

    def reject(self, reason: str, detail: str) -> None:
        if self.stats is not None:
            self.stats.skip(reason, detail)


def _event(event: Mapping[str, Any], path: str) -> SpanEvent:
    return SpanEvent(
        str(event.get("name") or ""),
        json_int(json_field(event, "timeUnixNano", "time_unix_nano"), f"{path}.timeUnixNano"),
        json_attributes(event.get("attributes"), f"{path}.attributes", depth=4),
    )


def trace_export(obj: Any) -> Mapping[str, Any]:
    """`obj` when it is an OTLP trace export: an object with `resourceSpans`, or `{}` (an empty export).

    For documents read from files. Any other JSON object (a ground-truth file, a config, another
    signal's export) would otherwise decode as a trace of no spans, and an evaluation of it pass.
    """
    if not isinstance(obj, Mapping):
        raise SpanDecodeError(f"{NOT_A_TRACE_EXPORT}: expected a JSON object, got {type(obj).__name__}")
    if not obj or "resourceSpans" in obj or "resource_spans" in obj:
        return obj
    signal = next((name for key, name in _OTHER_SIGNALS.items() if key in obj), None)
    keys = sorted(map(str, obj))
    shown = ", ".join(echo(key) for key in keys[:4]) + (f", … ({len(keys)} keys)" if len(keys) > 4 else "")
    what = f"an OTLP {signal} export" if signal else f"a JSON object with the keys {shown}"
    raise SpanDecodeError(
        f'{NOT_A_TRACE_EXPORT}: {what}, without resourceSpans (an empty export is {{}} or {{"resourceSpans": []}})'
    )


def spans_from_json(obj: Mapping[str, Any], stats: DecodeStats | None = None) -> list[SpanRecord]:
    """Every span of a decoded OTLP/JSON request, in document order; bad ids are skipped and counted."""
    if not isinstance(obj, Mapping):
        raise SpanDecodeError(f"expected an OTLP/JSON object with resourceSpans, got {type(obj).__name__}")
    sink = _Records(stats)
    read_trace_json(obj, sink)
    if stats is not None:
        stats.spans += len(sink.out)
    return sink.out


def spans_from_json_bytes(data: bytes | str, stats: DecodeStats | None = None) -> list[SpanRecord]:
    """Decode an OTLP/HTTP `application/json` body (or one `.json` document) into span records."""
    return spans_from_json(json_loads(data), stats)


def spans_from_json_lines(
    data: bytes | str,
    stats: DecodeStats | None = None,
    errors: list[SpanDecodeError] | None = None,
    read: Callable[[Any], list[SpanRecord]] | None = None,
) -> list[SpanRecord]:
    """One OTLP/JSON request per line, as the Collector's file exporter writes them.

    A bad line (one that is not a `trace_export` too) raises `SpanDecodeError` with its 1-based `line`,
    or, when `errors` is given, is appended there and the other lines are still read. `read` turns one
    line's document into spans (default: `spans_from_json` of a `trace_export`).
    """
    out: list[SpanRecord] = []
    lines: Sequence[bytes | str] = data.split(b"\n") if isinstance(data, bytes) else data.split("\n")
    for line_no, line in enumerate(lines, start=1):  # bytes are decoded line by line: bad UTF-8 costs one line
        if not line.strip():
            continue
        try:
            document = json_loads(line)
            out.extend(read(document) if read is not None else spans_from_json(trace_export(document), stats))
        except SpanDecodeError as exc:
            error = SpanDecodeError(exc.message, line=line_no)
            if errors is None:
                raise error from None
            errors.append(error)
    return out
