"""Every span source converted into `SpanRecord`: OTLP protobuf, OTLP/JSON, SDK spans and trace files;
and GenAI log events (`log_events`), read from OTLP logs exports and joined to their spans as span events.

Nothing downstream of this package sees a wire format. Decoders raise `SpanDecodeError` for a
document they cannot read, and skip (and count in `DecodeStats`) single spans whose ids are unusable.
"""

from __future__ import annotations

from toolscore.collector.sources.errors import DecodeStats, SpanDecodeError, TraceFileError
from toolscore.collector.sources.files import decode_trace_bytes, read_trace_file
from toolscore.collector.sources.log_events import (
    BODY_KEY,
    GENAI_EVENT_NAMES,
    LogBatch,
    LogEvent,
    LogRefusals,
    join_log_events,
    merge_events,
)
from toolscore.collector.sources.otlp_json import (
    NOT_A_TRACE_EXPORT,
    spans_from_json,
    spans_from_json_bytes,
    spans_from_json_lines,
)
from toolscore.collector.sources.otlp_proto import spans_from_proto_bytes, spans_from_request
from toolscore.collector.sources.sdk import record_from_readable, spans_from_readable

__all__ = [
    "BODY_KEY",
    "GENAI_EVENT_NAMES",
    "NOT_A_TRACE_EXPORT",
    "DecodeStats",
    "LogBatch",
    "LogEvent",
    "LogRefusals",
    "SpanDecodeError",
    "TraceFileError",
    "decode_trace_bytes",
    "join_log_events",
    "merge_events",
    "read_trace_file",
    "record_from_readable",
    "spans_from_json",
    "spans_from_json_bytes",
    "spans_from_json_lines",
    "spans_from_proto_bytes",
    "spans_from_readable",
    "spans_from_request",
]
