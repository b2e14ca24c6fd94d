"""The regression alert fires end to end: agent runs over OTLP → `toolscore serve` → Prometheus → the shipped rules.

A real Prometheus (tests/prometheus.py) scrapes a real `toolscore serve` subprocess every second and
evaluates deploy/prometheus/rules/toolscore.rules.yml every second. The agent first passes its expectation
about 90% of the time (the baseline), then fails it on every run; `ToolscoreExpectationPassRateRegression`
must stay quiet through the first phase and then fire through `/api/v1/alerts`, with the severity of the
expectation's `severity` label. Then every query of deploy/grafana/toolscore.json runs on that Prometheus,
and the quality panels show the agent's series.

The shipped windows (1 hour against 7 days, `for: 15m`) would take a week, so Prometheus loads a copy of
the rules rewritten mechanically by `shrink_durations`: every range selector `[5m]`, `[1h]`, `[1d]`, `[7d]`,
`[10m]`, `[15m]` becomes `[5s]`, `[10s]`, `[1m]`, `[5m]`, `[10s]`, `[15s]`, and every `for:` becomes `2s`.
Nothing else changes: the regression alert's expression is byte for byte the shipped one (it reads only
recording rules, so it has no range selector of its own), and a test checks that it is.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tests.prometheus import Prometheus
from tests.serve_harness import ServeProcess, serve_config

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "deploy" / "prometheus" / "rules" / "toolscore.rules.yml"
EXPECTATIONS = Path(__file__).parent / "testdata" / "alerting" / "expectations.yaml"
DASHBOARD = ROOT / "deploy" / "grafana" / "toolscore.json"
ALERT = "ToolscoreExpectationPassRateRegression"
RANGES = {"5m": "5s", "1h": "10s", "1d": "1m", "7d": "5m", "10m": "10s", "15m": "15s"}
"""Shipped range → test range. The 1h:7d ratio shrinks from 1:168 to 1:30, enough for a baseline."""
RUNS_PER_SECOND = 5
"""Above the alert's 20-run minimum within the shrunk 1-hour window (10 s)."""


def shrink_durations(rules: str) -> str:
    """The rules with every range selector and `for:` shortened as the module docstring says."""

    def shorter(match: re.Match[str]) -> str:
        return f"[{RANGES[match.group(1)]}]"

    shrunk = re.sub(r"\[(\d+[smhdw])\]", shorter, rules)
    return re.sub(r"(?m)^(\s+for:) \S+$", r"\1 2s", shrunk)


def _alert_exprs(text: str) -> dict[str, str]:
    groups = yaml.safe_load(text)["groups"]
    return {rule["alert"]: rule["expr"] for group in groups for rule in group["rules"] if "alert" in rule}


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[ServeProcess]:
    config = serve_config(tmp_path, [EXPECTATIONS], None, pipeline={"settle_ms": 50})
    process = ServeProcess(config, tmp_path)
    with process:
        process.wait_ready()
        yield process
        assert process.terminate() == 0, process.log()


@pytest.fixture
def prometheus(serve: ServeProcess, tmp_path: Path) -> Iterator[Prometheus]:
    rules = tmp_path / "toolscore.rules.yml"
    rules.write_text(shrink_durations(RULES.read_text(encoding="utf-8")))
    server = Prometheus(tmp_path, [f"127.0.0.1:{serve.metrics_port}"], rule_files=[rules], interval="1s")
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


class Agent:
    """Sends `invoke_agent travel` runs over OTLP/gRPC: a passing run books the flight, a failing one does not.
    `version`: the agent's `service.version`, when it has one."""

    def __init__(self, endpoint: str, version: str | None = None) -> None:
        resource = {"service.name": "travel-agent"} | ({"service.version": version} if version else {})
        self.provider = TracerProvider(resource=Resource.create(resource))
        self.provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, insecure=True), schedule_delay_millis=100)
        )
        self.tracer = self.provider.get_tracer("alert-e2e")

    def run(self, passes: bool) -> None:
        attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel"}
        with self.tracer.start_as_current_span("invoke_agent travel", attributes=attributes):
            for i, tool in enumerate(("search_flights", "book_flight") if passes else ("search_flights",)):
                tool_attributes = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": tool,
                    "gen_ai.tool.call.id": f"call_{i}",
                }
                with self.tracer.start_as_current_span(f"execute_tool {tool}", attributes=tool_attributes):
                    pass

    def second_of_runs(self, passing: int) -> None:
        """`RUNS_PER_SECOND` runs, `passing` of them passing, spread over about a second."""
        for i in range(RUNS_PER_SECOND):
            self.run(passes=i < passing)
            time.sleep(1 / RUNS_PER_SECOND)


def _regression_alerts(prometheus: Prometheus) -> list[dict[str, Any]]:
    return [alert for alert in prometheus.alerts() if alert["labels"]["alertname"] == ALERT]


def test_the_shrunk_rules_keep_the_shipped_alert_expressions() -> None:
    shipped = RULES.read_text(encoding="utf-8")
    shrunk = shrink_durations(shipped)
    assert _alert_exprs(shrunk)[ALERT] == _alert_exprs(shipped)[ALERT]
    assert "[" not in _alert_exprs(shipped)[ALERT]
    assert set(re.findall(r"\[(\w+)\]", shipped)) == set(RANGES), "every shipped window has a test window"
    assert set(re.findall(r"\[(\w+)\]", shrunk)) <= set(RANGES.values())
    assert set(re.findall(r"for: (\S+)", shipped)) >= {"15m"}
    assert set(re.findall(r"for: (\S+)", shrunk)) == {"2s"}


def test_pass_rate_regression_alert_fires_through_prometheus(serve: ServeProcess, prometheus: Prometheus) -> None:
    agent = Agent(serve.grpc_endpoint)
    try:
        for second in range(15):  # the baseline: 4 of 5 runs pass (one failing run first, so `fail` exists)
            agent.second_of_runs(passing=RUNS_PER_SECOND - 1 if second % 2 == 0 else RUNS_PER_SECOND)
        agent.provider.force_flush()
        assert prometheus.query('toolscore_evaluations_total{gen_ai_evaluation_score_label="fail"}'), (
            "toolscore reports failing verdicts"
        )
        assert _regression_alerts(prometheus) == [], "a steady pass rate is its own baseline"
        deadline = time.monotonic() + 40
        firing: list[dict[str, Any]] = []
        while not firing and time.monotonic() < deadline:  # the regression: every run fails
            agent.second_of_runs(passing=0)
            firing = [alert for alert in _regression_alerts(prometheus) if alert["state"] == "firing"]
    finally:
        agent.provider.shutdown()
    assert firing, f"{ALERT} did not fire within 40 s; rules: {prometheus.rule_groups()}"
    (alert,) = firing
    assert alert["labels"] == {
        "alertname": ALERT,
        "severity": "page",
        "toolscore_expectation_name": "e2e.travel.book-flight",
        "toolscore_expectation_severity": "page",
        "gen_ai_agent_name": "travel",
    }
    assert "e2e.travel.book-flight (travel)" in alert["annotations"]["summary"]
    assert float(alert["value"]) >= 0.1, "the drop below the baseline"
    unhealthy = [
        (rule["name"], rule.get("lastError"))
        for group in prometheus.rule_groups()
        for rule in group["rules"]
        if rule["health"] != "ok"
    ]
    assert unhealthy == [], "every shipped rule evaluates against the real exposition"
    _dashboard_shows_the_regression(prometheus)


def _dashboard_shows_the_regression(prometheus: Prometheus) -> None:
    """Every dashboard query runs on this Prometheus; the quality panels have the agent's series."""
    answered: dict[str, int] = {}
    for panel in json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"].replace("$__rate_interval", "10s")
            expr = expr.replace("$agent", "travel").replace("$expectation", ".*")
            answered[panel["title"]] = answered.get(panel["title"], 0) + len(prometheus.query(expr))
    for title in (
        "Pass rate by agent and expectation",
        "Score distribution: $expectation",
        "Worst expectations (pass rate, last hour)",
    ):
        assert answered[title] > 0, title
