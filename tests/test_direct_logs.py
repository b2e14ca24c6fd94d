"""Evaluation records encoded directly (`direct_logs`) reach a real OTLP/gRPC receiver as the logs SDK sent them.

The same results go through the SDK's `LoggerProvider` and `BatchLogRecordProcessor` into its OTLP/gRPC
exporter, and through `DirectLogs` into the same exporter class, both configured by the `OTEL_EXPORTER_OTLP_*`
variables as `toolscore serve` configures them; a `TelemetryReceiver` on 127.0.0.1 decodes both. Resource,
scope and every record field must match, but for the two timestamps (each path reads the clock).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource

from tests.otlp_downstream import TelemetryReceiver
from toolscore.collector.sources._accel import load
from toolscore.collector.telemetry.base import RunSpanRef
from toolscore.collector.telemetry.direct_logs import (
    DirectLogger,
    DirectLogs,
    encode_attributes,
    encode_ids,
    encode_record,
    encode_score_record,
    encode_score_tail,
    field,
    grpc_exporter,
)
from toolscore.collector.telemetry.otel import OTelPipelineTelemetry
from toolscore.collector.telemetry.setup import TelemetryConfig, build_logger_provider
from toolscore.scorers import Score, ScoreFailure

_COMPILED = load({})  # whatever TOOLSCORE_PURE_PYTHON says: `make test-oldest` holds the two to the same bytes too
_SCORE_RECORD = _COMPILED.score_record if _COMPILED is not None else None
EVENT = "gen_ai.evaluation.result"
NAME = field(12, EVENT.encode())
RESOURCE = Resource.create({"service.name": "toolscore", "deployment.environment.name": "test", "replicas": 3})
RUN = RunSpanRef("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")
RESULTS: list[tuple[Any, str, int, str | None, RunSpanRef | None, str | None]] = [
    (
        Score(name="trajectory", value=0.8, label="pass", explanation="correct=2, F1=0.800"),
        "travel",
        3,
        "travel",
        RUN,
        "v1",
    ),
    (Score(name="tool_selection", value=0.0, label="fail", explanation=""), "travel", 1, None, RUN, None),
    (ScoreFailure(name="judge", error_type="judge_timeout", message="no answer in 20 s"), "x", 2, "a", RUN, None),
    (Score(name="exact", value=1.0, label="pass", explanation="café ✓ \ud800"), "shop", 7, "shop", None, None),
    # Explanations whose lengths take two and three varint bytes at each level of their framing.
    (Score(name="f1", value=0.25, label="fail", explanation="é" * 70), "shop", 7, "shop", RUN, None),
    (Score(name="f1", value=0.5, label="pass", explanation="x" * 20_000), "shop", 7, "shop", RUN, None),
    (Score(name="zero_ids", value=1.0, label="pass"), "shop", 7, "shop", RunSpanRef("0" * 32, "0" * 16), None),
    (
        Score(name="unsampled", value=0.5, label="pass"),
        "shop",
        7,
        "shop",
        RunSpanRef(RUN.trace_id, RUN.span_id, 0),
        None,
    ),
]


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[TelemetryReceiver]:
    server = TelemetryReceiver()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", server.endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_INSECURE", "true")
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_PROTOCOL", raising=False)
    yield server
    server.stop()


def _record(provider: Any) -> None:
    telemetry = OTelPipelineTelemetry(MeterProvider(), provider)
    for result, expectation, version, agent, run, agent_version in RESULTS:
        telemetry.score_recorded(result, expectation, version, agent, run, agent_version=agent_version)
    assert provider.force_flush(10_000)
    provider.shutdown()


def _received(receiver: TelemetryReceiver) -> tuple[Any, list[Any]]:
    ((request,),) = [receiver.logs]
    ((resource_logs,),) = [request.resource_logs]
    ((scope_logs,),) = [resource_logs.scope_logs]
    records = []
    for record in scope_logs.log_records:
        assert record.time_unix_nano > 0
        assert record.observed_time_unix_nano >= record.time_unix_nano
        record.time_unix_nano = record.observed_time_unix_nano = 0
        records.append(record)
    return (resource_logs.resource, scope_logs.scope, resource_logs.schema_url), records


def test_direct_records_reach_a_receiver_as_the_sdk_sent_them(receiver: TelemetryReceiver) -> None:
    sdk = LoggerProvider(resource=RESOURCE)
    sdk.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    _record(sdk)
    expected = _received(receiver)
    receiver.logs.clear()
    _record(DirectLogs(grpc_exporter(), RESOURCE))
    direct = _received(receiver)
    assert len(direct[1]) == len(RESULTS)
    assert direct == expected
    assert {bytes(record.trace_id) for record in direct[1]} == {bytes.fromhex(RUN.trace_id), b""}


def test_serve_builds_the_direct_provider_for_otlp_grpc_and_the_sdk_for_http(
    receiver: TelemetryReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = TelemetryConfig(otlp_logs=True)
    direct = build_logger_provider(config, RESOURCE)
    assert isinstance(direct, DirectLogs)
    direct.shutdown()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "http/protobuf")
    sdk = build_logger_provider(config, RESOURCE)
    assert isinstance(sdk, LoggerProvider)
    sdk.shutdown()


def test_a_full_queue_drops_records_without_blocking(receiver: TelemetryReceiver) -> None:
    provider = DirectLogs(grpc_exporter(), RESOURCE, max_queue_size=3, schedule_delay_ms=60_000)
    telemetry = OTelPipelineTelemetry(MeterProvider(), provider)
    result = RESULTS[0][0]
    for _ in range(5):
        telemetry.score_recorded(result, "travel", 1, "travel", RUN)
    assert provider.force_flush(10_000)
    provider.shutdown()
    assert sum(len(sl.log_records) for req in receiver.logs for rl in req.resource_logs for sl in rl.scope_logs) == 3


def test_loggers_of_two_scopes_reach_the_receiver_as_two_scope_logs_in_one_request(
    receiver: TelemetryReceiver,
) -> None:
    provider = DirectLogs(grpc_exporter(), RESOURCE, schedule_delay_ms=60_000)
    first, second = provider.get_logger("first", "1.0"), provider.get_logger("second")
    assert isinstance(first, DirectLogger)
    assert isinstance(second, DirectLogger)
    for n in range(3):
        first.emit_encoded(encode_score_record(n + 1, 9, b"", b"", value=n / 2, label="pass", explanation=f"first {n}"))
        second.emit_encoded(encode_score_record(n + 10, 9, b"", b"", value=1.0, label="fail", explanation=""))
    assert provider.force_flush(10_000)
    provider.shutdown()
    ((request,),) = [receiver.logs]
    ((resource_logs,),) = [request.resource_logs]
    scopes = {(sl.scope.name, sl.scope.version): sl.log_records for sl in resource_logs.scope_logs}
    assert set(scopes) == {("first", "1.0"), ("second", "")}
    assert [record.time_unix_nano for record in scopes["first", "1.0"]] == [1, 2, 3]
    assert [record.time_unix_nano for record in scopes["second", ""]] == [10, 11, 12]
    explanations = [_attribute(record, "gen_ai.evaluation.explanation") for record in scopes["first", "1.0"]]
    assert explanations == ["first 0", "first 1", "first 2"]


def _attribute(record: Any, key: str) -> Any:
    (value,) = [kv.value for kv in record.attributes if kv.key == key]
    return getattr(value, value.WhichOneof("value"))


def _python_score_record(
    time_ns: int, severity: int, head: bytes, ids: bytes, *, value: float, label: str, explanation: str
) -> bytes:
    """`encode_score_record`'s pure-Python path, as it runs without the compiled module."""
    return encode_record(time_ns, severity, head + encode_score_tail(value, label, explanation), EVENT, ids)


_RANDOM = "".join(chr(c) for c in random.Random(7).choices(range(0x20, 0x110000), k=300) if not 0xD800 <= c < 0xE000)
TEXTS = ["", "x", "pass", "é", "x" * 127, "x" * 128, "é" * 64, "x" * 16_383, "x" * 16_384, "✓ café " * 3000, _RANDOM]
LONG = "y" * 2_097_152  # a four-byte varint length at each level of its framing
VALUES = [0.0, -0.0, 1.0, 0.8, 1e-300, -2.5, math.inf, -math.inf, math.nan]
IDS = [b"", encode_ids(bytes(range(16)), bytes(range(8)), 1)]


@pytest.mark.skipif(_SCORE_RECORD is None, reason="the compiled module is not built on this install")
@pytest.mark.parametrize("ids", IDS, ids=["no ids", "ids"])
def test_the_compiled_score_record_writes_the_python_paths_bytes(ids: bytes) -> None:
    head = encode_attributes({"gen_ai.evaluation.name": "trajectory", "toolscore.expectation.version": 3})
    assert _SCORE_RECORD is not None
    for n, (text, value) in enumerate(itertools.product(TEXTS, VALUES)):
        label = TEXTS[n % len(TEXTS)]
        for time_ns, severity in ((0, 0), (1_700_000_000_123_456_789, 9), (2**64 - 1, 127)):
            expected = _python_score_record(time_ns, severity, head, ids, value=value, label=label, explanation=text)
            assert _SCORE_RECORD(time_ns, severity, head, value, label, text, ids, NAME) == expected


@pytest.mark.skipif(_SCORE_RECORD is None, reason="the compiled module is not built on this install")
def test_the_compiled_score_record_frames_a_long_explanation_as_the_python_path() -> None:
    assert _SCORE_RECORD is not None
    expected = _python_score_record(5, 9, b"head", b"", value=0.5, label="pass", explanation=LONG)
    assert _SCORE_RECORD(5, 9, b"head", 0.5, "pass", LONG, b"", NAME) == expected
    assert _SCORE_RECORD(5, 9, b"head", 0.5, LONG, "", b"", NAME) == _python_score_record(
        5, 9, b"head", b"", value=0.5, label=LONG, explanation=""
    )


@pytest.mark.skipif(_SCORE_RECORD is None, reason="the compiled module is not built on this install")
def test_the_compiled_score_record_leaves_a_lone_surrogate_to_the_python_path() -> None:
    assert _SCORE_RECORD is not None
    assert _SCORE_RECORD(1, 9, b"", 1.0, "pass", "bad \ud800 text", b"", NAME) is None
    assert _SCORE_RECORD(1, 9, b"", 1.0, "\udfff", "", b"", NAME) is None
    record = encode_score_record(1, 9, b"", b"", value=1.0, label="pass", explanation="bad \ud800 text")
    assert record == _python_score_record(1, 9, b"", b"", value=1.0, label="pass", explanation="bad \ufffd text")
    with pytest.raises(ValueError, match="severity"):
        _SCORE_RECORD(1, 128, b"", 1.0, "pass", "", b"", NAME)
    with pytest.raises(TypeError):
        _SCORE_RECORD(1, 9, "head", 1.0, "pass", "", b"", NAME)
