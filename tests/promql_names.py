"""Which metric names a PromQL expression reads, and which names toolscore exports to Prometheus.

The deploy tests (rules, dashboard) check every query against what toolscore really emits, so a renamed
metric breaks a test rather than a panel or an alert in production. The exported names follow the
OpenTelemetry Prometheus exporter: dots become underscores, counters end in `_total`, a name in unit `s`
ends in `_seconds` and one in `By` in `_bytes` (added unless it ends so already), and histograms are read
as `_bucket`, `_sum` and `_count`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from toolscore.collector.telemetry.metrics_table import ATTRIBUTES, METRICS

__all__ = [
    "exported_labels",
    "exported_metrics",
    "metric_names",
    "recorded_labels",
    "recorded_names",
    "series_labels",
]

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGES = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_IDENTIFIER = re.compile(r"(?<![\w:.])([A-Za-z_:][\w:]*)(?![\w:])(\s*\()?")
_KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "inf", "nan"})
_GRAFANA_VARIABLE = re.compile(r"\$\{?\w+\}?|\$__\w+")


def metric_names(expr: str) -> set[str]:
    """The metric (or recording rule) names `expr` selects: identifiers that are not functions,
    aggregations, keywords, label names or strings. Grafana variables are replaced by a duration first."""
    text = _GRAFANA_VARIABLE.sub("1m", expr)
    text = _STRINGS.sub('""', text)
    text = _MATCHERS.sub("", text)
    text = _RANGES.sub("", text)
    text = _GROUPING.sub("", text)
    names = set()
    for match in _IDENTIFIER.finditer(text):
        name, call = match.group(1), match.group(2)
        if call or name.lower() in _KEYWORDS:
            continue
        names.add(name)
    return names


_UNIT_SUFFIXES = {"s": "_seconds", "By": "_bytes"}
"""The units toolscore uses that the exporter appends to a name (unless it already ends so)."""


_SCRAPE_LABELS = frozenset({"job", "instance"})
"""The labels Prometheus adds to every scraped series."""


def _exported_series() -> dict[str, set[str]]:
    """Every series name toolscore's `/metrics` can carry, with its labels, derived from `METRICS`."""
    series: dict[str, set[str]] = {}
    for spec in METRICS:
        base = spec.name.replace(".", "_")
        suffix = _UNIT_SUFFIXES.get(spec.unit, "")
        base += "" if base.endswith(suffix) else suffix
        labels = {attribute.replace(".", "_") for attribute in spec.attributes} | _SCRAPE_LABELS
        if spec.kind in ("counter", "observable_counter"):
            series[f"{base}_total"] = labels
        elif spec.kind == "histogram":
            series.update({f"{base}_sum": labels, f"{base}_count": labels, f"{base}_bucket": labels | {"le"}})
        else:
            series[base] = labels
    return series


def exported_metrics() -> set[str]:
    """Every series name toolscore's `/metrics` can carry, derived from `METRICS`."""
    return set(_exported_series())


def exported_labels() -> set[str]:
    """Label names toolscore's metrics carry, plus the ones Prometheus adds (`job`, `instance`, `le`)."""
    return {name.replace(".", "_") for name in ATTRIBUTES} | _SCRAPE_LABELS | {"le"}


def recorded_names(rules_file: Path) -> set[str]:
    """The names the recording rules of `rules_file` define."""
    document: dict[str, Any] = yaml.safe_load(rules_file.read_text(encoding="utf-8"))
    return {rule["record"] for group in document["groups"] for rule in group["rules"] if "record" in rule}


_LEVEL_LABELS = {
    "agent": "gen_ai_agent_name",
    "expectation": "toolscore_expectation_name",
    "version": "toolscore_agent_version",
}
"""The labels a recording rule's level names: `agent_expectation:...` keeps both (an unknown one is a KeyError)."""


def recorded_labels(rules_file: Path) -> dict[str, set[str]]:
    """The labels each recording rule of `rules_file` keeps, read from its level (`level:metric:operations`),
    the convention the rules follow; their promtool unit tests check the labels of what they record."""
    return {
        name: {_LEVEL_LABELS[part] for part in name.split(":")[0].split("_")} for name in recorded_names(rules_file)
    }


def series_labels(rules_file: Path) -> dict[str, set[str]]:
    """Every name a query can select (toolscore's series and the recording rules of `rules_file`), with its labels."""
    return {**_exported_series(), **recorded_labels(rules_file)}
