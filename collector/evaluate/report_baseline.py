"""The `toolscore eval --baseline` comparison as a terminal table, after the new set's report."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from toolscore.collector.evaluate.baseline import BaselineRow, regressions

__all__ = ["print_baseline"]


def _rate(rate: float | None, runs: int) -> str:
    return "-" if rate is None else f"{rate:.0%} of {runs}"


def print_baseline(rows: list[BaselineRow], margin: float, console: Console) -> None:
    """Each expectation's pass rate in the baseline and the new traces, the difference, and which are worse."""
    worse = {row.name for row in regressions(rows, margin)}
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, title=f"Against the baseline (margin {margin:.2f})")
    for column in ("expectation", "baseline", "new", "difference", ""):
        table.add_column(column)
    for row in rows:
        delta = "-" if row.delta is None else f"{row.delta:+.2f}"
        verdict = "[red]WORSE[/red]" if row.name in worse else ""
        table.add_row(
            row.name, _rate(row.baseline_pass_rate, row.baseline_runs), _rate(row.pass_rate, row.runs), delta, verdict
        )
    console.print(table)
    if worse:
        console.print(
            f"{len(worse)} expectation(s) below the baseline by more than {margin:.2f}: {', '.join(sorted(worse))}"
        )
    else:
        console.print(f"No expectation below the baseline by more than {margin:.2f}.")
