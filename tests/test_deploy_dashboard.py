"""The Grafana dashboard: well-formed, on the `${datasource}` variable, and querying only what toolscore emits.

Every panel query must read metrics toolscore exports (derived from `METRICS`) or recording rules of
deploy/prometheus/rules/toolscore.rules.yml, group and filter by labels those series carry, and parse as
PromQL (promtool checks them as recording rules, Grafana variables replaced).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.promql_names import exported_labels, exported_metrics, metric_names, recorded_names, series_labels

ROOT = Path(__file__).resolve().parent.parent
DASHBOARD = ROOT / "deploy" / "grafana" / "toolscore.json"
RULES = ROOT / "deploy" / "prometheus" / "rules" / "toolscore.rules.yml"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
_LABEL_VALUES = re.compile(r"^label_values\((?P<selector>.*),\s*(?P<label>\w+)\)$")
_LABEL_USES = (
    re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)"),
    re.compile(r"\{\{\s*(\w+)\s*\}\}"),
)
_MATCHER_LABELS = re.compile(r"(\w+)\s*(?:=~|!~|!=|=)\s*\"")


def _dashboard() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return document


def _panels() -> list[dict[str, Any]]:
    return [panel for panel in _dashboard()["panels"] if panel["type"] != "row"]


def _targets() -> list[dict[str, Any]]:
    return [target for panel in _panels() for target in panel["targets"]]


def _variables() -> dict[str, dict[str, Any]]:
    return {variable["name"]: variable for variable in _dashboard()["templating"]["list"]}


def _labels_used(text: str) -> set[str]:
    labels = set(_MATCHER_LABELS.findall(text))
    for pattern in _LABEL_USES:
        for group in pattern.findall(text):
            labels.update(label.strip() for label in group.split(",") if label.strip())
    return labels


def test_dashboard_is_grafana_json_with_unique_panel_ids() -> None:
    dashboard = _dashboard()
    assert dashboard["schemaVersion"] >= 39
    assert dashboard["uid"] == "toolscore"
    ids = Counter(panel["id"] for panel in dashboard["panels"])
    assert [panel_id for panel_id, count in ids.items() if count > 1] == []
    assert {panel["type"] for panel in _panels()} >= {"timeseries", "heatmap", "bargauge"}


def test_panels_do_not_overlap() -> None:
    cells: dict[tuple[int, int], str] = {}
    for panel in _dashboard()["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = panel["title"]


def test_every_panel_queries_prometheus_through_the_datasource_variable() -> None:
    variable = _variables()["datasource"]
    assert (variable["type"], variable["query"]) == ("datasource", "prometheus")
    for panel in _panels():
        assert panel["datasource"] == DATASOURCE, panel["title"]
        assert panel["targets"], f"{panel['title']} has no query"
        for target in panel["targets"]:
            assert target["expr"].strip(), panel["title"]
            assert target["datasource"] == DATASOURCE, panel["title"]
        assert len({target["refId"] for target in panel["targets"]}) == len(panel["targets"]), panel["title"]


def test_agent_and_expectation_variables_filter_the_quality_panels() -> None:
    variables = _variables()
    for name, label in (("agent", "gen_ai_agent_name"), ("expectation", "toolscore_expectation_name")):
        variable = variables[name]
        assert variable["datasource"] == DATASOURCE
        match = _LABEL_VALUES.match(variable["query"]["query"])
        assert match is not None, variable["query"]
        assert match["label"] == label
        assert metric_names(match["selector"]) <= exported_metrics()
        assert any(f'{label}=~"${name}"' in target["expr"] for target in _targets()), name


def _variable_labels() -> dict[str, str]:
    """label -> the query variable whose values are that label's (`label_values(..., label)`)."""
    labels = {}
    for name, variable in _variables().items():
        if variable["type"] == "query":
            match = _LABEL_VALUES.match(variable["query"]["query"])
            assert match is not None, name
            labels[match["label"]] = name
    return labels


def _selectors(expr: str) -> list[tuple[str, str]]:
    """(name, its matchers between braces, or "") for every series selector in `expr`."""
    found = []
    for name in metric_names(expr):
        pattern = rf"(?<![\w:]){re.escape(name)}(?![\w:])\s*(\{{[^{{}}]*\}})?"
        found += [(name, match.group(1) or "") for match in re.finditer(pattern, expr)]
    return found


def test_every_selector_filters_by_each_variable_its_series_carry() -> None:
    """A panel that ignores a filter shows every agent's data under one agent's name: any series with the
    label of a variable (from `METRICS`, or the level of a recording rule) must be filtered by it, in every
    selector of the query (a ratio filtered on one side only mixes the selection with everything)."""
    variables = _variable_labels()
    assert set(variables) == {"gen_ai_agent_name", "toolscore_expectation_name"}
    labels = series_labels(RULES)
    checked = 0
    for panel in _panels():
        for target in panel["targets"]:
            selectors = _selectors(target["expr"])
            assert selectors, f"{panel['title']}: no selector in {target['expr']}"
            for name, matchers in selectors:
                for label in labels[name] & set(variables):
                    checked += 1
                    assert f'{label}=~"${variables[label]}"' in matchers, (
                        f"{panel['title']}: {name} ignores ${variables[label]}"
                    )
    assert checked >= 10


def test_the_score_heatmap_is_drawn_once_per_expectation() -> None:
    """Summed over expectations, one expectation's scores sliding down hide under the others': Grafana repeats
    the heatmap for each selected expectation, each copy filtered to its own, and none sums several."""
    (heatmap,) = [panel for panel in _panels() if panel["type"] == "heatmap"]
    assert heatmap["repeat"] == "expectation"
    assert "$expectation" in heatmap["title"], "each copy says which expectation it shows"
    assert heatmap["gridPos"]["w"] * heatmap["maxPerRow"] <= 24
    variable = _variables()["expectation"]
    assert variable["multi"] is True
    assert variable["includeAll"] is True
    (target,) = heatmap["targets"]
    assert 'toolscore_expectation_name=~"$expectation"' in target["expr"]
    assert target["expr"].startswith("sum by (le) ("), "one distribution: buckets only"


def test_every_query_reads_only_what_toolscore_emits_or_records() -> None:
    known = exported_metrics() | recorded_names(RULES)
    used: set[str] = set()
    for panel in _panels():
        for target in panel["targets"]:
            names = metric_names(target["expr"])
            assert names, f"{panel['title']}: no metric in {target['expr']}"
            assert names - known == set(), f"{panel['title']}: not emitted by toolscore nor recorded"
            used |= names
    assert {"toolscore_evaluation_score_bucket", "toolscore_pending_traces_limit"} <= used


def test_dashboard_covers_quality_traffic_judge_and_pipeline_health() -> None:
    by_type: dict[str, str] = {}
    for panel in _panels():
        by_type[panel["type"]] = by_type.get(panel["type"], "") + " ".join(t["expr"] for t in panel["targets"])
    assert "toolscore_evaluation_score_bucket" in by_type["heatmap"], "score distribution"
    assert "bottomk(" in by_type["bargauge"], "worst expectations"
    queries = " ".join(target["expr"] for target in _targets())
    for needle in (
        "runs_pass_per_run:ratio_rate5m",
        "toolscore_runs_total",
        "toolscore_judge_calls_total",
        "histogram_quantile(0.99, sum by (le) (rate(toolscore_score_delay_seconds_bucket",
        'toolscore_span_outcome="dropped"',
        "toolscore_pending_traces_limit",
        "toolscore_forward_spans_total",
        "toolscore_forward_retries_total",
        "toolscore_pending_bytes_limit_bytes",
        "toolscore_receiver_wait_duration_seconds_count",
        "histogram_quantile(0.99, sum by (le) (rate(toolscore_receiver_wait_duration_seconds_bucket",
    ):
        assert needle in queries


def test_pass_rate_panels_count_runs_and_the_scorer_panel_says_it_is_the_scorer_pass_rate() -> None:
    """ "Pass rate" is runs that passed / runs (what `toolscore eval` reports), never verdicts pooled over scorers."""
    pass_rate = [p for p in _panels() if "pass rate" in p["title"].lower() and "scorer" not in p["title"].lower()]
    assert len(pass_rate) == 4
    for panel in pass_rate:
        for target in panel["targets"]:
            assert "_runs_pass_per_run:" in target["expr"], panel["title"]
    pooled = [p for p in _panels() if any('gen_ai_evaluation_score_label="pass"' in t["expr"] for t in p["targets"])]
    assert [p["title"] for p in pooled] == ["Scorer pass rate by scorer"]


def test_every_query_groups_filters_and_labels_by_labels_the_series_carry() -> None:
    known = exported_labels()
    for panel in _panels():
        for target in panel["targets"]:
            text = f"{target['expr']} {target.get('legendFormat', '')}"
            assert _labels_used(text) - known == set(), f"{panel['title']}: {text}"


@pytest.mark.integration
def test_every_query_parses_as_promql(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool is not installed: `make test` installs it with .ci/install-prometheus")
    rules = [
        {"record": f"dashboard:query_{i}:check", "expr": _grafana_to_promql(target["expr"])}
        for i, target in enumerate(_targets())
    ]
    path = tmp_path / "dashboard.rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def _grafana_to_promql(expr: str) -> str:
    """Grafana's variables as Prometheus would see them once Grafana has interpolated them."""
    return expr.replace("$__rate_interval", "1m").replace("$agent", ".*").replace("$expectation", ".*")


def test_pass_rate_by_version_has_deploy_markers_at_each_versions_first_run() -> None:
    """Releases: one panel of pass rate per agent version, and an annotation where a version's first run appears."""
    (panel,) = [p for p in _panels() if p["title"] == "Pass rate by agent version"]
    (target,) = panel["targets"]
    assert target["expr"].startswith("agent_expectation_version:toolscore_expectation_version_runs_pass_per_run:")
    assert '$agent"' in target["expr"]
    assert "{{toolscore_agent_version}}" in target["legendFormat"]
    (marker,) = [a for a in _dashboard()["annotations"]["list"] if a.get("expr")]
    assert marker["datasource"] == DATASOURCE
    assert marker["useValueForTime"] is True
    assert marker["enable"] is True
    assert metric_names(marker["expr"]) == {"agent_version:toolscore_agent_version_first_seen:min7d"}
    assert metric_names(marker["expr"]) <= recorded_names(RULES)
    assert marker["expr"].endswith("* 1000"), "Grafana places a value-as-time annotation at milliseconds"
    assert _labels_used(marker["expr"]) <= exported_labels()
