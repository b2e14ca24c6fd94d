"""`toolscore runs`: recent runs scored by `toolscore serve`, with their calls and scores, from the score store.

Reads the store's SQLite file directly (read-only, safe while the collector writes). Exit status 0 with
the runs found (possibly none), 1 when there is no store at `--db` (or the file there is not one: a
registry given for it is named as such), 2 when a filter is malformed.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import click

if TYPE_CHECKING:  # imported when the command runs, so `toolscore --help` stays fast
    from toolscore.collector.serve.scores._query import StoredRun

__all__ = ["runs_command"]

DEFAULT_DB = ".toolscore/scores.db"
_CALL_CHARS = 48
"""Longest a call is shown in the table (name and compact arguments); `-o json` has them whole."""


def _call_text(call: dict[str, Any]) -> str:
    text = str(call["name"])
    if "args" in call:
        args = call["args"]
        text += "(" + (args if isinstance(args, str) else json.dumps(args, separators=(",", ":"))) + ")"
    return text if len(text) <= _CALL_CHARS else text[: _CALL_CHARS - 1] + "…"


_REQUEST_CHARS = 40
"""Longest a request's first line is shown in the table; `-o json` has it whole."""
_WHY_CHARS = 80
"""Longest a failing score's explanation is shown in the table."""


def _cut(text: str, width: int) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def _time(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _table(runs: list[StoredRun]) -> str:
    rows = [["SCORED", "AGENT", "REQUEST", "RUN", "CALLS", "EXPECTATION", "SCORER", "SCORE", "LABEL", "WHY (failing)"]]
    for run in runs:
        calls = ", ".join(_call_text(call) for call in run.calls) or "-"
        if run.calls_total > len(run.calls):
            calls += f" (+{run.calls_total - len(run.calls)} more)"
        request = _cut(run.request, _REQUEST_CHARS) if run.request else "-"
        head = [_time(run.scored_ns), run.agent or "-", request, f"{run.trace_id[:8]}/{run.span_id[:8]}", calls]
        for index, score in enumerate(run.scores or (None,)):
            cells = head if index == 0 else [""] * len(head)
            if score is None:
                rows.append([*cells, "-", "-", "-", "-", ""])
            elif score.error_type is not None:
                why = _cut(score.explanation, _WHY_CHARS)
                rows.append([*cells, score.expectation, score.scorer, "-", f"error: {score.error_type}", why])
            else:
                why = _cut(score.explanation, _WHY_CHARS) if score.label != "pass" else ""
                rows.append([*cells, score.expectation, score.scorer, f"{score.value:.3f}", score.label or "-", why])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows)


def _json(runs: list[StoredRun]) -> str:
    out = []
    for run in runs:
        item: dict[str, Any] = {
            "trace_id": run.trace_id,
            "span_id": run.span_id,
            "agent": run.agent,
            "request": run.request,
            "scored_at": datetime.fromtimestamp(run.scored_ns / 1e9).astimezone().isoformat(),
            "incomplete": run.incomplete,
            "calls": run.calls,
            "calls_total": run.calls_total,
            "scores": [
                {
                    "expectation": s.expectation,
                    "version": s.version,
                    "scorer": s.scorer,
                    "value": s.value,
                    "label": s.label,
                    "error_type": s.error_type,
                    "explanation": s.explanation,
                }
                for s in run.scores
            ],
        }
        out.append(item)
    return json.dumps(out, indent=2, ensure_ascii=False)


@click.command("runs")
@click.option("--db", default=DEFAULT_DB, show_default=True, help="The score store `toolscore serve` writes.")
@click.option("--agent", help="Only runs of this agent (gen_ai.agent.name).")
@click.option("--expectation", help="Only runs scored against this expectation.")
@click.option("--label", type=click.Choice(["pass", "fail", "error"]), help="Only runs with a score of this verdict.")
@click.option("--since", help="Only runs scored since: a duration back (30s, 10m, 2h, 1d) or an ISO time.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="Most runs to list.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def runs_command(
    *,
    db: str,
    agent: str | None,
    expectation: str | None,
    label: Literal["pass", "fail", "error"] | None,
    since: str | None,
    limit: int,
    output: str,
) -> None:
    """List recent scored runs, newest first, with their tool calls and scores."""
    from toolscore.collector.serve.scores._query import parse_since, query_runs

    try:
        since_ns = parse_since(since) if since else None
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--since") from None
    try:
        runs = query_runs(
            db,
            agent=agent,
            expectation=expectation,
            label=label,
            since_ns=since_ns,
            limit=limit,
        )
    except FileNotFoundError:
        raise click.ClickException(
            f"no score store at {db} (is `toolscore serve` writing elsewhere? see --db)"
        ) from None
    except sqlite3.DatabaseError as error:
        from toolscore.collector.cli.store_files import store_kind

        if store_kind(db) == "registry":
            raise click.ClickException(
                f"{db} is a toolscore registry (the expectations `toolscore expectations` manages), not a score "
                f"store: give the collector's score_store.path with --db (`toolscore serve` keeps it in {DEFAULT_DB})"
            ) from None
        raise click.ClickException(f"{db} is not a toolscore score store: {error}") from None
    if output == "json":
        click.echo(_json(runs))
    elif runs:
        click.echo(_table(runs))
    else:
        click.echo("no scored runs match", err=True)
