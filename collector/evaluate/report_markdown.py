"""`--markdown`: a summary fit for a pull-request comment (GitHub and GitLab flavoured Markdown).

The verdict in the heading, the expectations table (and the agent versions the runs came from), the
comparison with `--baseline`'s traces when there is one, then each failing run folded in a `<details>`
block with its calls beside the expected ones, so a long list of failures does not bury the table.
"""

from __future__ import annotations

import html
from pathlib import Path

from toolscore.collector.evaluate.baseline import BaselineComparison, agent_versions
from toolscore.collector.evaluate.diff import CallDiff
from toolscore.collector.evaluate.diff_text import cells, order_text
from toolscore.collector.evaluate.model import EvalResult, RunResult
from toolscore.collector.evaluate.report_common import (
    failing_scorers,
    headline,
    percent,
    score_text,
    scorer_line,
    unscored,
    verdict,
)

__all__ = ["markdown_report", "write_markdown"]

MAX_FAILURES = 20
"""Failing runs shown in full; the rest are counted (a comment has a size limit)."""


def _cell(text: str) -> str:
    """Text for a table cell: pipes escaped (GitHub unescapes `\\|` even inside code spans), one line."""
    return text.replace("|", "\\|").replace("\n", " ")


def _text(text: str) -> str:
    """Prose for a cell or list item: `_cell`, with `<`, `>` and `&` as entities, since recorded arguments
    and judge explanations are arbitrary text (`</details>` in one would close the fold early)."""
    return _cell(html.escape(text, quote=False))


def _code(text: str) -> str:
    """A code span: nothing in it is read as HTML or Markdown, so only pipes and backticks need care."""
    return "-" if text == "-" else f"`{_cell(text).replace('`', 'ˋ')}`"


def _summary_table(result: EvalResult) -> list[str]:
    lines = [
        "| Expectation | Runs | Passed | Failed | Pass rate | Mean score | Needed | Result |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for exp in result.expectations:
        mark = "✅" if exp.ok and exp.passed + exp.failed else "⚠️" if exp.ok else "❌"
        lines.append(
            f"| {_code(exp.name)} | {exp.matched} | {exp.passed} | {exp.failed} | {percent(exp.pass_rate)} "
            f"| {score_text(exp.mean_score)} | {percent(exp.min_pass_rate)} | {mark} {verdict(exp)} |"
        )
    return lines


def _diff_table(diff: CallDiff) -> list[str]:
    lines = [
        f"_{_text(diff.rule)}, {order_text(diff)}_",
        "",
        "| | Expected | Actual | Difference |",
        "|---|---|---|---|",
    ]
    for row in cells(diff, width=80):
        mark = "✓" if row.ok else "✗"
        notes = "<br>".join(_text(note) for note in row.notes)
        lines.append(f"| {mark} {row.status} | {_code(row.expected)} | {_code(row.actual)} | {notes} |")
    return lines


def _failure(run: RunResult) -> list[str]:
    ref = run.run
    source = f" in <code>{_text(ref.source)}</code>" if ref.source else ""  # an HTML line: no Markdown in it
    lines = [f"<details><summary><code>{run.expectation}</code>: {_text(ref.label)}{source}</summary>", ""]
    for scorer in failing_scorers(run):
        lines.extend([f"- {_text(scorer_line(scorer))}", ""])
        if scorer.diff is not None:
            lines.extend([*_diff_table(scorer.diff), ""])
    lines.extend(["</details>", ""])
    return lines


def _versions_text(versions: dict[str, int]) -> str:
    return ", ".join(f"{_code(version)} ({n} runs)" for version, n in versions.items())


def _baseline(baseline: BaselineComparison) -> list[str]:
    lines = [
        f"#### Against the baseline (margin {baseline.margin:.2f})",
        "",
        "| Expectation | Baseline | New | Difference | |",
        "|---|---:|---:|---:|---|",
    ]
    for row in baseline.expectations:
        old, new = percent(row.baseline_pass_rate), percent(row.pass_rate)
        delta = "-" if row.delta is None else f"{row.delta:+.2f}"
        mark = "❌ WORSE" if row.name in baseline.worse else ""
        lines.append(f"| {_code(row.name)} | {old} of {row.baseline_runs} | {new} of {row.runs} | {delta} | {mark} |")
    if baseline.baseline_agent_versions:
        lines.extend(["", f"Baseline agent versions: {_versions_text(baseline.baseline_agent_versions)}."])
    return [*lines, ""]


def markdown_report(result: EvalResult, baseline: BaselineComparison | None = None) -> str:
    worse = baseline is not None and bool(baseline.worse)
    icon = "❌" if not result.ok or worse else "⚠️" if unscored(result) else "✅"
    inputs = result.inputs
    title = headline(result)
    if worse and baseline is not None:
        title += f"; {len(baseline.worse)} expectation(s) below the baseline by more than {baseline.margin:.2f}"
    lines = [f"### {icon} toolscore eval: {title}", "", *_summary_table(result), ""]
    lines.append(
        f"{inputs.runs} runs from {len(inputs.trace_files)} trace file(s); "
        f"{len(result.unmatched)} matched no expectation." + ("" if result.judge else " LLM judges not run.")
    )
    versions = agent_versions(result)
    if versions:
        scored = len({(r.run.trace_id, r.run.span_id) for r in result.results})
        unversioned = scored - sum(versions.values())
        rest = f"; {unversioned} run(s) without one" if unversioned else ""
        lines.extend(["", f"Agent versions: {_versions_text(versions)}{rest}."])
    if baseline is not None:
        lines.extend(["", *_baseline(baseline)])
    failures = result.failures
    if failures:
        lines.extend(["", f"#### Failing runs ({len(failures)})", ""])
        for run in failures[:MAX_FAILURES]:
            lines.extend(_failure(run))
        if len(failures) > MAX_FAILURES:
            lines.append(f"… and {len(failures) - MAX_FAILURES} more; see the JUnit or JSON report.")
    return "\n".join(lines).rstrip() + "\n"


def write_markdown(result: EvalResult, path: str | Path, baseline: BaselineComparison | None = None) -> None:
    Path(path).write_text(markdown_report(result, baseline), encoding="utf-8")
