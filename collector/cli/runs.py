"""`toolscore runs`: recent runs scored by `toolscore serve`, with their calls and scores, from the score store.

Reads the store's SQLite file directly (read-only, safe while the collector writes). Exit status 0 with
the runs found (possibly none), 1 when there is no store at `--db` (or the file there is not one: a
registry given for it is named as such), 2 when a filter is malformed. `--by-version` lists each agent
version's pass rate per expectation instead (`runs_versions`), and exits 1 when one is worse than the
version before it.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import click

from toolscore.collector.cli.privacy_options import privacy_from_options, privacy_options

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
    """The runs, a VERSION column after AGENT when any of them has an agent version."""
    versions = any(run.agent_version is not None for run in runs)
    rows = [["SCORED", "AGENT", *(["VERSION"] if versions else []), "REQUEST", "RUN", "CALLS", "EXPECTATION", "SCORER"]]
    rows[0] += ["SCORE", "LABEL", "WHY (failing)"]
    for run in runs:
        calls = ", ".join(_call_text(call) for call in run.calls) or "-"
        if run.calls_total > len(run.calls):
            calls += f" (+{run.calls_total - len(run.calls)} more)"
        version = [run.agent_version or "-"] if versions else []
        request = _cut(run.request, _REQUEST_CHARS) if run.request else "-"
        head = [_time(run.scored_ns), run.agent or "-", *version, request, f"{run.trace_id[:8]}/{run.span_id[:8]}"]
        head.append(calls)
        for index, score in enumerate(run.scores or (None,)):
            cells = head if index == 0 else [""] * len(head)
            if score is None:
                if run.sampled_out:
                    continue  # the sampled-out rows below fill the run's first line
                rows.append([*cells, "-", "-", "-", "-", ""])
            elif score.error_type is not None:
                why = _cut(score.explanation, _WHY_CHARS)
                rows.append([*cells, score.expectation, score.scorer, "-", f"error: {score.error_type}", why])
            else:
                why = _cut(score.explanation, _WHY_CHARS) if score.label != "pass" else ""
                rows.append([*cells, score.expectation, score.scorer, f"{score.value:.3f}", score.label or "-", why])
        for index, out in enumerate(run.sampled_out):
            cells = head if index == 0 and not run.scores else [""] * len(head)
            why = f"not run on this run (sample_rate {out.sample_rate:g})"
            rows.append([*cells, out.expectation, out.scorer, "-", "sampled", why])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows)


def _json(runs: list[StoredRun]) -> str:
    out = []
    for run in runs:
        item: dict[str, Any] = {
            "trace_id": run.trace_id,
            "span_id": run.span_id,
            "agent": run.agent,
            "agent_version": run.agent_version,
            "request": run.request,
            "scored_at": datetime.fromtimestamp(run.scored_ns / 1e9).astimezone().isoformat(),
            "incomplete": run.incomplete,
            "calls": run.calls,
            "calls_total": run.calls_total,
            "sampled_out": [
                {"expectation": s.expectation, "version": s.version, "scorer": s.scorer, "sample_rate": s.sample_rate}
                for s in run.sampled_out
            ],
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
@click.option("--agent-version", help="Only runs of this agent version (toolscore.agent.version).")
@click.option("--label", type=click.Choice(["pass", "fail", "error"]), help="Only runs with a score of this verdict.")
@click.option("--since", help="Only runs scored since: a duration back (30s, 10m, 2h, 1d) or an ISO time.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="Most runs to list.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option(
    "--by-version",
    is_flag=True,
    help="Per agent, expectation and agent version: runs, pass rate, mean score, first and last run, and the "
    "difference from the version before it (exit 1 when one is lower by more than --margin).",
)
@click.option("--margin", type=click.FloatRange(0, 1), default=0.1, show_default=True,
              help="With --by-version: how much lower than the previous version's a pass rate may be.")  # fmt: skip
@click.option("--min-runs", type=click.IntRange(min=1), default=20, show_default=True,
              help="With --by-version: runs both versions need before a drop counts.")  # fmt: skip
@privacy_options
@click.pass_context
def runs_command(
    ctx: click.Context,
    /,
    *,
    db: str,
    agent: str | None,
    agent_version: str | None,
    expectation: str | None,
    label: Literal["pass", "fail", "error"] | None,
    since: str | None,
    limit: int,
    output: str,
    by_version: bool,
    margin: float,
    min_runs: int,
    **privacy: Any,
) -> None:
    """List recent scored runs, newest first, with their tool calls and scores (or, with --by-version, each
    agent version's pass rate per expectation against the version before it).

    The store holds what `toolscore serve` kept (masked by its privacy settings); the privacy options mask
    what is shown here too, for a store written without them (docs/security.md)."""
    from toolscore.collector.serve.scores import parse_since, query_runs

    _check_modes(ctx, by_version)
    try:
        since_ns = parse_since(since) if since else None
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--since") from None
    filters: dict[str, Any] = {
        "agent": agent,
        "agent_version": agent_version,
        "expectation": expectation,
        "since_ns": since_ns,
    }
    try:
        if by_version:
            _by_version(db, filters, output, margin, min_runs)
            return
        runs = query_runs(db, label=label, limit=limit, **filters)
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
        from toolscore.collector.cli.runs_privacy import masked_run
        from toolscore.collector.extract.privacy import masker_for

        runs = [masked_run(run, masker_for(settings)) for run in runs]
    _print_runs(runs, output)


def _print_runs(runs: list[StoredRun], output: str) -> None:
    if output == "json":
        click.echo(_json(runs))
    elif runs:
        click.echo(_table(runs))
    else:
        click.echo("no scored runs match", err=True)


_RUNS_ONLY = ("label", "limit")
_VERSIONS_ONLY = ("margin", "min_runs")


def _check_modes(ctx: click.Context, by_version: bool) -> None:
    """An option of the other mode, given explicitly, is a usage error rather than silently ignored."""
    from click.core import ParameterSource

    wrong = _RUNS_ONLY if by_version else _VERSIONS_ONLY
    given = [name for name in wrong if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE]
    if given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        raise click.UsageError(f"{flags}: {'not' if by_version else 'only'} with --by-version")


def _by_version(db: str, filters: dict[str, Any], output: str, margin: float, min_runs: int) -> None:
    from toolscore.collector.cli.runs_versions import versions_json, versions_summary, versions_table
    from toolscore.collector.serve.scores import compare_versions, query_versions

    rows = compare_versions(query_versions(db, **filters), margin, min_runs)
    if output == "json":
        click.echo(versions_json(rows))
    elif rows:
        click.echo(versions_table(rows))
        click.echo(versions_summary(rows, margin, min_runs))
    else:
        click.echo("no scored runs match", err=True)
    if any(row.worse for row in rows):
        raise SystemExit(1)
