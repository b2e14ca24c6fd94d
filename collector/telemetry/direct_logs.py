"""`DirectLogs`: toolscore's `gen_ai.evaluation.result` log records encoded straight to OTLP bytes, batched.

Through the OTel logs SDK one evaluation record cost ~75 µs of CPU: ~35 to build the SDK's record (attribute
cleaning, context lookups, the processor's queue) and ~40 for the exporter to build protobuf messages of it
in Python. toolscore knows the record's exact shape, so it writes the `LogRecord`'s protobuf bytes itself (as
`toolscore serve` does for spans; a score's record in one compiled call where the install built `_wire.c`) and
keeps them in a bounded queue per logger scope; a daemon thread frames a batch into one `ExportLogsServiceRequest`
(the resource and each scope encoded once) and hands it to the SDK's own OTLP/gRPC exporter, which sends it,
unparsed (`grpc_exporter`), with the same endpoint, headers, TLS, compression, timeout and retries as before (the
`OTEL_EXPORTER_OTLP_LOGS_*` variables). About 0.04x the SDK path's CPU per record all told, most of it the gRPC
client's fixed cost per request (tests/bench/bench_evaluation_logs.py). What a receiver gets is what the SDK path
sent, field for field (tests/test_direct_logs.py decodes both from a real receiver).

    OTelPipelineTelemetry._emit_encoded ─encode_score_record→ bytes ─DirectLogger.emit_encoded→ its scope's queue
        (max_queue_size; full: dropped, logged)
        ─(thread, every schedule_delay_ms or max_export_batch_size records)─→ framed request ─→ OTLPLogExporter

The batching follows the SDK's `BatchLogRecordProcessor` defaults (2,048 queued per scope, 512 per export, 1 s).
"""

from __future__ import annotations

import logging
import struct
import threading
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

from opentelemetry._logs import Logger, LoggerProvider, NoOpLogger
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.util.types import AttributeValue

from toolscore.collector.sources import _accel
from toolscore.collector.utf8 import valid_utf8

__all__ = [
    "DirectLogger",
    "DirectLogs",
    "Framed",
    "encode_attributes",
    "encode_double",
    "encode_ids",
    "encode_record",
    "encode_score_record",
    "encode_score_tail",
    "grpc_exporter",
]

_log = logging.getLogger(__name__)


_SMALL = [bytes((n,)) for n in range(128)]
"""The one-byte varints: every tag here, and the length of most values."""


def varint(value: int) -> bytes:
    """A protobuf base-128 varint (negative ints as their 64-bit two's complement, as protobuf writes them)."""
    if 0 <= value < 128:
        return _SMALL[value]
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    n = len(payload)
    return _SMALL[number << 3 | 2] + (_SMALL[n] if n < 128 else varint(n)) + payload


def _any_value(value: Any) -> bytes:
    """An OTLP `AnyValue` (bool before int: a bool is an int in Python)."""
    if isinstance(value, str):
        try:
            raw = value.encode()
        except UnicodeEncodeError:  # a lone surrogate: as `valid_utf8_values` would have it
            raw = valid_utf8(value).encode()
        n = len(raw)
        return b"\x0a" + (_SMALL[n] if n < 128 else varint(n)) + raw
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, int):
        return b"\x18" + varint(value)
    if isinstance(value, float):
        return _DOUBLE(0x21, value)
    if isinstance(value, bytes):
        return field(7, value)
    if isinstance(value, list | tuple):
        return field(5, b"".join(field(1, _any_value(item)) for item in value))
    return field(1, str(value).encode())


_DOUBLE = struct.Struct("<Bd").pack
"""`AnyValue.double_value`: its tag (0x21) and the fixed64."""
_SCALARS = (str, int, float, bool)
_CACHED: dict[tuple[int, str, type, AttributeValue], bytes] = {}
"""Encoded attributes by (field, key, type, value), for the short scalar values that repeat from record to record
(names, versions, labels, most scores); cleared when it holds `_CACHE_SIZE`. The type is part of the key since
`1 == 1.0 == True`."""
_CACHE_SIZE = 4096
_CACHED_TEXT = 128
"""Longest string value cached (an explanation, mostly different each time, is not)."""


def _attributes(number: int, attributes: Mapping[str, AttributeValue]) -> bytes:
    """Each attribute as a `KeyValue` in field `number`; string values with lone surrogates get U+FFFD
    (`valid_utf8`)."""
    cache = _CACHED
    parts = []
    for key, value in attributes.items():
        kind = value.__class__
        cacheable = kind in _SCALARS and (kind is not str or len(value) <= _CACHED_TEXT)  # type: ignore[arg-type]
        if cacheable:
            encoded = cache.get((number, key, kind, value))
            if encoded is not None:
                parts.append(encoded)
                continue
        encoded = field(number, field(1, key.encode()) + field(2, _any_value(value)))
        if cacheable:
            if len(cache) >= _CACHE_SIZE:
                cache.clear()
            cache[(number, key, kind, value)] = encoded
        parts.append(encoded)
    return b"".join(parts)


_BODY = field(5, b"")
"""The SDK's record has an empty body, which its encoder writes as an empty `AnyValue`."""


_DOUBLES: dict[str, bytes] = {}


def encode_double(key: str, value: float) -> bytes:
    """One attribute of a double value, encoded as `encode_attributes` would (its key's framing built once)."""
    prefix = _DOUBLES.get(key)
    if prefix is None:
        prefix = field(6, field(1, key.encode()) + b"\x12\x09" + _DOUBLE(0x21, 0.0))[:-8]
        if len(_DOUBLES) < 256:
            _DOUBLES[key] = prefix
    return prefix + _PACK_DOUBLE(value)


_PACK_DOUBLE = struct.Struct("<d").pack


def encode_attributes(attributes: Mapping[str, AttributeValue]) -> bytes:
    """A log record's attributes, encoded (`LogRecord.attributes`, field 6), for `encode_record`."""
    return _attributes(6, attributes)


def encode_ids(trace_id: bytes, span_id: bytes, flags: int) -> bytes:
    """A record's `flags` (fixed32), `trace_id` and `span_id`, tags and lengths included, for `encode_record`;
    empty unless the ids are 16 and 8 bytes (a record parented to nothing carries none)."""
    if len(trace_id) != 16 or len(span_id) != 8:
        return b""
    return _IDS(0x45, flags, 0x4A, 16, trace_id, 0x52, 8, span_id)


def encode_score_tail(value: float, label: str, explanation: str) -> bytes:
    """A score's own attributes (`gen_ai.evaluation.score.value`, `.label`, `.explanation` when not empty), encoded
    as `encode_attributes` would them: the value and label framings built once, the explanation framed in one
    join (it differs from one record to the next, so no cache would hold it)."""
    head = _VALUE_KEY + _PACK_DOUBLE(value) + (_LABELS.get(label) or _label(label))
    if not explanation:
        return head
    try:
        raw = explanation.encode()
    except UnicodeEncodeError:  # a lone surrogate: as `valid_utf8_values` would have it
        raw = valid_utf8(explanation).encode()
    n = len(raw)
    any_value = n + 1 + _size(n)
    key_value = _EXPLANATION_KEY_SIZE + 1 + _size(any_value) + any_value
    return b"".join(
        (head, b"\x32", varint(key_value), _EXPLANATION_KEY, b"\x12", varint(any_value), b"\x0a", varint(n), raw)
    )


def _size(n: int) -> int:
    """How many bytes `varint(n)` takes, for n >= 0."""
    return 1 if n < 0x80 else 2 if n < 0x4000 else 3 if n < 0x200000 else len(varint(n))


def _label(label: str) -> bytes:
    encoded = _attributes(6, {"gen_ai.evaluation.score.label": label})
    if len(_LABELS) < 64:
        _LABELS[label] = encoded
    return encoded


def encode_record(time_ns: int, severity: int, attributes: bytes, event_name: str, ids: bytes = b"") -> bytes:
    """One `LogRecord` of `encode_attributes`' bytes and `encode_ids`' ids, serialized in field order as the SDK's
    encoder writes it (`time_unix_nano` and `observed_time_unix_nano` both `time_ns`), and framed as an entry of
    `ScopeLogs.log_records`, ready to be joined into a request (`DirectLogs` queues it so)."""
    name = _NAMES.get(event_name) or field(12, event_name.encode())
    size = _FIXED_SIZE + len(attributes) + len(ids) + len(name)
    head = _HEAD(0x09, time_ns, 0x10, severity, _BODY)  # struct.error when severity is no one-byte varint
    return b"".join((b"\x12", varint(size), head, attributes, ids, _OBSERVED(0x59, time_ns), name))


def encode_score_record(
    time_ns: int, severity: int, head: bytes, ids: bytes, *, value: float, label: str, explanation: str
) -> bytes:
    """`encode_record` of `head` (encoded attributes) followed by `encode_score_tail(value, label, explanation)`:
    a score's evaluation record, the one written per result. In compiled code when the install built it
    (`_wire.score_record`, byte for byte this, tests/test_direct_logs.py), which gives a string no UTF-8 holds
    back to this path."""
    if _SCORE_RECORD is not None:
        record = _SCORE_RECORD(time_ns, severity, head, value, label, explanation, ids, _EVALUATION_NAME)
        if record is not None:
            return record
    tail = encode_score_tail(value, label, explanation)
    return encode_record(time_ns, severity, head + tail, _EVALUATION, ids)


_IDS = struct.Struct("<BIBB16sBB8s").pack
"""`flags` (fixed32), `trace_id` and `span_id` (16 and 8 bytes), tags and lengths included."""
_HEAD = struct.Struct("<BQBb2s").pack
"""`time_unix_nano` (tag, fixed64), `severity_number` (tag, one-byte varint: OTel's are 1 to 24), the empty body."""
_OBSERVED = struct.Struct("<BQ").pack
"""`observed_time_unix_nano` (tag, fixed64)."""
_FIXED_SIZE = 13 + 9
"""Bytes of a record taken by `_HEAD` and `_OBSERVED`."""
_EVALUATION = "gen_ai.evaluation.result"
_EVALUATION_NAME = field(12, _EVALUATION.encode())
_NAMES: dict[str, bytes] = {_EVALUATION: _EVALUATION_NAME}
_SCORE_RECORD = _accel.score_record
_VALUE_KEY = encode_double("gen_ai.evaluation.score.value", 0.0)[:-8]
"""The framing of `gen_ai.evaluation.score.value`, up to its 8 bytes of value."""
_LABELS: dict[str, bytes] = {}
"""Each label's encoded attribute (`pass`, `fail`, and what custom scorers say), bounded."""
_EXPLANATION_KEY = field(1, b"gen_ai.evaluation.explanation")
_EXPLANATION_KEY_SIZE = len(_EXPLANATION_KEY)


class Framed(bytes):
    """A serialized `ExportLogsServiceRequest` and how many records it holds."""

    records: int = 0


class DirectLogs(LoggerProvider):
    """The logger provider of toolscore's own evaluation records (see the module docstring); safe for concurrent
    use. `exporter.export` takes a `Framed` request (`grpc_exporter` makes the SDK's OTLP/gRPC one do so)."""

    def __init__(
        self,
        exporter: Any,
        resource: Resource,
        *,
        max_queue_size: int = 2048,
        max_export_batch_size: int = 512,
        schedule_delay_ms: float = 1000.0,
    ) -> None:
        self._exporter = exporter
        self._resource_bytes = field(1, _attributes(1, dict(resource.attributes)))
        self._max_queue = max_queue_size
        self._max_batch = max_export_batch_size
        self._delay_s = schedule_delay_ms / 1000
        self._queues: dict[bytes, deque[bytes]] = {}
        """Encoded and framed records (`encode_record`) by their encoded scope, one queue per logger's scope."""
        self._cond = threading.Condition()
        self._exporting = threading.Lock()
        self._stopped = False
        self._dropped = 0
        self._thread = threading.Thread(target=self._run, name="toolscore-evaluation-logs", daemon=True)
        self._thread.start()

    def get_logger(
        self,
        name: str,
        version: str | None = None,
        schema_url: str | None = None,
        attributes: Any = None,
    ) -> Logger:
        """A logger the telemetry writes encoded records through (`DirectLogger`)."""
        return DirectLogger(self, name, version or "")

    def queue(self, scope: bytes) -> deque[bytes]:
        """The queue of an encoded scope's records, which its loggers append to (`DirectLogger.emit_encoded`)."""
        with self._cond:
            return self._queues.setdefault(scope, deque())

    def wake(self) -> None:
        """A queue holds a batch: export it now rather than at the next `schedule_delay_ms`."""
        with self._cond:
            self._cond.notify()

    def drop(self) -> None:
        """Count a record dropped by a full queue (logged at the first and every thousandth)."""
        if self._stopped:
            return
        self._dropped += 1
        if self._dropped == 1 or self._dropped % 1000 == 0:
            _log.warning("evaluation log queue full: %d records dropped", self._dropped)

    def _full(self) -> bool:
        return any(len(queue) >= self._max_batch for queue in self._queues.values())

    def _take(self) -> list[tuple[bytes, list[bytes]]]:
        """Up to `max_export_batch_size` queued records, as (scope, its records)."""
        left = self._max_batch
        taken = []
        for scope, queue in list(self._queues.items()):
            records = []
            for _ in range(min(len(queue), left)):
                try:
                    records.append(queue.popleft())
                except IndexError:  # another taker emptied it
                    break
            if records:
                taken.append((scope, records))
                left -= len(records)
        return taken

    def _export(self, taken: list[tuple[bytes, list[bytes]]]) -> bool:
        """Frame `taken` into one request (one `ScopeLogs` per scope) and export it; True when exported."""
        scope_logs = b"".join(field(2, scope + b"".join(records)) for scope, records in taken)
        request = Framed(field(1, self._resource_bytes + scope_logs))
        request.records = count = sum(len(records) for _, records in taken)
        with self._exporting:
            try:
                return bool(self._exporter.export(request) == LogRecordExportResult.SUCCESS)
            except Exception:
                _log.exception("exporting %d evaluation log records failed", count)
                return False

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._stopped and not self._full():
                    self._cond.wait(self._delay_s)
                if self._stopped:
                    return
                taken = self._take()
            if taken:
                self._export(taken)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Export everything queued now; False past the timeout or when an export failed."""
        deadline = time.monotonic() + timeout_millis / 1000
        ok = True
        while time.monotonic() < deadline:
            with self._cond:
                taken = self._take()
            if not taken:
                return ok
            ok = self._export(taken) and ok
        return False

    def shutdown(self) -> None:
        """Export what is queued and stop. Idempotent."""
        if self._stopped:
            return
        self.force_flush()
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._thread.join(1.0)
        self._exporter.shutdown()


class DirectLogger(NoOpLogger):
    """A `DirectLogs` logger: `OTelPipelineTelemetry` writes encoded records through it (`emit_encoded`); the
    API's `emit` stays a no-op (toolscore emits nothing else through its own provider)."""

    def __init__(self, provider: DirectLogs, name: str, version: str) -> None:
        super().__init__(name, version)
        self._provider = provider
        scope = field(1, field(1, name.encode()) + (field(2, version.encode()) if version else b""))
        self._queue = provider.queue(scope)
        self._max_queue = provider._max_queue
        self._max_batch = provider._max_batch

    def emit_encoded(self, record: bytes) -> None:
        """Queue one encoded and framed `LogRecord` (`encode_record`); never blocks (a full queue drops it).

        Without a lock (a deque's append is atomic): the bound may be overshot by emitting threads racing."""
        queue = self._queue
        if len(queue) >= self._max_queue or self._provider._stopped:
            self._provider.drop()
            return
        queue.append(record)
        if len(queue) == self._max_batch:
            self._provider.wake()


def _serialized(request: Any) -> bytes:
    return bytes(request) if isinstance(request, bytes) else bytes(request.SerializeToString())


def grpc_exporter() -> Any:
    """The SDK's OTLP/gRPC log exporter (configured by the `OTEL_EXPORTER_OTLP_*` variables as always), taking a
    `Framed` request, sent as it is: the exporter's stub (which it builds again on reconnecting) is one whose
    `Export` writes bytes as they are and messages serialized, and its `_translate_data` hook, the one its
    subclasses fill, passes a `Framed` request through. Its `export` keeps its own retries and timeout. Should a
    later SDK build its stub otherwise, the request is parsed back into a message (upb) instead: slower, the same
    bytes on the wire."""
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
        ExportLogsServiceRequest,
        ExportLogsServiceResponse,
    )

    class RawStub:
        def __init__(self, channel: Any) -> None:
            self.Export = channel.unary_unary(
                "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
                request_serializer=_serialized,
                response_deserializer=ExportLogsServiceResponse.FromString,
            )

    class FramedExporter(OTLPLogExporter):
        def __init__(self) -> None:
            super().__init__()
            self._raw = hasattr(self, "_stub") and getattr(self, "_channel", None) is not None
            if self._raw:
                self._stub = RawStub
                self._client = RawStub(self._channel)  # type: ignore[assignment]

        def _translate_data(self, data: Any) -> Any:
            if isinstance(data, Framed):
                return data if self._raw else ExportLogsServiceRequest.FromString(data)
            return super()._translate_data(data)

        def _count_data(self, data: Any) -> int:
            return data.records if isinstance(data, Framed) else int(super()._count_data(data))

    return FramedExporter()
