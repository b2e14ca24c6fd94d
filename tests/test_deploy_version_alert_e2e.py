"""The canary alert fires end to end: two versions of an agent over OTLP → `toolscore serve` → Prometheus → the rules.

A real Prometheus (tests/prometheus.py) scrapes a real `toolscore serve` every second and evaluates the shipped
rules with their windows shrunk as tests/test_deploy_alert_e2e.py does (`shrink_durations`: 1 hour → 10 s,
7 days → 5 min, `for:` → 2 s). Version 1.0 of the `travel` agent (its resource's `service.version`) passes its
expectation on every run; then version 1.1 runs beside it and fails every run (it never books the flight).
`ToolscoreAgentVersionRegression` must stay quiet while only 1.0 runs, then fire for 1.1 through `/api/v1/alerts`.
The dashboard's Releases panel and deploy markers, asked of the same Prometheus for agent `travel`, show each
version's pass rate and a marker at each version's first run.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests import test_deploy_alert_e2e as alert_e2e
from tests.prometheus import Prometheus
from tests.serve_harness import ServeProcess
from tests.test_deploy_alert_e2e import Agent
from toolscore.collector.cli import main

pytestmark = pytest.mark.integration  # every test here starts a process

serve = alert_e2e.serve
"""The collector the time-baseline alert test scrapes, on the same expectations."""
prometheus = alert_e2e.prometheus
"""Its Prometheus, evaluating the shipped rules with their durations shrunk."""

ALERT = "ToolscoreAgentVersionRegression"
DASHBOARD = Path(__file__).resolve().parent.parent / "deploy" / "grafana" / "toolscore.json"
RUNS_PER_SECOND = 4
"""Per version: 40 runs in the shrunk 1-hour window (10 s), above the alert's 20 on each version."""


def _second(runs: list[tuple[Agent, bool]]) -> None:
    for _ in range(RUNS_PER_SECOND):
        for version, passes in runs:
            version.run(passes)
        time.sleep(1 / RUNS_PER_SECOND)


def _alerts(prometheus: Prometheus) -> list[dict[str, Any]]:
    return [alert for alert in prometheus.alerts() if alert["labels"]["alertname"] == ALERT]


def _as_grafana_would_send(expr: str) -> str:
    """A dashboard query with agent `travel` chosen and every expectation."""
    return expr.replace("$agent", "travel").replace("$expectation", ".*")


def _releases() -> tuple[str, str]:
    """The dashboard's pass-rate-by-version query and its deploy-marker query."""
    dashboard = json.loads(DASHBOARD.read_text())
    panels = [panel for row in dashboard["panels"] for panel in (row, *row.get("panels", []))]
    (panel,) = [p for p in panels if p["title"] == "Pass rate by agent version"]
    (marker,) = [a for a in dashboard["annotations"]["list"] if a.get("expr")]
    return _as_grafana_would_send(panel["targets"][0]["expr"]), _as_grafana_would_send(marker["expr"])


def test_a_worse_new_version_fires_the_version_alert_through_prometheus(
    serve: ServeProcess, prometheus: Prometheus
) -> None:
    old, new = Agent(serve.grpc_endpoint, "1.0"), Agent(serve.grpc_endpoint, "1.1")
    try:
        for _ in range(12):  # 1.0 alone, passing: one version never fires
            _second([(old, True)])
        old.provider.force_flush()
        assert _alerts(prometheus) == [], "a single version has no version before it"
        new_started = time.time()
        deadline = time.monotonic() + 45
        firing: list[dict[str, Any]] = []
        while not firing and time.monotonic() < deadline:  # the canary: 1.1 beside 1.0, failing every run
            _second([(old, True), (new, False)])
            firing = [alert for alert in _alerts(prometheus) if alert["state"] == "firing"]
    finally:
        old.provider.shutdown()
        new.provider.shutdown()
    versions = {
        s["metric"]["toolscore_agent_version"] for s in prometheus.query("toolscore_expectation_version_runs_total")
    }
    assert versions == {"1.0", "1.1"}
    assert firing, f"{ALERT} did not fire within 45 s; rules: {prometheus.rule_groups()}"
    (alert,) = firing
    assert alert["labels"] == {
        "alertname": ALERT,
        "severity": "page",
        "toolscore_expectation_name": "e2e.travel.book-flight",
        "toolscore_expectation_severity": "page",
        "gen_ai_agent_name": "travel",
        "toolscore_agent_version": "1.1",
    }
    assert float(alert["value"]) == pytest.approx(1.0), "1.0 passes every run, 1.1 none"
    previous = prometheus.query("agent_version:toolscore_agent_version:previous")
    assert [s["metric"]["toolscore_agent_version"] for s in previous] == ["1.0"]
    by_version = CliRunner().invoke(
        main, ["runs", "--db", serve.config["score_store"]["path"], "--by-version", "--agent", "travel", "-o", "json"]
    )
    assert by_version.exit_code == 1, "the score store says what the alert says: 1.1 is worse than 1.0"
    rows = {row["agent_version"]: row for row in json.loads(by_version.stdout)}
    assert (rows["1.0"]["pass_rate"], rows["1.1"]["pass_rate"]) == (1.0, 0.0)
    assert (rows["1.1"]["previous_version"], rows["1.1"]["worse"]) == ("1.0", True)
    pass_rates, markers = _releases()
    by_panel = {s["metric"]["toolscore_agent_version"]: float(s["value"][1]) for s in prometheus.query(pass_rates)}
    assert by_panel == {"1.0": 1.0, "1.1": 0.0}, "the Releases panel: each version's pass rate"
    marks = {s["metric"]["toolscore_agent_version"]: float(s["value"][1]) / 1000 for s in prometheus.query(markers)}
    assert set(marks) == {"1.0", "1.1"}
    assert marks["1.0"] < new_started <= marks["1.1"] <= time.time(), "a deploy marker at each version's first run"
