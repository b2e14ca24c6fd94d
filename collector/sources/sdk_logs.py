"""OpenTelemetry SDK log record → GenAI `LogEvent`, for the in-process log record processor.

The same event an OTLP round trip of the record gives (`otlp_logs`): ids as lowercase hex, the time or else
the observed time, sequences (which the SDK and instrumentations give as tuples or lists) as lists, maps
as dicts. Runs on the thread that emits the record, so it asks the cheap questions first: the event name
(most records an application emits are plain logs), then the span context.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolscore.collector.sources.log_events import GENAI_EVENT_NAMES, LogEvent, event_name, event_of

__all__ = ["event_from_log_record"]

_MAX_DEPTH = 32
"""Deeper values are cut: an event body is a few levels (choice → message → tool calls → function)."""


def event_from_log_record(record: Any) -> LogEvent | None:
    """The GenAI event in an SDK `LogRecord` (the API record the SDK's `ReadWriteLogRecord` wraps), or None
    when it is no GenAI event toolscore reads, or has no span context to join."""
    attributes = record.attributes
    name = event_name(getattr(record, "event_name", None) or "", attributes or {})
    if name not in GENAI_EVENT_NAMES:
        return None
    trace_id, span_id = record.trace_id, record.span_id
    if not trace_id or not span_id:
        return None
    body = record.body
    time_ns = record.timestamp or record.observed_timestamp or 0
    plain = _plain(attributes, 0) if attributes else {}
    event = event_of(name, time_ns, plain, None if body is None else _plain(body, 0))
    return LogEvent(f"{trace_id:032x}", f"{span_id:016x}", event)


def _plain(value: Any, depth: int) -> Any:
    """`value` with sequences as lists and maps as dicts, as OTLP decoding gives them."""
    if isinstance(value, str | int | float | bool | bytes) or value is None:
        return value
    if depth >= _MAX_DEPTH:
        return None
    if isinstance(value, Mapping):
        return {str(key): _plain(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item, depth + 1) for item in value]
    return str(value)
