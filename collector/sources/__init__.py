"""Every span source converted into `SpanRecord`: OTLP protobuf, OTLP/JSON, SDK spans and trace files.

Nothing downstream of this package sees a wire format. Decoders raise `SpanDecodeError` for a
document they cannot read, and skip (and count in `DecodeStats`) single spans whose ids are unusable.
"""

from __future__ import annotations

from toolscore.collector.sources.errors import DecodeStats, SpanDecodeError, TraceFileError
from toolscore.collector.sources.files import decode_trace_bytes, read_trace_file
from toolscore.collector.sources.otlp_json import (
    NOT_A_TRACE_EXPORT,
    spans_from_json,
    spans_from_json_bytes,
    spans_from_json_lines,
)
from toolscore.collector.sources.otlp_proto import spans_from_proto_bytes, spans_from_request
from toolscore.collector.sources.sdk import record_from_readable, spans_from_readable

__all__ = [
    "NOT_A_TRACE_EXPORT",
    "DecodeStats",
    "SpanDecodeError",
    "TraceFileError",
    "decode_trace_bytes",
    "read_trace_file",
    "record_from_readable",
    "spans_from_json",
    "spans_from_json_bytes",
    "spans_from_json_lines",
    "spans_from_proto_bytes",
    "spans_from_readable",
    "spans_from_request",
]
