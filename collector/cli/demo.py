"""`toolscore demo`: send a handful of agent runs to a running `toolscore serve` and show their scores.

The runs (collector/cli/demo_runs.py) go through the real OpenTelemetry SDK OTLP/gRPC exporter, exactly
as an instrumented agent's would; the scores are read back from the collector's score store (the SQLite
file `score_store.path`, `.toolscore/scores.db` by default) once the collector has scored them.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from toolscore.collector.sqlite_read import connect_read_only

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from rich.table import Table

__all__ = ["DemoScore", "demo_command", "read_scores", "scores_table", "send_demo_runs"]

_RUN_SPAN = "invoke_agent"
_CONNECT_TIMEOUT_S = 3.0
_START_HINT = "is `toolscore serve` running there? (start it with `make run`)"


@dataclass(frozen=True)
class DemoScore:
    """One score of one demo run, as the collector stored it."""

    run: str
    agent: str
    expectation: str
    scorer: str
    value: float | None
    label: str | None
    explanation: str


def send_demo_runs(endpoint: str, timeout_s: float = 10.0) -> dict[tuple[str, str], str]:
    """Export every demo trace; returns the run spans sent, `(trace id, span id) → run title`."""
    import grpc  # the OTLP exporter and the SDK load only when the command runs, not for `toolscore --help`
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    from toolscore.collector.cli.demo_runs import DEMO_RUNS, make_demo_spans

    with grpc.insecure_channel(endpoint) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=min(timeout_s, _CONNECT_TIMEOUT_S))
        except grpc.FutureTimeoutError:
            raise click.ClickException(f"nothing answers on {endpoint}: {_START_HINT}") from None
    exporter = OTLPSpanExporter(endpoint=endpoint, insecure=True, timeout=timeout_s)
    runs: dict[tuple[str, str], str] = {}
    try:
        for demo, spans in zip(DEMO_RUNS, make_demo_spans(), strict=True):
            if exporter.export(spans) is not SpanExportResult.SUCCESS:
                raise click.ClickException(f"could not export to {endpoint}: {_START_HINT}")
            nested = iter(demo.nested)
            for span in _run_spans(spans):
                title = demo.title if span.parent is None else f"nested: {next(nested, span.name)}"
                runs[(f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}")] = title
    finally:
        exporter.shutdown()
    return runs


def _run_spans(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    """Run spans, outer before nested (the SDK hands them over in end order, nested first)."""
    found = [s for s in spans if (s.attributes or {}).get("gen_ai.operation.name") == _RUN_SPAN]
    return sorted(found, key=lambda s: s.start_time or 0)


def read_scores(db: Path, runs: dict[tuple[str, str], str]) -> list[DemoScore]:
    """The stored scores of `runs`, in the order the runs were sent."""
    if not db.exists():
        return []
    order = {key: i for i, key in enumerate(runs)}
    marks = ",".join("?" * len({trace for trace, _ in runs}))
    query = (
        "SELECT r.trace_id, r.span_id, r.agent, s.expectation, s.scorer, s.value, s.label, s.error_type, s.explanation"
        f" FROM runs r JOIN scores s ON s.run_id = r.id WHERE r.trace_id IN ({marks}) ORDER BY s.rowid"
    )
    conn = connect_read_only(db)
    try:
        rows = conn.execute(query, sorted({trace for trace, _ in runs})).fetchall()
    finally:
        conn.close()
    scores = [
        (order[(trace, span)], DemoScore(runs[(trace, span)], agent or "", exp, scorer, value, label or error, text))
        for trace, span, agent, exp, scorer, value, label, error, text in rows
        if (trace, span) in order
    ]
    return [score for _, score in sorted(scores, key=lambda pair: pair[0])]


def _wait_for_scores(db: Path, runs: dict[tuple[str, str], str], timeout_s: float) -> list[DemoScore]:
    """Poll the store until every run has scores and no new one arrived for a moment, or time runs out."""
    deadline = time.monotonic() + timeout_s
    scores: list[DemoScore] = []
    while time.monotonic() < deadline:
        try:
            latest = read_scores(db, runs)
        except sqlite3.Error:  # the collector is creating the file
            latest = []
        if {s.run for s in latest} == set(runs.values()) and len(latest) == len(scores):
            return latest
        scores = latest
        time.sleep(0.3)
    return scores


def scores_table(scores: list[DemoScore]) -> Table:
    """One section per run, one row per score; a run's name and agent only on its first row, an
    expectation's name on the first row of its scores (a run several expectations select has a group each)."""
    from rich.table import Table

    table = Table(title="toolscore demo: scores of the runs just sent", title_justify="left")
    for column in ("run", "expectation", "scorer", "score"):
        table.add_column(column, no_wrap=column in ("scorer", "score"))
    table.add_column("explanation", overflow="fold")
    previous: DemoScore | None = None
    for s in scores:
        first = previous is None or s.run != previous.run
        if previous is not None and first:
            table.add_section()
        new_expectation = first or (previous is not None and s.expectation != previous.expectation)
        previous = s
        run = f"{s.run.strip()}\n[dim]{s.agent}[/]" if first else ""
        value = "-" if s.value is None else f"{s.value:.3f}".rstrip("0").rstrip(".")
        verdict = f"[{'green' if s.label == 'pass' else 'red'}]{value} {s.label}[/]"
        table.add_row(run, s.expectation if new_expectation else "", s.scorer, verdict, s.explanation)
    return table


@click.command("demo")
@click.option("--endpoint", default="127.0.0.1:4317", show_default=True, help="OTLP/gRPC endpoint of the collector.")
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path(".toolscore/scores.db"),
    show_default=True,
    help="The collector's score store (its `score_store.path`).",
)
@click.option("--timeout", "timeout_s", default=20.0, show_default=True, help="Seconds to wait for the scores.")
def demo_command(endpoint: str, db: Path, timeout_s: float) -> None:
    """Send a few agent runs (right, wrong, nested, parallel calls) to a running `toolscore serve`; print scores.

    Start the collector first (`make run`, or `toolscore serve` in this directory): it must load
    deploy/expectations/demo.yaml, which says what the demo agents should do.
    """
    runs = send_demo_runs(endpoint)
    click.echo(f"sent {len(runs)} agent runs to {endpoint}; waiting for their scores in {db} ...", err=True)
    scores = _wait_for_scores(db, runs, timeout_s)
    from rich.console import Console

    if scores:  # an empty table would only hide the message below
        Console(width=None if sys.stdout.isatty() else 160).print(scores_table(scores))
    missing = sorted(set(runs.values()) - {s.run for s in scores})
    if not db.exists():
        click.echo(
            f"no score store at {db} after {timeout_s:g} s: pass the collector's `score_store.path` as --db "
            "(its working directory's .toolscore/scores.db by default)",
            err=True,
        )
        sys.exit(1)
    if missing:
        click.echo(
            f"no scores after {timeout_s:g} s for: {', '.join(missing)}. Does the collector load "
            "deploy/expectations/demo.yaml? (its `ready` log line says how many expectations it has)",
            err=True,
        )
        sys.exit(1)
