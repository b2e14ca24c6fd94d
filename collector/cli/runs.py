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

from toolscore.collector.cli.privacy_options import privacy_from_options, privacy_options

if TYPE_CHECKING:  # imported when the command runs, so `toolscore --help` stays fast
    from toolscore.collector.extract.privacy import Masker
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


def _time(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _table(runs: list[StoredRun]) -> str:
    rows = [["SCORED", "AGENT", "RUN", "CALLS", "EXPECTATION", "SCORER", "SCORE", "LABEL"]]
    for run in runs:
        calls = ", ".join(_call_text(call) for call in run.calls) or "-"
        if run.calls_total > len(run.calls):
            calls += f" (+{run.calls_total - len(run.calls)} more)"
        head = [_time(run.scored_ns), run.agent or "-", f"{run.trace_id[:8]}/{run.span_id[:8]}", calls]
        for index, score in enumerate(run.scores or (None,)):
            cells = head if index == 0 else [""] * len(head)
            if score is None:
                rows.append([*cells, "-", "-", "-", "-"])
            elif score.error_type is not None:
                rows.append([*cells, score.expectation, score.scorer, "-", f"error: {score.error_type}"])
            else:
                rows.append([*cells, score.expectation, score.scorer, f"{score.value:.3f}", score.label or "-"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows)


def _json(runs: list[StoredRun]) -> str:
    out = []
    for run in runs:
        item: dict[str, Any] = {
            "trace_id": run.trace_id,
            "span_id": run.span_id,
            "agent": run.agent,
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
@privacy_options
def runs_command(
    *,
    db: str,
    agent: str | None,
    expectation: str | None,
    label: Literal["pass", "fail", "error"] | None,
    since: str | None,
    limit: int,
    output: str,
    **privacy: Any,
) -> None:
    """List recent scored runs, newest first, with their tool calls and scores.

    The store holds what `toolscore serve` kept (masked by its privacy settings); the privacy options mask
    what is shown here too, for a store written without them (docs/security.md)."""
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
    settings = privacy_from_options(**privacy)
    if settings.active:
        from toolscore.collector.extract.privacy import masker_for

        masker = masker_for(settings)
        runs = [_masked(run, masker) for run in runs]
    if output == "json":
        click.echo(_json(runs))
    elif runs:
        click.echo(_table(runs))
    else:
        click.echo("no scored runs match", err=True)


def _masked(run: StoredRun, masker: Masker) -> StoredRun:
    """A stored run as the privacy settings would have kept it: arguments masked, and each masked value's text
    replaced by its marker in the explanations (which quote arguments); under `names_only`, no explanation."""
    import dataclasses

    replaced: dict[str, str] = {}
    calls = []
    for call in run.calls:
        if "args" not in call:
            calls.append(call)
            continue
        args = call["args"]
        masked = masker.arguments(args) if not isinstance(args, str) else masker.text(args)
        _collect(args, masked, replaced)
        calls.append({**call, "args": masked})
    scores = tuple(
        dataclasses.replace(score, explanation=_replaced(score.explanation, replaced, masker)) for score in run.scores
    )
    return dataclasses.replace(run, calls=calls, scores=scores)


def _collect(raw: Any, masked: Any, out: dict[str, str]) -> None:
    """The text of each value `masked` masked in `raw`, with its marker."""
    if isinstance(raw, dict) and isinstance(masked, dict):
        for key, value in raw.items():
            _collect(value, masked.get(key), out)
    elif isinstance(raw, list) and isinstance(masked, list):
        for item, masked_item in zip(raw, masked, strict=False):
            _collect(item, masked_item, out)
    elif raw is not None and masked != raw and isinstance(masked, str):
        text = raw if isinstance(raw, str) else json.dumps(raw, sort_keys=True, separators=(",", ":"))
        if text:
            out[text] = masked


def _replaced(text: str, replaced: dict[str, str], masker: Masker) -> str:
    if masker.names_only:
        return "(not shown: privacy.content is names_only)" if text else text
    for raw in sorted(replaced, key=len, reverse=True):
        text = text.replace(raw, replaced[raw]).replace(json.dumps(raw)[1:-1], replaced[raw])
    return masker.text(text) or ""
