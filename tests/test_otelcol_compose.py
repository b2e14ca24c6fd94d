"""The compose path as processes, with a real OpenTelemetry Collector (`.ci/install-otelcol`):

    agents (OTel SDK, OTLP) ─▶ otelcol (deploy/compose/otelcol/config.yaml) ─▶ toolscore serve
                                  ▲                                                │ scored spans
                                  └──────────── :4319 (traces/scored) ◀────────────┘
                                  └─▶ `file` exporter, in place of Jaeger

The Collector runs the compose stack's own config file, with its endpoints moved to free loopback ports
(tests/otelcol.py), and toolscore runs with the compose file's environment for it. Also: every Collector
config under deploy/ passes `otelcol validate`.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.capture_replay import (
    CAPTURES,
    TRUTH,
    capture_requests,
    captures_expectations,
    check_capture_scores,
    inferred_run_ids,
)
from tests.otelcol import (
    DEPLOY_CONFIGS,
    FileSpans,
    Otelcol,
    compose_config,
    compose_env,
    otelcol_binary,
    prometheus_sum,
)
from tests.scaleout import AgentLoad
from tests.serve_demo_checks import DEMO_EXPECTATIONS, attrs, check_run_span, demo_verdicts, key, sdk_key
from tests.serve_harness import ServeProcess, serve_config
from toolscore.collector.cli.demo_runs import make_demo_spans

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("config", DEPLOY_CONFIGS, ids=lambda path: str(path.parent.parent.name))
def test_every_collector_config_under_deploy_passes_otelcol_validate(config: Path) -> None:
    result = subprocess.run(
        [str(otelcol_binary()), "validate", f"--config={config}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "TRACES_BACKEND_ENDPOINT": "127.0.0.1:4317"},
    )
    assert result.returncode == 0, result.stderr


def test_the_deploy_folder_has_the_compose_and_the_gateway_collector_configs() -> None:
    assert {path.parent.parent.name for path in DEPLOY_CONFIGS} == {"compose", "kubernetes"}


@dataclass
class Stack:
    otelcol: Otelcol
    serve: ServeProcess
    backend: FileSpans
    grpc: str
    http: str
    expected: set[str]
    serve_config: Path
    serve_env: dict[str, str]

    def serve_metric(self, name: str, **labels: str) -> float:
        """toolscore's metric `name` (and those it begins: Prometheus names end in units and `_total`)."""
        return prometheus_sum(f"http://127.0.0.1:{self.serve.metrics_port}/metrics", name, prefix=True, **labels)


def _start(tmp: Path, settle_ms: float = 8000, **pipeline: Any) -> Stack:
    """The stack, with `settle_ms` longer than the Collector's retries take, as docs/deploy.md advises: a batch
    toolscore refused (its queue full while the captures pour in) comes back after the `RetryInfo` delay and
    backs off, and its spans must not come after their run was scored."""
    expected = captures_expectations(tmp / "captures.yaml")
    config = serve_config(
        tmp, [DEMO_EXPECTATIONS, tmp / "captures.yaml"], None, pipeline={"settle_ms": settle_ms, **pipeline}
    )
    grpc_endpoint = yaml.safe_load(config.read_text())["receiver"]["grpc_endpoint"]
    collector, listeners = compose_config(grpc_endpoint, tmp / "backend.pb")
    env = compose_env(listeners["0.0.0.0:4319"])
    serve = ServeProcess(config, tmp, env=env)
    otelcol = Otelcol(tmp, collector)
    backend = FileSpans(tmp / "backend.pb")
    return Stack(otelcol, serve, backend, listeners["0.0.0.0:4317"], listeners["0.0.0.0:4318"], expected, config, env)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    started = _start(tmp_path)
    with started.serve, started.otelcol:
        started.serve.wait_ready()
        started.otelcol.wait_ready()
        yield started


def _send_captures(endpoint: str, senders: int = 1) -> set[tuple[str, str]]:
    """Every capture, split and shuffled as an agent's batches would come (their GenAI log events first), over
    OTLP/gRPC from `senders` agents at once; the (trace id, span id) keys sent."""
    requests, keys = capture_requests(seed=31)
    with grpc.insecure_channel(endpoint) as channel:
        export_logs = logs_service_pb2_grpc.LogsServiceStub(channel).Export
        for path in sorted(CAPTURES.glob("*/*.logs.pb")):
            export_logs(logs_service_pb2.ExportLogsServiceRequest.FromString(path.read_bytes()), timeout=10)
        export = trace_service_pb2_grpc.TraceServiceStub(channel).Export
        with ThreadPoolExecutor(senders) as pool:
            list(pool.map(lambda request: export(request, timeout=10), requests))
    return keys


def test_captures_and_sdk_runs_come_out_of_the_collector_scored_once_each(stack: Stack) -> None:
    demo = make_demo_spans()
    exporter = HttpExporter(endpoint=f"http://{stack.http}/v1/traces", timeout=10)
    for spans in demo:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    exporter.shutdown()
    keys = _send_captures(stack.grpc) | {sdk_key(span) for spans in demo for span in spans}

    counts = stack.backend.wait_for(keys)
    assert set(counts) == keys, f"{len(keys - set(counts))} spans lost\n{stack.serve.log()}\n{stack.otelcol.log()}"
    assert set(counts.values()) == {1}, "every span reaches the backend exactly once"
    by_key = {key(span): span for span in stack.backend.spans()}
    try:
        assert check_capture_scores(by_key, stack.expected) >= 100
    except AssertionError as error:  # say whether spans came after their run was scored, and why
        late, refused = stack.serve_metric("toolscore_spans_late"), stack.serve_metric("toolscore_receiver_refused")
        raise AssertionError(f"{error}\nlate spans: {late}, batches refused: {refused}") from error
    for i, spans in enumerate(demo):
        for span in spans:
            if span.attributes and span.attributes.get("gen_ai.operation.name") == "invoke_agent":
                original = next(s for s in stack.backend.spans() if key(s) == sdk_key(span))
                check_run_span(by_key[sdk_key(span)], original, demo_verdicts(i, span))
    assert stack.otelcol.metric("otelcol_exporter_send_failed_spans_total") == 0


def _capture_runs() -> set[tuple[str, str]]:
    """(trace id, run span id) of every run of the captures."""
    return {
        (run["trace_id"], run["agent_span_id"])
        for truth in TRUTH.glob("*/*.truth.json")
        if (CAPTURES / truth.parent.name).is_dir()
        for run in json.loads(truth.read_text())["runs"]
    }


def test_toolscore_refusing_under_overload_makes_the_collector_retry_not_drop(tmp_path: Path) -> None:
    """A queue of one span, refused at once when not empty: toolscore answers the Collector's parallel batches
    RESOURCE_EXHAUSTED with RetryInfo, and the Collector's `retry_on_failure` sends them again until taken:
    nothing is lost or doubled, and every run is scored. (Not every score is right: a batch retried for longer
    than `settle_ms` brings its spans after their run was scored; docs/deploy.md says how to avoid that.)"""
    # settle_ms 20 s (and a hold past it): longer than the retries of a batch refused several times in a row take
    # here, as docs/deploy.md advises, so that no run span comes after its trace was finished
    started = _start(
        tmp_path, settle_ms=20_000, max_hold_ms=30_000, queue_size=1, overload_wait_ms=0, max_waiting_requests=0
    )
    with started.serve, started.otelcol:
        started.serve.wait_ready()
        started.otelcol.wait_ready()
        burst = AgentLoad(copies=2, parts=1, gap_s=0, traces_per_s=1000)  # 2 more copies within a second
        burst.send(started.grpc)
        keys = _send_captures(started.grpc, senders=4) | burst.keys
        counts = started.backend.wait_for(keys, timeout_s=120)
        refused = started.serve_metric("toolscore_receiver_refused")
        assert refused > 0, "the load must overflow toolscore's queue"
        assert set(counts) == keys, f"{len(keys - set(counts))} spans lost"
        assert set(counts.values()) == {1}
        inferred = inferred_run_ids()  # no run span to carry scores
        runs = {(t, s) for t, s in set(burst.truth) | _capture_runs() if s not in inferred}
        by_key = {key(span): span for span in started.backend.spans()}
        assert [k for k in runs if "toolscore.expectations" not in attrs(by_key[k])] == [], "every run scored"
        assert started.otelcol.metric("otelcol_exporter_send_failed_spans_total") == 0


def _restart(stack: Stack, attempts: int = 5) -> ServeProcess:
    """toolscore started again on its ports, ready. One of them can be taken for a moment meanwhile (the
    Collector's retries connect from ephemeral ports, which may be any free port): then it is started again."""
    for attempt in range(attempts):
        process = ServeProcess(stack.serve_config, stack.serve_config.parent, env=stack.serve_env)
        try:
            process.wait_ready()
            return process
        except AssertionError:
            process.__exit__(None, None, None)
            if "Address already in use" not in process.log() or attempt == attempts - 1:
                raise
            time.sleep(1)
    raise AssertionError("unreachable")


def test_a_toolscore_restart_makes_the_collector_queue_and_retry_not_drop(tmp_path: Path) -> None:
    """toolscore stops (SIGTERM: its receivers answer UNAVAILABLE, then the port is closed) while agents go on
    sending, and starts again on the same port: the Collector's queue holds what it could not deliver and
    retries it, and everything reaches the backend once."""
    started = _start(tmp_path)
    with started.otelcol:
        with started.serve:
            started.serve.wait_ready()
            started.otelcol.wait_ready()
            first = make_demo_spans()
            exporter = HttpExporter(endpoint=f"http://{started.http}/v1/traces", timeout=10)
            for spans in first[:3]:
                assert exporter.export(spans) is SpanExportResult.SUCCESS
            assert started.serve.terminate() == 0
        for spans in first[3:]:
            assert (
                exporter.export(spans) is SpanExportResult.SUCCESS
            )  # the Collector takes them while toolscore is away
        time.sleep(2)  # retried against a closed port meanwhile
        failed_while_away = started.otelcol.metric("otelcol_exporter_send_failed_spans_total")
        restarted = _restart(started)
        with restarted:
            exporter.shutdown()
            keys = {sdk_key(span) for spans in first for span in spans}
            counts = started.backend.wait_for(keys, timeout_s=60)
            assert set(counts) == keys, f"{len(keys - set(counts))} spans lost\n{started.otelcol.log()}"
            assert set(counts.values()) == {1}
            assert restarted.terminate() == 0
    assert failed_while_away == 0, "retried from the queue, not dropped"
    assert Counter(counts.values()) == Counter({1: len(keys)})
