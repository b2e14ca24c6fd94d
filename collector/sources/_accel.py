"""The compiled OTLP wire code (`_wire.c`), when the install built it and the environment allows it.

`decode_spans(data)` gives the spans of an OTLP protobuf trace export as `SpanRecord`s, the same ones
`otlp_proto.spans_from_request` builds, or None where that path must decide (bad bytes, skipped spans, an
empty or other signal's export). `decode_span_entry(entry, resource, scope)` does the same for one framed
span entry of a request (`serve`'s carriers), as `otlp_proto.span_record` would. `plain_index(data)` gives
the spans per trace id, the trace ids of the roots, and the span and block counts of a request, validated as
the decoder validates (`serve` holds a request without an agent's span from its bytes alone), or None where it
cannot say. `span_table(data)` gives the offsets of each framed span entry and its trace id, for a parsed
request; `span_table(data, keys, scopes)` also the indices of the spans that show one of the pre-filter's
markers (tuples of bytes) and a flags byte per span (its root and ids bits, `serve._prefilter.SpanPlan`);
`checked_table(data, keys, scopes)` gives that table and the resource and scope block count of bytes not parsed
yet, validated as `plain_index` validates them, or None; `request_index(data, keys, scopes[, limit])`, in one such
walk, `(False, plain_index's answer)` when no span shows a marker, else `(True, checked_table's answer)` (None past
`limit` spans or blocks).
`score_record(...)` goes the other way: it encodes one evaluation log record (`telemetry.direct_logs`'
`encode_score_record`). All seven are None when the extension is missing (no C compiler at install: `setup.py`
builds it as optional) or `TOOLSCORE_PURE_PYTHON` is set to anything but empty or 0, which runs the pure-Python
path alone (`make test-oldest` does, so the whole unit suite runs on it too).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from toolscore.collector.spans import SpanEvent, SpanRecord
from toolscore.scorers._accel import compiled_module

__all__ = [
    "checked_table",
    "decode_span_entry",
    "decode_spans",
    "load",
    "plain_index",
    "request_index",
    "score_record",
    "span_table",
]


def load(environ: Mapping[str, str] | None = None) -> ModuleType | None:
    """The compiled decoder's module, or None when it is not built or `TOOLSCORE_PURE_PYTHON` turns it off."""
    wire = compiled_module("toolscore.collector.sources._wire", environ)
    if wire is not None:
        wire.configure(SpanRecord, SpanEvent)
    return wire


_module = load()
decode_spans: Callable[[bytes], list[SpanRecord] | None] | None = None
decode_span_entry: Callable[[bytes | memoryview, dict[str, Any], str], SpanRecord | None] | None = None
plain_index: Callable[[bytes], tuple[dict[bytes, int], set[bytes], int, int] | None] | None = None
span_table: Callable[..., tuple[Any, ...] | None] | None = None
checked_table: Callable[[bytes, tuple[bytes, ...], tuple[bytes, ...]], tuple[Any, ...] | None] | None = None
request_index: Callable[..., tuple[bool, tuple[Any, ...]] | None] | None = None
score_record: Callable[[int, int, bytes, float, str, str, bytes, bytes], bytes | None] | None = None
if _module is not None:
    decode_spans, decode_span_entry = _module.decode_spans, _module.decode_span_entry
    plain_index, span_table, checked_table = _module.plain_index, _module.span_table, _module.checked_table
    request_index = _module.request_index
    score_record = _module.score_record
