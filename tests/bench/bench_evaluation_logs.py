"""What one `gen_ai.evaluation.result` log record costs to build and export, direct against the logs SDK.

`OTelPipelineTelemetry.score_recorded` for a typical score (8 attributes, parented to its run span), exported
over OTLP/gRPC to a receiver on 127.0.0.1 (another process) that counts the requests without decoding them;
the metrics go to the API's no-op meter provider. CPU time of the whole process per record (the exporter's
thread included), N records then a flush, less the same N results recorded with no logger provider (the
metrics' and the call's share), timed alternately:
- `evaluation_log.direct.us_per_record`: `DirectLogs` (what `toolscore serve` builds for OTLP/gRPC);
- `evaluation_log.sdk.us_per_record`: the SDK's `LoggerProvider`, `BatchLogRecordProcessor` and exporter.
The issue's target is <= 5 µs per record.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent import futures
from multiprocessing.connection import Connection
from typing import Any
from unittest.mock import patch

import grpc
from opentelemetry._logs import NoOpLoggerProvider
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

from tests.bench.harness import Bench
from toolscore.collector.telemetry.base import RunSpanRef
from toolscore.collector.telemetry.direct_logs import DirectLogs, grpc_exporter
from toolscore.collector.telemetry.otel import OTelPipelineTelemetry
from toolscore.collector.telemetry.setup import _otlp_log_exporter
from toolscore.scorers import Score

TARGET_US = 5.0
_SCORE = Score(name="trajectory", value=0.8, label="pass", explanation="correct=2, precision=2/3, recall=2/2, F1=0.800")
_RUN = RunSpanRef("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")


def _receive(port: Connection) -> None:
    """An OTLP/gRPC `LogsService` on 127.0.0.1 that counts requests without decoding them, in a process of its own
    (its CPU is not toolscore's); sends its port, then the count once told to stop."""
    requests = [0]

    def export(request: bytes, context: Any) -> bytes:
        requests[0] += 1
        return b""  # an empty ExportLogsServiceResponse

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    handler = grpc.method_handlers_generic_handler(
        "opentelemetry.proto.collector.logs.v1.LogsService", {"Export": grpc.unary_unary_rpc_method_handler(export)}
    )
    server.add_generic_rpc_handlers((handler,))
    port.send(server.add_insecure_port("127.0.0.1:0"))
    server.start()
    port.recv()
    port.send(requests[0])
    server.stop(None)


def _emitting(provider: Any, n: int) -> Any:
    telemetry = OTelPipelineTelemetry(NoOpMeterProvider(), provider)

    def emit() -> float:
        start = time.process_time()
        for _ in range(n):
            telemetry.score_recorded(_SCORE, "travel", 3, "travel-agent", _RUN, agent_version="v1")
        assert getattr(provider, "force_flush", lambda _: True)(30_000)
        return (time.process_time() - start) * 1e6 / n

    return emit


def bench(b: Bench, *, quick: bool = False) -> None:
    """`quick`: 50 records, one pair, for the smoke test."""
    n, runs = (50, 1) if quick else (2_000, 9)  # under the queues' 2,048: nothing is dropped
    ours, theirs = multiprocessing.get_context("spawn").Pipe()
    receiver = multiprocessing.get_context("spawn").Process(target=_receive, args=(theirs,), daemon=True)
    receiver.start()
    # The exporters read their endpoint from the environment; patch.dict puts it back after (the smoke test runs
    # this in pytest's process, whose later tests must not export to this receiver once it is gone).
    variables = {
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": f"http://127.0.0.1:{ours.recv()}",
        "OTEL_EXPORTER_OTLP_LOGS_INSECURE": "true",
    }
    with patch.dict(os.environ, variables):
        direct = DirectLogs(grpc_exporter(), _resource())
        sdk = LoggerProvider(resource=_resource())
        sdk.add_log_record_processor(BatchLogRecordProcessor(_otlp_log_exporter()))
    try:
        emit_direct, emit_sdk, emit_none = _emitting(direct, n), _emitting(sdk, n), _emitting(NoOpLoggerProvider(), n)
        emit_direct(), emit_sdk(), emit_none()
        samples, base = [], []
        for _ in range(runs):
            none = emit_none()
            base.append(emit_sdk() - none)
            samples.append(emit_direct() - none)
        b.paired(
            "evaluation_log.direct.us_per_record",
            samples,
            "evaluation_log.sdk.us_per_record",
            base,
            unit="us/record",
            higher_is_better=False,
        )
        figure = b.figures["evaluation_log.direct.us_per_record"]
        figure.target = f"<= {TARGET_US} us: {'met' if figure.value <= TARGET_US else 'NOT met'}"
        print(f"target evaluation_log.direct.us_per_record {figure.value:.1f} us {figure.target}", flush=True)
    finally:
        direct.shutdown()
        sdk.shutdown()
        ours.send("stop")
        received = ours.recv()
        receiver.join(10)
    assert received > 0


def _resource() -> Any:
    from opentelemetry.sdk.resources import Resource

    return Resource.create({"service.name": "toolscore"})
