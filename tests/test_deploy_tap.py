"""Tap mode (deploy/tap/): the user's Collector forwards every span itself and sends toolscore a copy of the agent
traces; toolscore forwards nothing and emits evaluation log records and metrics only.

The Collector config is checked statically against the pinned contrib release's components, and its sampling
conditions against toolscore's own agent markers (the conventions' gates), so that a convention added to
toolscore cannot be missing from the copy. Then `toolscore serve` runs with deploy/tap/serve.yaml (ports and
paths moved into the test's directory) and scores the demo runs, sending one log record per score.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.deploy_files import COMPONENTS, DEPLOY, collector_problems, load_yaml
from tests.otlp_downstream import TelemetryReceiver
from tests.serve_demo_checks import DEMO_EXPECTATIONS, demo_verdicts
from tests.serve_harness import ServeProcess, free_port
from toolscore.collector.cli.demo_runs import make_demo_spans
from toolscore.collector.pipeline.markers import convention_markers
from toolscore.collector.serve import load_config

TAP = DEPLOY / "tap"


def _otelcol() -> dict[str, Any]:
    return load_yaml(TAP / "otelcol.yaml")  # type: ignore[no-any-return]


def test_the_tap_collector_config_uses_only_contrib_components_it_defines() -> None:
    assert collector_problems(_otelcol(), COMPONENTS) == []


def test_the_copy_is_every_trace_holding_a_span_with_one_of_toolscores_agent_markers() -> None:
    markers = convention_markers()
    assert markers is not None
    policies = _otelcol()["processors"]["tail_sampling/agents"]["policies"]
    conditions = [c for p in policies if p["type"] == "ottl_condition" for c in p["ottl_condition"]["span"]]
    keys = {m.group(1) for c in conditions if (m := re.fullmatch(r'attributes\["(.+)"\] != nil', c))}
    scopes = {m.group(1) for c in conditions if (m := re.fullmatch(r'instrumentation_scope\.name == "(.+)"', c))}
    assert len(keys) + len(scopes) == len(conditions), "every condition is a marker's"
    assert (keys, scopes) == (set(markers.keys), set(markers.scopes))


def test_the_backend_gets_every_span_and_toolscore_only_the_copy_and_nothing_loops() -> None:
    pipelines = _otelcol()["service"]["pipelines"]
    to_backend = [name for name, spec in pipelines.items() if "otlp/backend" in spec["exporters"]]
    to_toolscore = [name for name, spec in pipelines.items() if "otlp/toolscore" in spec["exporters"]]
    assert to_toolscore == ["traces/agents"]
    assert "tail_sampling/agents" in pipelines["traces/agents"]["processors"]
    assert pipelines["traces/backend"]["receivers"] == pipelines["traces/agents"]["receivers"] == ["otlp"]
    assert not any(p.startswith(("tail_sampling", "filter")) for p in pipelines["traces/backend"]["processors"])
    assert set(to_backend) == {"traces/backend", "logs/evaluations"}
    assert pipelines["logs/evaluations"]["receivers"] == ["otlp/toolscore"]  # toolscore's records, never sent back


def test_toolscore_in_tap_mode_forwards_nothing_and_sends_its_scores_as_log_records() -> None:
    config = load_config(TAP / "serve.yaml")
    assert config.forward.endpoint is None
    assert config.telemetry.otlp_logs is True


@pytest.mark.integration
def test_in_tap_mode_each_score_is_a_log_record(tmp_path: Path) -> None:
    config = yaml.safe_load((TAP / "serve.yaml").read_text())
    config["receiver"] = {"grpc_endpoint": f"127.0.0.1:{free_port()}", "http_endpoint": f"127.0.0.1:{free_port()}"}
    config["pipeline"]["settle_ms"] = 100
    config["registry"] = {"store": {"type": "memory"}, "files": [str(DEMO_EXPECTATIONS)], "watch_files": False}
    config["telemetry"] |= {"prometheus_host": "127.0.0.1", "prometheus_port": free_port()}
    config["score_store"] = {"path": str(tmp_path / "scores.db")}
    path = tmp_path / "serve.yaml"
    path.write_text(yaml.safe_dump(config))
    logs = TelemetryReceiver()
    env = {"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": logs.endpoint, "OTEL_BLRP_SCHEDULE_DELAY": "50"}
    traces = make_demo_spans()
    scores = sum(
        len(demo_verdicts(i, span))
        for i, trace in enumerate(traces)
        for span in trace
        if span.name.startswith("invoke_agent")
    )
    with ServeProcess(path, tmp_path, env=env) as process:
        process.wait_ready()
        exporter = GrpcExporter(endpoint=process.grpc_endpoint, insecure=True, timeout=10)
        for trace in traces:
            assert exporter.export(trace) is SpanExportResult.SUCCESS
        exporter.shutdown()
        deadline = time.monotonic() + 20
        while len(logs.log_records()) < scores and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.terminate() == 0, process.log()
    logs.stop()
    records = logs.log_records()
    assert len(records) == scores, process.log()
    assert {record.event_name for record in records} == {"gen_ai.evaluation.result"}
