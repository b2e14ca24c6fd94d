"""`toolscore serve` end to end with a logs endpoint: each score also goes out as a `gen_ai.evaluation.result`
log record, through the OTLP log exporter, in the context of the run span it evaluates (the semantic
conventions' log-based event), to an OTLP/gRPC `LogsService` in the test."""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import SEVERITY_NUMBER_INFO, LogRecord
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.otlp_downstream import TelemetryReceiver
from tests.serve_demo_checks import DEMO_EXPECTATIONS, EVENT, SpanKey, check_run_span, demo_verdicts, key, sdk_key
from tests.serve_harness import Downstream, ServeProcess, serve_config
from toolscore.collector.cli.demo_runs import make_demo_spans

pytestmark = pytest.mark.integration


def _value(value: AnyValue) -> Any:
    return getattr(value, value.WhichOneof("value") or "string_value")


def _attributes(attributes: list[KeyValue]) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in attributes}


def _wait_for_records(receiver: TelemetryReceiver, count: int, timeout_s: float = 20.0) -> None:
    """Until `count` log records arrived, or `timeout_s` passed (a bounded wait: the assertions come after)."""
    deadline = time.monotonic() + timeout_s
    while len(receiver.log_records()) < count and time.monotonic() < deadline:
        time.sleep(0.05)


def test_each_score_is_a_log_record_in_the_run_spans_context(tmp_path: Path) -> None:
    logs, downstream = TelemetryReceiver(), Downstream()
    env = {
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": logs.endpoint,  # alone: the logs endpoint turns telemetry.otlp_logs on
        "OTEL_BLRP_SCHEDULE_DELAY": "50",  # the batch log processor's export delay (ms; default 1000)
    }
    traces = make_demo_spans()
    verdicts = {
        sdk_key(span): demo_verdicts(i, span)
        for i, trace in enumerate(traces)
        for span in trace
        if span.name.startswith("invoke_agent")
    }
    with ServeProcess(serve_config(tmp_path, [DEMO_EXPECTATIONS], downstream), tmp_path, env=env) as process:
        process.wait_ready()
        exporter = GrpcExporter(endpoint=process.grpc_endpoint, insecure=True, timeout=10)
        for trace in traces:
            assert exporter.export(trace) is SpanExportResult.SUCCESS
        exporter.shutdown()
        runs = [span for span in downstream.wait_for(set(verdicts)) if key(span) in verdicts]
        _wait_for_records(logs, sum(len(scores) for scores in verdicts.values()))
        assert process.terminate() == 0, process.log()
    logs.stop()
    downstream.stop()
    assert {key(run) for run in runs} == set(verdicts), process.log()
    encoded = encode_spans([span for trace in traces for span in trace])
    sent = {key(span): span for rs in encoded.resource_spans for ss in rs.scope_spans for span in ss.spans}
    by_run: dict[SpanKey, list[LogRecord]] = defaultdict(list)
    for record in logs.log_records():  # after the collector's exit: none came late, or twice
        by_run[record.trace_id.hex(), record.span_id.hex()].append(record)
    assert set(by_run) == set(verdicts), "every record is in the context of a run span, and every run has some"
    for run in runs:
        check_run_span(run, sent[key(run)], verdicts[key(run)])
        events = {_attributes(e.attributes)["gen_ai.evaluation.name"]: e for e in run.events if e.name == EVENT}
        records = by_run[key(run)]
        names = [_attributes(record.attributes)["gen_ai.evaluation.name"] for record in records]
        assert sorted(names) == sorted(verdicts[key(run)]), "one record per score"
        run_attributes = _attributes(run.attributes)
        (expectation,) = run_attributes["toolscore.expectations"].values
        for record in records:
            assert record.event_name == EVENT
            assert record.severity_number == SEVERITY_NUMBER_INFO
            assert (record.trace_id, record.span_id) == (run.trace_id, run.span_id)
            found = _attributes(record.attributes)
            scorer = found["gen_ai.evaluation.name"]
            score = verdicts[key(run)][scorer]
            assert found["gen_ai.evaluation.score.value"] == pytest.approx(score, abs=1e-3)
            assert found["gen_ai.evaluation.score.label"] == ("pass" if score == 1.0 else "fail")
            assert found["gen_ai.evaluation.explanation"]
            assert found["toolscore.expectation.name"] == expectation.string_value
            assert found["toolscore.expectation.version"] == 1
            assert found["gen_ai.agent.name"] == run_attributes["gen_ai.agent.name"]
            # the same evaluation as the run span's event, which names its expectation and explains it alike
            del found["gen_ai.agent.name"]
            assert found == _attributes(events[scorer].attributes)
