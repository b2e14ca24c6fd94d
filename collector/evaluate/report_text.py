"""The console summary: read at a glance in a terminal or a CI log.

A table of expectations (runs matched, pass rate: runs that passed / runs, mean score, threshold,
verdict), then each failing run with its calls beside the expected ones, then the runs no expectation
matched (counted; listed on request). Colour only when the console is a terminal; text written through
`markup=False` so that brackets in tool arguments are never read as rich markup.
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from toolscore.collector.evaluate.diff_text import render_diff
from toolscore.collector.evaluate.model import EvalResult, RunRef
from toolscore.collector.evaluate.report_common import (
    failing_scorers,
    headline,
    percent,
    score_text,
    scorer_line,
    unscored,
    verdict,
)

__all__ = ["print_report"]

SKIPPED_SHOWN = 3
"""Skipped spans whose reason the summary prints: a CI log that passed with no runs then says why."""


def _table(result: EvalResult) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("Expectation", overflow="fold")  # a narrow terminal wraps the name, never the numbers
    for name in ("Runs", "Passed", "Failed", "Pass rate", "Mean", "Needed"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("Result", no_wrap=True)
    for exp in result.expectations:
        word = verdict(exp)
        style = "red bold" if not exp.ok else "green" if word == "ok" else "yellow"
        table.add_row(
            Text(exp.name),
            str(exp.matched),
            str(exp.passed),
            str(exp.failed),
            percent(exp.pass_rate),
            score_text(exp.mean_score),
            percent(exp.min_pass_rate),
            Text(word, style=style),
        )
    return table


def _inputs_line(result: EvalResult) -> str:
    inputs = result.inputs
    skipped = f" ({inputs.skipped_spans} unusable, skipped)" if inputs.skipped_spans else ""
    if inputs.base64_id_spans:
        skipped += f" ({inputs.base64_id_spans} with base64 ids, protobuf's JSON mapping, read as hex)"
    judge = "" if result.judge else "; LLM judges not run (use --judge)"
    return (
        f"toolscore eval: {len(inputs.trace_files)} trace file(s), {inputs.spans} spans{skipped}, "
        f"{inputs.runs} runs; {len(result.expectations)} expectation(s){judge}"
    )


def _run_line(ref: RunRef) -> str:
    source = f" in {ref.source}" if ref.source else ""
    calls = ", ".join(call["name"] for call in ref.calls) or "no calls"
    return f"{ref.label}{source}: {calls}"


def print_report(
    result: EvalResult, console: Console, *, show_unmatched: bool = False, max_failures: int | None = 20
) -> None:
    """Summary table, failing runs with their diffs (up to `max_failures`), unmatched runs, verdict."""
    console.print(Text(_inputs_line(result)))
    inputs = result.inputs
    for example in inputs.skipped_examples[:SKIPPED_SHOWN]:  # e.g. base64 ids, as protobuf's MessageToJson writes
        console.print(Text(f"  skipped {example}"), soft_wrap=True)
    if inputs.skipped_spans > SKIPPED_SHOWN:
        console.print(Text(f"  ... and {inputs.skipped_spans - SKIPPED_SHOWN} more skipped span(s)"))
    console.print(_table(result))
    failures = result.failures
    shown = failures if max_failures is None else failures[:max_failures]
    for run in shown:
        console.print(Text(f"FAIL {run.expectation}: {_run_line(run.run)}", style="bold"), soft_wrap=True)
        for scorer in failing_scorers(run):
            console.print(Text(f"  {scorer_line(scorer)}"), soft_wrap=True)
            if scorer.diff is not None:
                console.print(Text(render_diff(scorer.diff, indent="    ")), soft_wrap=True)
        console.print()
    if len(shown) < len(failures):
        console.print(Text(f"... and {len(failures) - len(shown)} more failing run(s) (see --junit or --json)"))
    if result.unmatched:
        hint = "" if show_unmatched else " (list them with --show-unmatched)"
        console.print(Text(f"Runs that matched no expectation: {len(result.unmatched)}{hint}"))
        if show_unmatched:
            for ref in result.unmatched:
                console.print(Text(f"  {_run_line(ref)}"), soft_wrap=True)
    for reason in result.nothing_scored:
        console.print(Text(f"NOTHING CHECKED {reason} (--allow-empty accepts it)", style="red bold"), soft_wrap=True)
    style = "red bold" if not result.ok else "yellow bold" if unscored(result) else "green bold"
    console.print(Text(f"{'PASS' if result.ok else 'FAIL'}: {headline(result)}", style=style))
