"""A real Prometheus server scrapes `toolscore serve`, and PromQL returns the score histogram of an expectation.

Prometheus is Debian's `prometheus` package (`.ci/install-prometheus` installs it); `tests.prometheus` runs
its own server on free 127.0.0.1 ports with its data in a temporary directory, scraping every second.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.prometheus import Prometheus
from tests.serve_harness import ServeProcess, serve_config
from toolscore.collector.cli.demo_runs import make_demo_spans
from toolscore.collector.evaluate import run_eval
from toolscore.export import OTLPFileSpanExporter

pytestmark = pytest.mark.integration

DEMO_EXPECTATIONS = Path(__file__).parent.parent / "deploy" / "expectations" / "demo.yaml"
F1_BUCKETS = 'sum by (le) (toolscore_evaluation_score_bucket{toolscore_expectation_name="demo.weather.two-cities", gen_ai_evaluation_name="f1"})'  # noqa: E501


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[ServeProcess]:
    process = ServeProcess(serve_config(tmp_path, [DEMO_EXPECTATIONS], None), tmp_path)
    with process:
        process.wait_ready()
        yield process
        assert process.terminate() == 0, process.log()


def _buckets(prometheus: Prometheus, want_total: float) -> dict[str, float]:
    """`le` → cumulative count, once the `+Inf` bucket holds `want_total` scores."""

    def full(rows: list[dict[str, Any]]) -> bool:
        return any(row["metric"]["le"] == "+Inf" and float(row["value"][1]) == want_total for row in rows)

    return {row["metric"]["le"]: float(row["value"][1]) for row in prometheus.query_until(F1_BUCKETS, full)}


def test_promql_returns_the_score_histogram_of_an_expectation(serve: ServeProcess, tmp_path: Path) -> None:
    prometheus = Prometheus(tmp_path, [f"127.0.0.1:{serve.metrics_port}"])
    try:
        prometheus.wait_ready()
        exporter = OTLPSpanExporter(endpoint=serve.grpc_endpoint, insecure=True, timeout=10)
        for spans in make_demo_spans():
            assert exporter.export(spans) is SpanExportResult.SUCCESS
        exporter.shutdown()
        # the demo's two weather runs: F1 = 1 (both cities) and 0.667 (Tokyo forgotten)
        buckets = _buckets(prometheus, want_total=2.0)
        assert buckets["0.6"] == 0.0
        assert buckets["0.7"] == 1.0
        assert buckets["1.0"] == 2.0
        (up,) = prometheus.query('up{job="toolscore"}')
        assert up["value"][1] == "1"
        (ratio,) = prometheus.query(
            'sum(toolscore_evaluation_score_sum{toolscore_expectation_name="demo.travel.book-flight"})'
            ' / sum(toolscore_evaluation_score_count{toolscore_expectation_name="demo.travel.book-flight"})'
        )
        assert float(ratio["value"][1]) == pytest.approx(5 / 8), "mean score of the travel runs' 8 scores"
    finally:
        prometheus.stop()


def _wait_query(prometheus: Prometheus, promql: str, want: int) -> list[dict[str, Any]]:
    """The rows of `promql` once there are `want` of them."""
    return prometheus.query_until(promql, lambda rows: len(rows) == want)


def test_prometheus_sees_expectation_severities_and_the_pending_limit(serve: ServeProcess, tmp_path: Path) -> None:
    prometheus = Prometheus(tmp_path, [f"127.0.0.1:{serve.metrics_port}"])
    try:
        prometheus.wait_ready()
        (limit,) = _wait_query(prometheus, "toolscore_pending_traces_limit", want=1)
        assert limit["value"][1] == "10000", "the default max_pending_traces"
        (bytes_limit,) = _wait_query(prometheus, "toolscore_pending_bytes_limit_bytes", want=1)
        assert bytes_limit["value"][1] == "134217728", "the default max_pending_bytes, named with its unit"
        assert prometheus.query("toolscore_expectation_info") == [], "no expectation has scores yet"
        (unreadable,) = _wait_query(prometheus, "toolscore_registry_unreadable", want=1)
        assert unreadable["value"][1] == "0"
        (age,) = _wait_query(prometheus, "toolscore_registry_sync_age_seconds", want=1)
        assert 0 <= float(age["value"][1]) < 3600, "the registry's store was read since the collector started"
        exporter = OTLPSpanExporter(endpoint=serve.grpc_endpoint, insecure=True, timeout=10)
        for spans in make_demo_spans():
            assert exporter.export(spans) is SpanExportResult.SUCCESS
        exporter.shutdown()
        rows = _wait_query(prometheus, "toolscore_expectation_info", want=3)
        severities = {
            row["metric"]["toolscore_expectation_name"]: row["metric"].get("toolscore_expectation_severity")
            for row in rows
        }
        assert severities == {
            "demo.travel.book-flight": "ticket",
            "demo.weather.two-cities": "info",
            "demo.planner.delegates": "info",
        }, "from the `severity` label of each expectation in deploy/expectations/demo.yaml"
        assert {row["value"][1] for row in rows} == {"1"}
        (ratio,) = _wait_query(prometheus, "toolscore_pending_traces / toolscore_pending_traces_limit", want=1)
        assert float(ratio["value"][1]) == 0.0, "the two gauges share their labels, so they divide one-to-one"
        (held,) = _wait_query(prometheus, "toolscore_pending_bytes / toolscore_pending_bytes_limit_bytes", want=1)
        assert float(held["value"][1]) == 0.0, "as the alert divides them"
    finally:
        prometheus.stop()


RUN_VERDICTS = "sum by (toolscore_expectation_name, toolscore_run_verdict) (toolscore_expectation_runs_total)"


def test_prometheus_pass_rate_counts_the_runs_eval_counts(serve: ServeProcess, tmp_path: Path) -> None:
    """The same spans sent to `toolscore serve` and written to a file for `toolscore eval`: Prometheus' run
    verdicts per expectation are eval's passed and failed runs, the pass rate both report."""
    prometheus = Prometheus(tmp_path, [f"127.0.0.1:{serve.metrics_port}"])
    try:
        prometheus.wait_ready()
        sender = OTLPSpanExporter(endpoint=serve.grpc_endpoint, insecure=True, timeout=10)
        recorder = OTLPFileSpanExporter(tmp_path / "traces" / "demo.jsonl")
        for spans in make_demo_spans():
            assert sender.export(spans) is SpanExportResult.SUCCESS
            assert recorder.export(spans) is SpanExportResult.SUCCESS
        sender.shutdown()
        recorder.shutdown()
        result = run_eval([tmp_path / "traces"], [DEMO_EXPECTATIONS])
        expected = {}
        for exp in result.expectations:
            expected |= {(exp.name, "pass"): float(exp.passed), (exp.name, "fail"): float(exp.failed)}
        expected = {key: value for key, value in expected.items() if value}
        assert sum(expected.values()) >= 3, "the demo has runs of every expectation"
        assert any(verdict == "fail" for _, verdict in expected), "and some fail"

        def complete(rows: list[dict[str, Any]]) -> bool:
            return sum(float(row["value"][1]) for row in rows) == sum(expected.values())

        rows = prometheus.query_until(RUN_VERDICTS, complete)
        seen = {
            (row["metric"]["toolscore_expectation_name"], row["metric"]["toolscore_run_verdict"]): float(
                row["value"][1]
            )
            for row in rows
        }
        assert seen == expected
    finally:
        prometheus.stop()
