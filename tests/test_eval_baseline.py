"""`toolscore eval --baseline`: two sets of traces of an agent, the per-expectation difference, failing when worse."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.pipeline_builders import agent_run
from tests.test_eval_cli import run_eval_cli
from toolscore.collector.export.otlp_file import OTLPFileSpanExporter

pytestmark = pytest.mark.integration  # every test here runs `toolscore eval` as a subprocess

EXPECTATIONS = """\
expectations:
  - name: books-flight
    match: {agent: travel}
    scorers: [{type: tool_selection, expected_tool: book_flight}]
  - name: searches
    match: {agent: travel}
    scorers: [{type: tool_selection, expected_tool: search_flights}]
"""


def _traces(path: Path, version: str, booking: int, runs: int = 10) -> Path:
    """`runs` runs of the travel agent at `version`, the first `booking` of which book the flight."""
    provider = TracerProvider(resource=Resource.create({"service.version": version}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPFileSpanExporter(path)))
    tracer = provider.get_tracer("baseline-test")
    for i in range(runs):
        agent_run(tracer, tools=("search_flights", "book_flight") if i < booking else ("search_flights",))
    provider.shutdown()
    return path


def test_a_worse_new_set_fails_with_the_per_expectation_difference(tmp_path: Path) -> None:
    (tmp_path / "e.yaml").write_text(EXPECTATIONS)
    main = _traces(tmp_path / "main.jsonl", "1.0", booking=10)
    pull = _traces(tmp_path / "pr.jsonl", "1.1", booking=6)
    proc = run_eval_cli(
        "-t", pull, "-e", tmp_path / "e.yaml", "--min-pass-rate", "0", "--baseline", main, "--margin", "0.3"
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert any(
        "books-flight" in line and "100% of 10" in line and "60% of 10" in line and "-0.40" in line and "WORSE" in line
        for line in lines
    ), proc.stdout
    assert any("searches" in line and "+0.00" in line and "WORSE" not in line for line in lines), proc.stdout
    assert "1 expectation(s) below the baseline by more than 0.30: books-flight" in proc.stdout
    assert "FAIL books-flight" in proc.stdout, "the new set's failing runs with their diffs, as eval shows them"
    assert any(line.split()[1:] == ["missing", "1.", "book_flight", "-"] for line in lines), proc.stdout


def test_a_drop_within_the_margin_or_an_equal_set_passes(tmp_path: Path) -> None:
    (tmp_path / "e.yaml").write_text(EXPECTATIONS)
    main = _traces(tmp_path / "main.jsonl", "1.0", booking=10)
    pull = _traces(tmp_path / "pr.jsonl", "1.1", booking=8)
    within = run_eval_cli(
        "-t", pull, "-e", tmp_path / "e.yaml", "--min-pass-rate", "0", "--baseline", main, "--margin", "0.2"
    )
    assert within.returncode == 0, within.stdout + within.stderr
    assert "No expectation below the baseline by more than 0.20." in within.stdout
    equal = run_eval_cli("-t", main, "-e", tmp_path / "e.yaml", "--baseline", main)
    assert equal.returncode == 0, equal.stdout + equal.stderr


def test_an_unreadable_baseline_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "e.yaml").write_text(EXPECTATIONS)
    main = _traces(tmp_path / "main.jsonl", "1.0", booking=10)
    (tmp_path / "bad.jsonl").write_text("not json\n")
    proc = run_eval_cli("-t", main, "-e", tmp_path / "e.yaml", "--baseline", tmp_path / "bad.jsonl")
    assert proc.returncode == 2, proc.stdout + proc.stderr


def test_the_reports_name_each_runs_version_and_hold_the_comparison(tmp_path: Path) -> None:
    (tmp_path / "e.yaml").write_text(EXPECTATIONS)
    main = _traces(tmp_path / "main.jsonl", "1.0", booking=10)
    pull = _traces(tmp_path / "pr.jsonl", "1.1", booking=6)
    reports = {kind: tmp_path / f"report.{kind}" for kind in ("json", "xml", "md")}
    proc = run_eval_cli(
        *("-t", pull, "-e", tmp_path / "e.yaml", "--min-pass-rate", "0", "--baseline", main, "--margin", "0.3"),
        *("--json", reports["json"], "--junit", reports["xml"], "--markdown", reports["md"]),
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Agent versions: baseline 1.0 (10 runs); new 1.1 (10 runs)" in proc.stdout

    data = json.loads(reports["json"].read_text())
    assert data["exit_code"] == 1, "the comparison failed the eval, though every threshold was met"
    assert {result["run"]["agent_version"] for result in data["results"]} == {"1.1"}
    baseline = data["baseline"]
    assert (baseline["margin"], baseline["worse"]) == (0.3, ["books-flight"])
    assert (baseline["agent_versions"], baseline["baseline_agent_versions"]) == ({"1.1": 10}, {"1.0": 10})
    books = next(row for row in baseline["expectations"] if row["name"] == "books-flight")
    assert (books["baseline_pass_rate"], books["pass_rate"], books["runs"]) == (1.0, 0.6, 10)
    assert books["delta"] == pytest.approx(-0.4)

    root = ET.fromstring(reports["xml"].read_text())
    (suite,) = [s for s in root.iter("testsuite") if s.get("name") == "toolscore.baseline"]
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    failure = cases["books-flight"].find("failure")
    assert failure is not None
    assert failure.get("message") == (
        "baseline 100.0% of 10, new 60.0% of 10, difference -0.40: below by more than 0.30"
    )
    assert cases["searches"].find("failure") is None
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    outputs = [
        case.findtext("system-out") or ""
        for case in root.iter("testcase")
        if case.get("classname") != "toolscore.baseline"
    ]
    assert outputs
    assert all("agent version: 1.1\n" in text for text in outputs)

    markdown = reports["md"].read_text()
    assert markdown.startswith("### ❌ toolscore eval: all 2 expectations met; 1 expectation(s) below the baseline")
    assert "Agent versions: `1.1` (10 runs)." in markdown
    assert "| `books-flight` | 100.0% of 10 | 60.0% of 10 | -0.40 | ❌ WORSE |" in markdown
    assert "Baseline agent versions: `1.0` (10 runs)." in markdown


def test_without_a_baseline_the_json_has_no_comparison_and_runs_without_a_version_none(tmp_path: Path) -> None:
    (tmp_path / "e.yaml").write_text(EXPECTATIONS)
    provider = TracerProvider(resource=Resource.create({}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPFileSpanExporter(tmp_path / "t.jsonl")))
    agent_run(provider.get_tracer("baseline-test"), tools=("search_flights", "book_flight"))
    provider.shutdown()
    proc = run_eval_cli("-t", tmp_path / "t.jsonl", "-e", tmp_path / "e.yaml", "--json", tmp_path / "r.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert "baseline" not in data
    assert [result["run"]["agent_version"] for result in data["results"]] == [None, None]
