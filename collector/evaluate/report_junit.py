"""JUnit XML, the test report format GitHub Actions, GitLab and Jenkins display.

One `<testsuite>` per expectation (properties: pass rate, threshold, mean score), one `<testcase>`
per run it matched, named after the agent and the run's trace and span. A failing run carries a
`<failure>` whose text is the call diff; a scorer that could not score, an `<error>`; a run whose
every scorer was skipped (an LLM judge without `--judge`), `<skipped>`. An expectation that matched
no run gets one test case, skipped (or failed under `--require-runs`), so it is not silently absent.
A run's agent version is in its case's output. With `--baseline`, one more suite, `toolscore.baseline`: a case
per expectation, failed when its pass rate is below the baseline's by more than the margin.
The document follows the Jenkins xUnit schema (`junit-10.xsd`), which the other CI tools accept too.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from toolscore.collector.evaluate.baseline import BaselineComparison, BaselineRow
from toolscore.collector.evaluate.diff_text import render_diff
from toolscore.collector.evaluate.model import EvalResult, ExpectationResult, RunResult
from toolscore.collector.evaluate.report_common import (
    NO_RUNS_HINT,
    failing_scorers,
    percent,
    score_text,
    scorer_line,
    verdict,
)

__all__ = ["junit_xml", "write_junit"]


def _case_name(run: RunResult) -> str:
    ref = run.run
    return f"{ref.agent_name or '<unnamed run>'} trace={ref.trace_id} span={ref.span_id}"


def _failure_text(run: RunResult) -> str:
    parts = []
    for scorer in failing_scorers(run):
        parts.append(scorer_line(scorer))
        if scorer.diff is not None:
            parts.append(render_diff(scorer.diff))
    return "\n".join(parts)


def _outcome(run: RunResult) -> str:
    """`pass`, `skipped`, `error` (every failing scorer could not score) or `failure`."""
    if run.status != "fail":
        return run.status
    return "error" if all(s.status == "error" for s in failing_scorers(run)) else "failure"


def _case(suite: ET.Element, exp: ExpectationResult, run: RunResult) -> str:
    case = ET.SubElement(suite, "testcase", name=_case_name(run), classname=f"toolscore.{exp.name}", time="0")
    outcome = _outcome(run)
    failing = failing_scorers(run)
    if outcome == "skipped":
        reasons = "; ".join(f"{s.name}: {s.explanation}" for s in run.scorers)
        ET.SubElement(case, "skipped", message=f"not scored ({reasons})")
    elif outcome == "error":
        first = failing[0]
        element = ET.SubElement(case, "error", type=first.error_type or "error", message=scorer_line(first))
        element.text = _failure_text(run)
    elif outcome == "failure":
        kinds = ",".join(dict.fromkeys(s.type for s in failing))
        element = ET.SubElement(case, "failure", type=kinds, message=scorer_line(failing[0]))
        element.text = _failure_text(run)
    calls = ", ".join(call["name"] for call in run.run.calls) or "no calls"
    out = ET.SubElement(case, "system-out")
    version = f"agent version: {run.run.agent_version}\n" if run.run.agent_version else ""
    out.text = f"source: {run.run.source or '-'}\n{version}score: {score_text(run.score)}\ncalls: {calls}\n"
    return outcome


def _no_runs_case(suite: ET.Element, exp: ExpectationResult) -> str:
    case = ET.SubElement(suite, "testcase", name="no run matched", classname=f"toolscore.{exp.name}", time="0")
    outcome = "skipped" if exp.ok else "failure"
    message = "no run in the traces matched this expectation"
    if exp.ok:
        message += f"; not counted as a failure ({NO_RUNS_HINT})"
    ET.SubElement(case, outcome, message=message)
    return outcome


def _suite(root: ET.Element, exp: ExpectationResult, runs: list[RunResult]) -> None:
    suite = ET.SubElement(root, "testsuite", name=exp.name)
    props = ET.SubElement(suite, "properties")
    for name, value in (
        ("matched", str(exp.matched)),
        ("pass_rate", percent(exp.pass_rate)),
        ("min_pass_rate", percent(exp.min_pass_rate)),
        ("mean_score", score_text(exp.mean_score)),
        ("meets_threshold", "true" if exp.ok else "false"),
        ("result", verdict(exp)),
    ):
        ET.SubElement(props, "property", name=name, value=value)
    outcomes = [_case(suite, exp, run) for run in runs] if runs else [_no_runs_case(suite, exp)]
    suite.set("tests", str(len(outcomes)))
    for attr, outcome in (("failures", "failure"), ("errors", "error"), ("skipped", "skipped")):
        suite.set(attr, str(outcomes.count(outcome)))
    suite.set("time", "0")


def _rate(rate: float | None, runs: int) -> str:
    return f"{percent(rate)} of {runs}"


def _baseline_case(suite: ET.Element, row: BaselineRow, baseline: BaselineComparison) -> str:
    case = ET.SubElement(suite, "testcase", name=row.name, classname="toolscore.baseline", time="0")
    text = f"baseline {_rate(row.baseline_pass_rate, row.baseline_runs)}, new {_rate(row.pass_rate, row.runs)}"
    if row.delta is None:
        ET.SubElement(case, "skipped", message=f"{text}: no scored runs on one side, no difference")
        return "skipped"
    text += f", difference {row.delta:+.2f}"
    if row.name in baseline.worse:
        ET.SubElement(case, "failure", type="baseline", message=f"{text}: below by more than {baseline.margin:.2f}")
        return "failure"
    ET.SubElement(case, "system-out").text = text + "\n"
    return "pass"


def _baseline_suite(root: ET.Element, baseline: BaselineComparison) -> None:
    suite = ET.SubElement(root, "testsuite", name="toolscore.baseline")
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="margin", value=f"{baseline.margin:.2f}")
    for name, versions in (
        ("agent_versions", baseline.agent_versions),
        ("baseline_agent_versions", baseline.baseline_agent_versions),
    ):
        if versions:
            ET.SubElement(props, "property", name=name, value=", ".join(f"{v} ({n})" for v, n in versions.items()))
    outcomes = [_baseline_case(suite, row, baseline) for row in baseline.expectations]
    suite.set("tests", str(len(outcomes)))
    suite.set("failures", str(outcomes.count("failure")))
    suite.set("errors", "0")
    suite.set("skipped", str(outcomes.count("skipped")))
    suite.set("time", "0")


def junit_xml(result: EvalResult, baseline: BaselineComparison | None = None) -> str:
    """The whole document, UTF-8 XML text with a declaration."""
    root = ET.Element("testsuites", name="toolscore eval")
    for exp in result.expectations:
        _suite(root, exp, [r for r in result.results if r.expectation == exp.name])
    if baseline is not None:
        _baseline_suite(root, baseline)
    suites = root.findall("testsuite")
    for attr in ("tests", "failures", "errors"):
        root.set(attr, str(sum(int(s.get(attr, "0")) for s in suites)))
    root.set("time", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(result: EvalResult, path: str | Path, baseline: BaselineComparison | None = None) -> None:
    Path(path).write_text(junit_xml(result, baseline), encoding="utf-8")
