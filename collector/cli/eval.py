"""`toolscore eval`: score recorded traces against expectation files, for CI.

Exit status 0 when every expectation meets its threshold, 1 when one does not, 2 for bad input (an
unreadable trace file, invalid expectations, a report that cannot be written), with one line per
problem on stderr naming the file. The summary goes to stdout; the reports to the files asked for.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from toolscore.collector.evaluate import EvalResult
    from toolscore.collector.evaluate.baseline import BaselineComparison

__all__ = ["eval_command"]

LOG_WIDTH = 160
"""Columns of the summary when stdout is not a terminal (a CI log), so tables do not cut names."""

PROGRESS_MIN_BYTES = 1 << 20
"""Inputs smaller than this finish before a progress bar would be worth drawing."""


class _Bar:
    """The evaluation's phases as a transient rich progress bar on stderr."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task: TaskID | None = None

    def phase(self, name: str, total: int) -> None:
        if self._task is not None:
            self._progress.remove_task(self._task)
        self._task = self._progress.add_task(name, total=total)

    def advance(self, n: int = 1) -> None:
        if self._task is not None:
            self._progress.advance(self._task, n)


def _large(traces: tuple[str, ...]) -> bool:
    from toolscore.collector.evaluate.inputs import expand_trace_paths

    total = 0
    for path in expand_trace_paths(traces):
        try:
            total += path.stat().st_size
        except OSError:
            continue
    return total >= PROGRESS_MIN_BYTES


def _evaluate(traces: tuple[str, ...], expectations: tuple[str, ...], options: dict[str, Any]) -> EvalResult:
    from toolscore.collector.evaluate import run_eval

    if not (sys.stderr.isatty() and _large(traces)):
        return run_eval(traces, expectations, **options)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        return run_eval(traces, expectations, progress=_Bar(progress), **options)


def _write_reports(
    result: EvalResult,
    baseline: BaselineComparison | None,
    junit: str | None,
    markdown: str | None,
    json_path: str | None,
) -> None:
    from toolscore.collector.evaluate.report_json import write_json
    from toolscore.collector.evaluate.report_junit import write_junit
    from toolscore.collector.evaluate.report_markdown import write_markdown

    for path, write in ((junit, write_junit), (markdown, write_markdown), (json_path, write_json)):
        if path is None:
            continue
        try:
            write(result, path, baseline)
        except OSError as exc:
            click.echo(f"toolscore eval: {path}: cannot write: {exc.strerror or exc}", err=True)
            sys.exit(2)


@click.command("eval")
@click.option("--traces", "-t", "traces", multiple=True, metavar="PATH", help="Trace file or directory (repeatable).")
@click.argument("more_traces", nargs=-1, type=click.Path())
@click.option("--expectations", "-e", multiple=True, required=True, metavar="PATH",
              help="Expectation file or directory (repeatable).")  # fmt: skip
@click.option("--min-pass-rate", type=click.FloatRange(0, 1), default=1.0, show_default=True,
              help="Share of each expectation's runs that must pass (1 = every matched run).")  # fmt: skip
@click.option("--require-runs", is_flag=True, help="Fail an expectation that matched no run.")
@click.option("--allow-empty", is_flag=True,
              help="Pass when nothing was checked: no usable span, or no run matched an expectation file.")  # fmt: skip
@click.option("--judge", is_flag=True, help="Run LLM-judge scorers (they call the model; skipped otherwise).")
@click.option("--judge-max-concurrency", type=click.IntRange(min=1), default=4, show_default=True,
              help="Judge evaluations in flight at once.")  # fmt: skip
@click.option("--judge-calls-per-minute", type=click.FloatRange(min=0), default=60.0, show_default=True,
              help="Judge evaluations started per minute; past it a run gets a judge_over_budget error.")  # fmt: skip
@click.option("--judge-timeout-s", type=click.FloatRange(min=0, min_open=True), default=20.0, show_default=True,
              help="Longest one judge evaluation may take (judge_timeout error).")  # fmt: skip
@click.option("--junit", "junit", type=click.Path(dir_okay=False), help="Write JUnit XML to PATH.")
@click.option("--markdown", "markdown", type=click.Path(dir_okay=False), help="Write a Markdown summary to PATH.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write the full results as JSON to PATH.")
@click.option("--show-unmatched", is_flag=True, help="List the runs that matched no expectation.")
@click.option(
    "--baseline",
    "baseline",
    multiple=True,
    metavar="PATH",
    help="Traces of the version to compare against (repeatable): prints each expectation's pass rate "
    "in both sets and the difference, and exits 1 when one is lower by more than --margin.",
)
@click.option(
    "--margin",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="How much lower than the baseline's a pass rate may be (with --baseline).",
)
@click.option("--max-failures", type=click.IntRange(min=0), default=20, show_default=True,
              help="Failing runs shown in full in the summary.")  # fmt: skip
def eval_command(  # noqa: PLR0917  (click passes every option as a parameter)
    traces: tuple[str, ...],
    more_traces: tuple[str, ...],
    expectations: tuple[str, ...],
    min_pass_rate: float,
    require_runs: bool,
    allow_empty: bool,
    judge: bool,
    judge_max_concurrency: int,
    judge_calls_per_minute: float,
    judge_timeout_s: float,
    junit: str | None,
    markdown: str | None,
    json_path: str | None,
    show_unmatched: bool,
    max_failures: int,
    baseline: tuple[str, ...],
    margin: float,
) -> None:
    """Score the agent runs in OTLP trace files against expectations, as the live pipeline would.

    Traces: OTLP protobuf, OTLP/JSON or the JSON Lines of a Collector file exporter (gzip too);
    directories are searched for *.json, *.jsonl, *.pb, ... files. Exit status: 0 every expectation
    met its threshold, 1 one did not (or an expectation file matched no run), 2 bad input (or no usable span).
    """
    from toolscore.collector.evaluate import EvalInputError
    from toolscore.collector.evaluate.report_text import print_report
    from toolscore.collector.pipeline.config import JudgeBudgetConfig

    all_traces = traces + more_traces
    if not all_traces:
        raise click.UsageError("give trace files or directories with --traces")
    budget = JudgeBudgetConfig(
        max_concurrency=judge_max_concurrency, calls_per_minute=judge_calls_per_minute, timeout_s=judge_timeout_s
    )
    options: dict[str, Any] = {
        "judge": budget if judge else None,
        "min_pass_rate": min_pass_rate,
        "require_runs": require_runs,
        "allow_empty": allow_empty,
    }
    try:
        result = _evaluate(all_traces, expectations, options)
        before = _evaluate(baseline, expectations, options) if baseline else None
    except EvalInputError as exc:
        for problem in exc.problems:
            click.echo(f"toolscore eval: {problem}", err=True)
        sys.exit(2)
    from toolscore.collector.evaluate.baseline import comparison, exit_code

    against = comparison(result, before, margin) if before is not None else None
    _write_reports(result, against, junit, markdown, json_path)
    from rich.console import Console

    console = Console(width=None if sys.stdout.isatty() else LOG_WIDTH)
    print_report(result, console, show_unmatched=show_unmatched, max_failures=max_failures)
    if against is not None:
        from toolscore.collector.evaluate.report_baseline import print_baseline

        print_baseline(against, console)
    sys.exit(exit_code(result, against))
