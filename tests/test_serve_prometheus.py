"""A real Prometheus server scrapes `toolscore serve`, and PromQL returns the score histogram of an expectation.

Prometheus is Debian's `prometheus` package (`.ci/install-prometheus` installs it); the test runs its own
server on free 127.0.0.1 ports with its data in a temporary directory, scraping every second.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.serve_harness import ServeProcess, free_port, serve_config
from toolscore.collector.cli.demo_runs import make_demo_spans

DEMO_EXPECTATIONS = Path(__file__).parent.parent / "deploy" / "expectations" / "demo.yaml"
F1_BUCKETS = 'sum by (le) (toolscore_evaluation_score_bucket{toolscore_expectation_name="demo.weather.two-cities", gen_ai_evaluation_name="f1"})'  # noqa: E501


class Prometheus:
    """`prometheus` on a free port scraping `targets` every second; `query` runs PromQL over its HTTP API."""

    def __init__(self, root: Path, targets: list[str]) -> None:
        binary = shutil.which("prometheus")
        if binary is None:
            pytest.fail("Prometheus is not installed: `make test` installs it with .ci/install-prometheus")
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [{"job_name": "toolscore", "static_configs": [{"targets": targets}]}],
        }
        (root / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.url = f"http://127.0.0.1:{free_port()}"
        self.log = root / "prometheus.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [
                    binary,
                    f"--config.file={root / 'prometheus.yml'}",
                    f"--storage.tsdb.path={root / 'data'}",
                    f"--web.listen-address={self.url.removeprefix('http://')}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=5) as response:
            return json.loads(response.read()) if path.startswith("/api/") else response.status

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()
            try:
                if self.get("/-/ready") == 200:
                    return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        raise AssertionError(f"prometheus not ready after {timeout_s} s:\n{self.log.read_text()}")

    def query(self, promql: str) -> list[dict[str, Any]]:
        answer = self.get("/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
        assert answer["status"] == "success", answer
        return list(answer["data"]["result"])

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[ServeProcess]:
    process = ServeProcess(serve_config(tmp_path, [DEMO_EXPECTATIONS], None), tmp_path)
    with process:
        process.wait_ready()
        yield process
        assert process.terminate() == 0, process.log()


def _buckets(prometheus: Prometheus, want_total: float, timeout_s: float = 30.0) -> dict[str, float]:
    """`le` → cumulative count, once the `+Inf` bucket holds `want_total` scores."""
    deadline = time.monotonic() + timeout_s
    buckets: dict[str, float] = {}
    while time.monotonic() < deadline:
        buckets = {row["metric"]["le"]: float(row["value"][1]) for row in prometheus.query(F1_BUCKETS)}
        if buckets.get("+Inf") == want_total:
            return buckets
        time.sleep(0.5)
    raise AssertionError(f"no histogram with {want_total} scores after {timeout_s} s: {buckets}")


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
