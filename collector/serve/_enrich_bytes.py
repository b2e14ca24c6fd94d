"""A scored run span enriched by appending bytes to its received ones, rather than through its message.

Protobuf merges concatenated messages, appending to repeated fields: a `Span`'s bytes followed by more
`attributes` (field 9) and `events` (field 11) entries parse as the span with those added after its own,
which is what `regroup.enrich_span` does to the message. Writing the entries here costs a fraction of
adding them to the message one `KeyValue` at a time and serializing it again (the protobuf runtime
builds a wrapper object per field touched): enriching and encoding a run span was a tenth of serve's
worker time on the benchmark's load. The key-value entries that recur from run to run (a scorer's
score key with a value of 1.0, a label, an expectation's name) are built once (`_cached_entry`).

Values are written as `set_any_value` writes them, so both paths give equal messages (tested):
str, bool, int (int64), float, and lists or tuples of those as arrays; None leaves the value unset,
an empty list too; anything else is its `str`. A span whose bytes hold `toolscore.` anywhere (a key of
ours from a toolscore upstream, which must be replaced rather than repeated) is left to the message path.
"""

from __future__ import annotations

import functools
import struct
from typing import Any

from toolscore.collector.pipeline.sink import RunEnrichment
from toolscore.collector.serve._encode import entry_span, field, span_entry, varint

__all__ = ["appended_entry", "enrichment_bytes"]

_OURS = b"toolscore."
_ATTRIBUTE, _EVENT = b"\x4a", b"\x5a"  # Span.attributes = 9, Span.events = 11 (length-delimited)
_KEY, _VALUE = b"\x0a", b"\x12"  # KeyValue.key = 1, KeyValue.value = 2
_EVENT_TIME, _EVENT_NAME, _EVENT_ATTRIBUTE = b"\x09", b"\x12", b"\x1a"  # Event: fixed64 1, name 2, attributes 3
_STRING, _BOOL, _INT, _DOUBLE, _ARRAY = b"\x0a", b"\x10", b"\x18", b"\x21", b"\x2a"  # AnyValue oneof 1-5
_ARRAY_VALUE = b"\x0a"  # ArrayValue.values = 1
_INT64 = 1 << 63
_CACHED_TEXT = 64
"""Longest text whose key-value entry is cached: names and labels recur, explanations do not."""
_CACHED_ITEMS = 16
"""Longest list of names whose entry is cached (the calls of short runs recur, in the same order)."""


def _any_value(value: Any) -> bytes:
    """The `AnyValue` message's bytes (empty: no value set)."""
    if isinstance(value, str):
        return field(_STRING, value.encode())
    if isinstance(value, bool):
        return _BOOL + (b"\x01" if value else b"\x00")
    if isinstance(value, int):
        if not -_INT64 <= value < _INT64:
            raise ValueError(f"{value} does not fit an int64 attribute value")
        return _INT + varint(value & 0xFFFF_FFFF_FFFF_FFFF)
    if isinstance(value, float):
        return _DOUBLE + struct.pack("<d", value)
    if isinstance(value, list | tuple):
        if not value:
            return b""
        return field(_ARRAY, b"".join([field(_ARRAY_VALUE, _any_value(item)) for item in value]))
    if value is None:
        return b""
    return field(_STRING, str(value).encode())


def _key_value(key: str, value: Any) -> bytes:
    """One `KeyValue` message's bytes."""
    any_value = _any_value(value)
    return field(_KEY, key.encode()) + (field(_VALUE, any_value) if any_value else b"")


def _entry(tag: bytes, key: str, value: Any) -> bytes:
    """One `KeyValue` as field `tag`: from the cache when its value is of a kind that recurs."""
    kind = value.__class__
    if kind is str:
        if len(value) <= _CACHED_TEXT:
            return _cached_entry(tag, key, value)
    elif kind is bool or kind is int or kind is float:
        return _cached_entry(tag, key, value)
    elif kind is list and len(value) <= _CACHED_ITEMS and all(item.__class__ is str for item in value):
        return _cached_entry(tag, key, tuple(value))  # names: of calls, of expectations
    return field(tag, _key_value(key, value))


@functools.lru_cache(maxsize=4096, typed=True)  # typed: 1, 1.0 and True are equal keys, and written differently
def _cached_entry(tag: bytes, key: str, value: str | bool | int | float | tuple[str, ...]) -> bytes:
    return field(tag, _key_value(key, value))


def enrichment_bytes(enrichment: RunEnrichment) -> bytes:
    """The enrichment as `Span` fields: its attributes, then its events."""
    parts = [_entry(_ATTRIBUTE, key, value) for key, value in enrichment.attributes.items()]
    for event in enrichment.events:
        body = [_EVENT_TIME, struct.pack("<Q", event.time_ns), field(_EVENT_NAME, event.name.encode())]
        body += [_entry(_EVENT_ATTRIBUTE, key, value) for key, value in event.attributes.items()]
        parts.append(field(_EVENT, b"".join(body)))
    return b"".join(parts)


def appended_entry(entry: bytes | memoryview, enrichment: RunEnrichment) -> bytes | None:
    """A framed `spans` entry (`encode.span_entries`) with the enrichment appended to its span; None when the
    span holds a key of ours already (see the module docstring) or the entry is not one `spans` field."""
    span = entry_span(entry)
    if span is None or _OURS in span:
        return None
    return span_entry(span + enrichment_bytes(enrichment))
