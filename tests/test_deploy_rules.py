"""The shipped Prometheus rules: promtool accepts them, their unit tests pass, and they read only real metrics.

promtool is Debian's `prometheus` package (`.ci/install-prometheus` installs it); without it these tests
fail rather than skip. The unit tests live in deploy/prometheus/tests/ and give each alert input series
it must fire on and series it must stay quiet on.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.docs_text import page
from tests.promql_names import exported_labels, exported_metrics, metric_names, recorded_names
from toolscore.collector.telemetry.metrics_table import OVERLOAD_REASONS, REFUSAL_REASONS
from toolscore.collector.telemetry.setup import TelemetryConfig

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "deploy" / "prometheus" / "rules" / "toolscore.rules.yml"
RULE_TESTS = sorted((ROOT / "deploy" / "prometheus" / "tests").glob("*.yml"))
SEVERITY_FROM_EXPECTATION = "{{ $labels.toolscore_expectation_severity }}"


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("promtool")
    if binary is None:
        pytest.fail("promtool is not installed: `make test` installs it with .ci/install-prometheus")
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)


def _rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    return [rule for group in document["groups"] for rule in group["rules"]]


def _alerts() -> list[dict[str, Any]]:
    return [rule for rule in _rules() if "alert" in rule]


@pytest.mark.integration
def test_promtool_check_rules_accepts_the_rules_file() -> None:
    result = _promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in result.stdout


@pytest.mark.integration
def test_promtool_unit_tests_pass_for_every_alert() -> None:
    assert len(RULE_TESTS) >= 4
    result = _promtool("test", "rules", *(str(path) for path in RULE_TESTS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(RULE_TESTS), result.stdout


def test_every_alert_is_unit_tested_both_firing_and_quiet() -> None:
    firing: set[str] = set()
    quiet: set[str] = set()
    for path in RULE_TESTS:
        for test in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]:
            for case in test.get("alert_rule_test", []):
                (firing if case.get("exp_alerts") else quiet).add(case["alertname"])
    names = {alert["alert"] for alert in _alerts()}
    assert names - firing == set(), "alerts no unit test sees firing"
    assert names - quiet == set(), "alerts no unit test sees staying quiet"


def test_every_metric_a_rule_reads_is_exported_by_toolscore_or_recorded_here() -> None:
    known = exported_metrics() | recorded_names(RULES)
    used = {rule.get("record") or rule["alert"]: metric_names(rule["expr"]) for rule in _rules()}
    unknown = {rule: sorted(names - known) for rule, names in used.items() if names - known}
    assert unknown == {}, f"not emitted by toolscore (METRICS) nor recorded in {RULES.name}"
    assert "toolscore_evaluations_total" in set().union(*used.values())


_RANGE_SELECTOR = re.compile(r"(?<![\w:])([A-Za-z_:][\w:]*)\s*(?:\{[^{}]*\})?\[(\d+)([smhdw])\]")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


_READS_A_DAY_OF_RAW_SERIES = {
    "agent_expectation:toolscore_evaluations:rate1d": "the no-runs alert's evaluations / 1 day, with time a "
    "restarted replica exported no series counted as none; an average of recorded rates skips that time",
    "agent_expectation:toolscore_evaluation_score:mean1d": "no 5-minute score sum and count are recorded to average",
    "expectation:toolscore_expectation_severity:info": "the last severity label in a day, of an info gauge",
}
"""The rules left reading a day of raw samples at each evaluation, and why."""


def test_windows_of_a_day_or_more_read_recorded_series_not_raw_counters() -> None:
    """A rule evaluated every 15 s that reads a day or 7 days of every replica's and scorer's raw samples
    costs that many of them per evaluation: a window of a day or more must average what a recording rule has
    already summed, except in the few rules listed above, each of which still does read raw samples."""
    recorded = recorded_names(RULES)
    raw_day_readers = set()
    long_windows = []
    for rule in _rules():
        name_of_rule = rule.get("record") or rule["alert"]
        for name, amount, unit in _RANGE_SELECTOR.findall(rule["expr"]):
            if int(amount) * _SECONDS[unit] >= _SECONDS["d"]:
                long_windows.append(name)
                if name not in recorded:
                    raw_day_readers.add(name_of_rule)
                    assert name_of_rule in _READS_A_DAY_OF_RAW_SERIES, f"{name_of_rule}: [{amount}{unit}] of raw {name}"
    assert raw_day_readers == set(_READS_A_DAY_OF_RAW_SERIES), "the exceptions are the rules that still need one"
    assert "agent_expectation:toolscore_evaluations_pass:rate5m" in long_windows, "the 1d and 7d pass rates average it"


def test_every_alert_explains_itself_with_a_query_on_real_names() -> None:
    known = exported_metrics() | recorded_names(RULES) | exported_labels()
    for alert in _alerts():
        annotations, labels = alert["annotations"], alert["labels"]
        assert annotations["summary"].strip(), alert["alert"]
        description = annotations["description"]
        assert "Look at:" in description, f"{alert['alert']}: the description names the query to look at"
        names = set(re.findall(r"\b(?:toolscore_\w+|\w+:\w+:\w+)", description))
        assert names, alert["alert"]
        assert names - known == set(), f"{alert['alert']}: unknown names in its description"
        assert labels["severity"], alert["alert"]


def test_expectation_alerts_take_their_severity_from_the_expectation() -> None:
    per_expectation = [alert for alert in _alerts() if "toolscore_expectation_name" in alert["expr"]]
    assert {alert["alert"] for alert in per_expectation} == {
        "ToolscoreExpectationPassRateRegression",
        "ToolscoreAgentVersionRegression",
        "ToolscoreExpectationNoRuns",
    }
    for alert in per_expectation:
        assert alert["labels"]["severity"] == SEVERITY_FROM_EXPECTATION
        assert "group_left (toolscore_expectation_severity)" in alert["expr"]
        assert "expectation:toolscore_expectation_severity:info" in alert["expr"]


def test_the_refusing_exports_alert_reads_every_overload_reason_and_nothing_else() -> None:
    """Overload refusals are retried, so only a steady stream of them is worth an alert; any other is not."""
    (alert,) = [alert for alert in _alerts() if alert["alert"] == "ToolscoreRefusingExports"]
    (reasons,) = re.findall(r'toolscore_refusal_reason=~"([^"]*)"', alert["expr"])
    assert sorted(reasons.split("|")) == sorted(OVERLOAD_REASONS)
    assert set(OVERLOAD_REASONS) <= set(REFUSAL_REASONS)


def test_name_check_catches_a_misspelt_metric() -> None:
    expr = 'sum by (job) (rate(toolscore_spanz_total{toolscore_span_outcome="dropped"}[5m])) > bool 0'
    assert metric_names(expr) == {"toolscore_spanz_total"}
    assert metric_names(expr) - exported_metrics() == {"toolscore_spanz_total"}
    assert metric_names("histogram_quantile(0.9, sum by (le) (rate(x_bucket[$__rate_interval])))") == {"x_bucket"}


def test_the_deploy_page_alert_table_lists_every_alert_with_its_severity() -> None:
    """Operators read what an alert means in docs/deploy.md: an alert added to the rules must be documented there."""
    readme = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    table = {
        name: severity.strip()
        for name, severity in re.findall(r"^\| `(Toolscore\w+)` \|.*\| ([^|]+) \|$", readme, re.MULTILINE)
    }
    for alert in _alerts():
        name, severity = alert["alert"], alert["labels"]["severity"]
        assert name in table, f"{name} is not in the alert table of docs/deploy.md"
        documented = "the expectation's" if severity == SEVERITY_FROM_EXPECTATION else f"`{severity}`"
        assert table[name] == documented, f"{name}: docs/deploy.md says {table[name]}, the rule {severity}"
    assert set(table) == {alert["alert"] for alert in _alerts()}, "docs/deploy.md lists alerts the rules do not have"


def _canary_settings() -> dict[str, str]:
    """docs/deploy.md's table of the canary comparison's settings: setting (before the colon) -> default."""
    section = page("deploy.md").split("### The canary comparison")[1].split("\n#")[0]
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("| ")]
    return {cells[0].split(":")[0].strip(): cells[2].strip() for cells in rows[1:]}


def test_the_canary_settings_the_docs_show_are_the_rules() -> None:
    """The alerting docs state the canary comparison's settings; each must be what the rules do."""
    settings = _canary_settings()
    by_name = {rule.get("alert") or rule["record"]: rule for rule in _rules()}
    alert = by_name["ToolscoreAgentVersionRegression"]
    margin = re.search(r"\)\s*>=\s*([\d.]+)\s*\)", alert["expr"])
    assert margin is not None
    assert float(margin.group(1)) == float(settings["margin"])
    enough = by_name[
        "agent_expectation_version:toolscore_expectation_version_runs_pass_per_run:ratio_rate1h_enough_runs"
    ]
    assert re.findall(r">=\s*(\d+)", enough["expr"]) == [settings["minimum runs in the last hour, on both versions"]]
    assert alert["for"] == settings["how long the drop lasts before it fires"].replace(" min", "m")
    kept = settings["how long a gone version stays the comparison"]
    assert kept == "7 days"
    assert "[7d]" in by_name["agent_expectation:toolscore_previous_version_pass_per_run:ratio_rate1h"]["expr"]
    assert "[7d]" in by_name["agent_version:toolscore_agent_version_first_seen:min7d"]["expr"]
    assert int(settings["versions kept per agent"]) == TelemetryConfig().max_agent_versions
