"""Read spans from trace files, whatever OTLP encoding the exporter that wrote them used.

Detected from the content, not the name:

- gzip (magic `1f 8b`) is decompressed first; offsets in errors are then into the decompressed data;
- `{` or `[` first (after whitespace) and no control bytes: OTLP/JSON, either one document (possibly indented) or JSON
  Lines with one request per line, as the Collector's file exporter writes with `format: json`;
- `0x0a` first: one OTLP protobuf `ExportTraceServiceRequest` (the body of an `http/protobuf` export);
- `0x00` first: length-prefixed messages (4-byte big-endian size, then the message), as the file
  exporter writes with `format: proto`; each message may be protobuf or JSON.

Anything else that does not parse as protobuf is said to be no OTLP export at all, rather than given the
protobuf walk's complaint about its first bytes: text that is not JSON (a log, source code), or binary whose
first byte is not the `0x0a` every OTLP export starts with. A protobuf export that starts right and breaks
later keeps the walk's message, with its byte offset: that is a damaged export.

A JSON document (or line, or frame) that is not an OTLP trace export (`trace_export`: no `resourceSpans`,
and not the empty `{}`) is an error rather than a trace of no spans; so is protobuf that holds an OTLP metrics
or logs export (`other_signal`), which would otherwise parse as spans without ids. Except that, given a
`LogBatch` (`logs`), a logs export (OTLP/JSON `resourceLogs`, or protobuf `ExportLogsServiceRequest`) is read
into it: its GenAI events, to be joined to their spans once every file is read (`join_log_events`), since
logs are exported beside the traces, often to files of their own (`c_parallel.pb` + `c_parallel.logs.pb`).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import zlib
from pathlib import Path
from typing import Any

from toolscore.collector.sources.errors import DecodeStats, SpanDecodeError, TraceFileError
from toolscore.collector.sources.log_events import LogBatch
from toolscore.collector.sources.other_signal import LOGS_EXPORT, other_signal
from toolscore.collector.sources.otlp_json import spans_from_json, spans_from_json_lines, trace_export
from toolscore.collector.sources.otlp_logs import (
    events_from_logs_json,
    events_from_logs_request,
    is_logs_json,
    parse_logs_export,
)
from toolscore.collector.sources.otlp_proto import spans_from_proto_bytes
from toolscore.collector.spans import SpanRecord

__all__ = ["decode_trace_bytes", "read_trace_file"]

_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_FRAME_HEADER = 4
_SNIFF_BYTES = 512
_CONTROL_BYTE = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _second_line_opens_an_object(text: str) -> bool:
    """JSON Lines rather than one indented document: the second line starts a new object."""
    lines = [line for line in text.split("\n", 16) if line.strip()]
    return len(lines) > 1 and lines[1].startswith("{")


def _document(obj: Any, stats: DecodeStats | None, logs: LogBatch | None) -> list[SpanRecord]:
    """The spans of one JSON document; a logs export's events go to `logs` when it is given."""
    if logs is not None and is_logs_json(obj):
        logs.events.extend(events_from_logs_json(obj, logs.refusals))
        return []
    return spans_from_json(trace_export(obj), stats)


def _proto(data: bytes, stats: DecodeStats | None, logs: LogBatch | None) -> list[SpanRecord]:
    """The spans of one protobuf export; a logs export's events go to `logs` when it is given."""
    try:
        return spans_from_proto_bytes(data, stats)
    except SpanDecodeError:
        if logs is None or other_signal(data) != LOGS_EXPORT:
            raise
    logs.events.extend(events_from_logs_request(parse_logs_export(data), logs.refusals))
    return []


def _json_document_or_lines(
    text: str, stats: DecodeStats | None, errors: list[SpanDecodeError], logs: LogBatch | None
) -> list[SpanRecord]:
    """One document when the whole text parses; JSON Lines when a second document follows the first,
    or when the second line starts a new object (an indented document's second line is indented)."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data" or _second_line_opens_an_object(text):
            return spans_from_json_lines(text, stats, errors, lambda doc: _document(doc, stats, logs))
        raise SpanDecodeError(f"invalid JSON: {exc.msg} at column {exc.colno}", line=exc.lineno) from None
    except RecursionError:
        raise SpanDecodeError("invalid JSON: nested too deeply") from None
    return _document(obj, stats, logs)


def _frames(data: bytes, stats: DecodeStats | None, logs: LogBatch | None) -> list[SpanRecord]:
    out: list[SpanRecord] = []
    pos = 0
    while pos < len(data):
        if pos + _FRAME_HEADER > len(data):
            raise SpanDecodeError(f"truncated frame header: {len(data) - pos} of 4 size bytes", offset=pos)
        size = int.from_bytes(data[pos : pos + _FRAME_HEADER], "big")
        start = pos + _FRAME_HEADER
        if start + size > len(data):
            raise SpanDecodeError(
                f"frame of {size} bytes runs past the end ({len(data) - start} bytes left)", offset=pos
            )
        frame = data[start : start + size]
        try:
            if frame[:1] == b"{":
                out.extend(_document(json.loads(frame), stats, logs))
            else:
                out.extend(_proto(frame, stats, logs))
        except SpanDecodeError as exc:
            offset = start + exc.offset if exc.offset is not None else start
            raise SpanDecodeError(f"frame at byte {pos}: {exc.message}", offset=offset) from None
        except ValueError as exc:
            raise SpanDecodeError(f"frame at byte {pos}: invalid JSON: {exc}", offset=start) from None
        except RecursionError:
            raise SpanDecodeError(f"frame at byte {pos}: invalid JSON: nested too deeply", offset=start) from None
        pos = start + size
    return out


def _decompress(data: bytes) -> bytes:
    if data[:2] == _GZIP_MAGIC:
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise SpanDecodeError(f"gzip data is corrupt or truncated: {exc}", offset=0) from None
    if data[:4] == _ZSTD_MAGIC:
        raise SpanDecodeError("zstd-compressed data is not supported; decompress it first (`zstd -d`)", offset=0)
    return data


def _is_json_text(data: bytes) -> bool:
    """JSON starts with `{` or `[` after whitespace and holds no control bytes. Protobuf can start
    the same way (0x0a is a newline, a length of 123 is `{`), but its tags (0x12, ...) soon differ."""
    return data.lstrip()[:1] in (b"{", b"[") and not _CONTROL_BYTE.search(data, 0, _SNIFF_BYTES)


def decode_trace_bytes(
    data: bytes,
    stats: DecodeStats | None = None,
    errors: list[SpanDecodeError] | None = None,
    logs: LogBatch | None = None,
) -> list[SpanRecord]:
    """Spans from the bytes of a trace file; see the module docstring for the formats recognised.

    `logs`: where a logs export's GenAI events go (without it, a logs export is an error)."""
    data = _decompress(data)
    if not data.strip():
        return []
    if _is_json_text(data):
        line_errors: list[SpanDecodeError] = []
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            if not _second_line_opens_an_object(data.decode("utf-8", "replace")):
                raise SpanDecodeError(f"invalid UTF-8 in JSON: {exc.reason}", offset=exc.start) from None
            # JSON Lines: each line decoded alone, so a line with bad UTF-8 costs that line only.
            spans = spans_from_json_lines(data, stats, line_errors, lambda doc: _document(doc, stats, logs))
        else:
            spans = _json_document_or_lines(text, stats, line_errors, logs)
        if line_errors and errors is None:
            raise line_errors[0]
        if errors is not None:
            errors.extend(line_errors)
        return spans
    if data[:1] == b"\x00":
        return _frames(data, stats, logs)
    try:
        return _proto(data, stats, logs)
    except SpanDecodeError as exc:
        raise _not_otlp(data) or exc from None


_EXPECTED = (
    "expected an OTLP export: protobuf (ExportTraceServiceRequest, as an http/protobuf exporter sends it), "
    "OTLP/JSON, or the JSON Lines or length-prefixed protobuf of a Collector file exporter"
)


def _not_otlp(data: bytes) -> SpanDecodeError | None:
    """Why `data`, which did not parse as protobuf, is no OTLP export at all; None when it may be a damaged one."""
    head = data[:_SNIFF_BYTES]
    text: str | None
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = head[: exc.start].decode("utf-8") if exc.start > len(head) - 4 else None  # a character cut at the end
    if text is not None and text.strip() and not _CONTROL_BYTE.search(head):
        start = " ".join(text.split())[:40]
        return SpanDecodeError(f"not an OTLP export: text that is not JSON (it starts {start!r}); {_EXPECTED}")
    if data[:1] != b"\x0a":
        return SpanDecodeError(
            f"not an OTLP export: neither OTLP/JSON nor OTLP protobuf (which starts with byte 0x0a; this starts "
            f"with 0x{data[0]:02x}); {_EXPECTED}"
        )
    return None


def read_trace_file(
    path: str | os.PathLike[str],
    stats: DecodeStats | None = None,
    errors: list[TraceFileError] | None = None,
    logs: LogBatch | None = None,
) -> list[SpanRecord]:
    """Every span in the file at `path`, in file order; a logs export's GenAI events go to `logs` when given.

    Raises `TraceFileError` naming the file and the byte offset or line where it is unreadable.
    In JSON Lines, a bad line is appended to `errors` when given (the other lines are still read),
    and raised otherwise.
    """
    name = os.fspath(path)
    try:
        data = Path(name).read_bytes()
    except OSError as exc:
        raise TraceFileError(name, exc.strerror or str(exc)) from None
    line_errors: list[SpanDecodeError] = []
    try:
        spans = decode_trace_bytes(data, stats, line_errors, logs)
    except SpanDecodeError as exc:
        raise TraceFileError(name, exc.message, offset=exc.offset, line=exc.line) from None
    file_errors = [TraceFileError(name, e.message, line=e.line, offset=e.offset) for e in line_errors]
    if file_errors and errors is None:
        raise file_errors[0]
    if errors is not None:
        errors.extend(file_errors)
    return spans
