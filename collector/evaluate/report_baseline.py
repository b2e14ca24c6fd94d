"""The `toolscore eval --baseline` comparison as a terminal table, after the new set's report."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from toolscore.collector.evaluate.baseline import BaselineComparison

__all__ = ["print_baseline"]


def _rate(rate: float | None, runs: int) -> str:
    return "-" if rate is None else f"{rate:.0%} of {runs}"


def _versions(versions: dict[str, int]) -> str:
    return ", ".join(f"{version} ({n} runs)" for version, n in versions.items()) or "-"


def print_baseline(baseline: BaselineComparison, console: Console) -> None:
    """Each expectation's pass rate in the baseline and the new traces, the difference, and which are worse."""
    worse, margin = set(baseline.worse), baseline.margin
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, title=f"Against the baseline (margin {margin:.2f})")
    for column in ("expectation", "baseline", "new", "difference", ""):
        table.add_column(column)
    for row in baseline.expectations:
        delta = "-" if row.delta is None else f"{row.delta:+.2f}"
        verdict = "[red]WORSE[/red]" if row.name in worse else ""
        table.add_row(
            row.name, _rate(row.baseline_pass_rate, row.baseline_runs), _rate(row.pass_rate, row.runs), delta, verdict
        )
    console.print(table)
    if baseline.agent_versions or baseline.baseline_agent_versions:
        console.print(
            Text(
                f"Agent versions: baseline {_versions(baseline.baseline_agent_versions)}; "
                f"new {_versions(baseline.agent_versions)}"
            )
        )
    if worse:
        console.print(
            f"{len(worse)} expectation(s) below the baseline by more than {margin:.2f}: {', '.join(sorted(worse))}"
        )
    else:
        console.print(f"No expectation below the baseline by more than {margin:.2f}.")
