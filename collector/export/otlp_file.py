"""`OTLPFileSpanExporter`: an SDK span exporter writing the files an OpenTelemetry Collector's file exporter writes.

    provider.add_span_processor(BatchSpanProcessor(OTLPFileSpanExporter("traces/agent.jsonl")))

so that a test suite or a batch job records its agents' traces for `toolscore eval` (and `toolscore extract`)
without running a Collector. Each `export` call writes one OTLP `ExportTraceServiceRequest`, encoded by the
OTLP exporters' own encoder (`encode_spans`), in one of the file exporter's two formats:

- ``json`` (its default): one request per line in the OTLP/JSON encoding: the protobuf JSON mapping with
  OTLP's exceptions, trace and span ids in hex (not base64), enums as integers, 64-bit integers as strings;
- ``proto``: each request as protobuf, preceded by its size as a 4-byte big-endian unsigned integer, as
  the file exporter's `format: proto` writes it (its `exportMessageAsBuffer`).

Thread-safe (one lock around each write: a `SimpleSpanProcessor` exports from whichever thread ends a span)
and bounded: it holds no spans of its own (the processor in front bounds its queue), and with `max_bytes`
the file stops growing at that size, the batches that would pass it are refused (`FAILURE`) and counted,
and that is logged once. `force_flush` writes the buffer to the file; `shutdown` flushes and closes it and
is idempotent; an export after shutdown fails.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Literal, get_args

import orjson
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

__all__ = ["FORMATS", "FileFormat", "OTLPFileSpanExporter"]

_log = logging.getLogger(__name__)

FileFormat = Literal["json", "proto"]
FORMATS: tuple[str, ...] = get_args(FileFormat)
"""The Collector file exporter's `format` values, which `toolscore eval` reads back."""

_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(item: dict[str, Any]) -> None:
    """The JSON mapping writes `bytes` in base64; OTLP/JSON writes ids in hex."""
    for key in _ID_FIELDS:
        value = item.get(key)
        if isinstance(value, str):
            item[key] = base64.b64decode(value).hex()


def otlp_json_line(spans: Sequence[ReadableSpan]) -> bytes:
    """One OTLP/JSON `ExportTraceServiceRequest` holding `spans`, as one line (no newline)."""
    request = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource_spans in request.get("resourceSpans", ()):
        for scope_spans in resource_spans.get("scopeSpans", ()):
            for span in scope_spans.get("spans", ()):
                _hex_ids(span)
                for link in span.get("links", ()):
                    _hex_ids(link)
    return orjson.dumps(request)


def otlp_proto_frame(spans: Sequence[ReadableSpan]) -> bytes:
    """One protobuf `ExportTraceServiceRequest` holding `spans`, after its 4-byte big-endian size."""
    message: bytes = encode_spans(spans).SerializeToString()
    return len(message).to_bytes(4, "big") + message


class OTLPFileSpanExporter(SpanExporter):
    """Writes every batch of spans to `path` as the Collector's file exporter would (see the module docstring).

    - `format`: ``json`` (JSON Lines, the default) or ``proto`` (length-prefixed protobuf).
    - `append`: add to an existing file instead of starting it anew (the file exporter's `append`).
    - `max_bytes`: the most the file may grow to (None: no limit); batches that would pass it are dropped.

    The file's directory is created when missing; a path that cannot be opened raises at once (`OSError`).
    """

    def __init__(
        self, path: str | Path, *, format: FileFormat = "json", append: bool = False, max_bytes: int | None = None
    ) -> None:
        if format not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
        if max_bytes is not None and max_bytes < 1:
            raise ValueError(f"max_bytes must be at least 1 (or None: no limit), got {max_bytes}")
        self.path = Path(path)
        self.format: FileFormat = format
        self.max_bytes = max_bytes
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[bytes] | None = open(self.path, "ab" if append else "wb")  # noqa: SIM115  # closed by shutdown
        self._written = self._file.tell()
        self._lock = threading.Lock()
        self.dropped_spans = 0
        """Spans of the batches refused because the file had reached `max_bytes`."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not spans:
            return SpanExportResult.SUCCESS
        data = otlp_json_line(spans) + b"\n" if self.format == "json" else otlp_proto_frame(spans)
        with self._lock:
            if self._file is None:
                _log.warning(
                    "OTLPFileSpanExporter(%s): %d spans exported after shutdown; dropped", self.path, len(spans)
                )
                return SpanExportResult.FAILURE
            if self.max_bytes is not None and self._written + len(data) > self.max_bytes:
                if not self.dropped_spans:
                    _log.warning(
                        "OTLPFileSpanExporter(%s): the file reached max_bytes=%d; further spans are dropped",
                        self.path,
                        self.max_bytes,
                    )
                self.dropped_spans += len(spans)
                return SpanExportResult.FAILURE
            self._file.write(data)
            self._written += len(data)
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Write what is buffered to the file (the OS may still hold it: no fsync)."""
        with self._lock:
            if self._file is not None:
                self._file.flush()
        return True

    def shutdown(self) -> None:
        """Flush and close the file; later exports fail. Idempotent."""
        with self._lock:
            file, self._file = self._file, None
        if file is not None:
            file.close()
