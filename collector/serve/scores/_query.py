"""Reading the score store: recent runs with their calls and scores, filtered; for `toolscore runs` and the demo.

Reads open their own read-only connection (`sqlite_read`), so they never wait on the collector's writer (WAL
mode), and leave no file behind.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from toolscore.collector.sqlite_read import connect_read_only

__all__ = [
    "SampledOut",
    "StoredRun",
    "StoredScore",
    "filters",
    "has_column",
    "parse_since",
    "query_runs",
    "read_runs",
    "version_column",
]

LabelFilter = Literal["pass", "fail", "error"]

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d)$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class StoredScore:
    """One scorer's result for a run against one expectation version; a failure has `error_type`, no value."""

    expectation: str
    version: int
    scorer: str
    value: float | None
    label: str | None
    error_type: str | None
    explanation: str
    scored_ns: int


@dataclass(frozen=True)
class SampledOut:
    """A scorer of an expectation the run matched that did not score it: the trace id fell outside its `sample_rate`."""

    expectation: str
    version: int
    scorer: str
    sample_rate: float


@dataclass(frozen=True)
class StoredRun:
    """A scored run as the store keeps it: calls capped (`calls_total` is the real count)."""

    trace_id: str
    span_id: str
    agent: str | None
    calls: list[dict[str, Any]]
    calls_total: int
    incomplete: bool
    scored_ns: int
    scores: tuple[StoredScore, ...]
    agent_version: str | None = None
    """The run's agent version (`pipeline.agent_version`); None when it had none, or was stored before
    the store kept versions."""
    request: str | None = None
    """The user's request as extracted for the `input` selector (None when unknown, or stored before it was kept)."""
    row_id: int = 0
    """The store's id of the run: a later run has a higher one (the page pages and polls by it)."""
    sampled_out: tuple[SampledOut, ...] = ()
    """The matched expectations' scorers sampled out of this run (none in a store written before they were kept)."""
    attributes: dict[str, Any] = field(default_factory=dict)
    """The run span's scalar attributes as the store keeps them (`_run_values`), for `match` selectors."""
    resource: dict[str, Any] = field(default_factory=dict)
    """The run's resource attributes, kept alike."""

    @property
    def sampled(self) -> bool:
        """Whether some scorer of an expectation it matched did not run on it (its `sample_rate`)."""
        return bool(self.sampled_out)


_NS_RANGE = (-(2**63), 2**63 - 1)
"""What the store's integer columns hold: a moment beyond it (`--since 1000000d`) means all runs, or none."""


def parse_since(text: str, now_ns: int | None = None) -> int:
    """`10m`, `2h`, `30s`, `1d` ago, or an ISO 8601 time (naive = local time), as ns since the epoch."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    match = _DURATION.match(text.strip())
    if match:
        return max(_NS_RANGE[0], now_ns - int(float(match.group(1)) * _UNIT_S[match.group(2)] * 1e9))
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r}: expected a duration like 10m, 2h, 1d or an ISO time") from None
    try:
        ns = int(moment.timestamp() * 1e9)
    except (OverflowError, ValueError):  # year 1 west of UTC, year 9999 east of it
        ns = _NS_RANGE[0] if moment.year < 1970 else _NS_RANGE[1]
    return min(max(ns, _NS_RANGE[0]), _NS_RANGE[1])


def query_runs(
    path: str | Path,
    *,
    agent: str | None = None,
    expectation: str | None = None,
    label: LabelFilter | None = None,
    since_ns: int | None = None,
    limit: int = 50,
    agent_version: str | None = None,
) -> list[StoredRun]:
    """The most recent runs first; `expectation`/`label` keep runs with at least one matching score.

    Raises FileNotFoundError when there is no store at `path`, sqlite3.DatabaseError when the file there
    is not one.
    """
    with reading(path) as db:
        where, params = filters(agent, expectation, label, since_ns)
        if agent_version is not None:
            where += (" AND " if where else "WHERE ") + f"{version_column(db)} = ?"
            params.append(agent_version)
        return read_runs(db, where, params, "ORDER BY scored_ns DESC, id DESC LIMIT ?", limit)


@contextmanager
def reading(path: str | Path) -> Iterator[sqlite3.Connection]:
    """The store at `path`, read-only (safe while `serve` writes it); FileNotFoundError when there is none."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"no score store at {path}")
    db = connect_read_only(path)
    try:
        yield db
    finally:
        db.close()


def read_runs(db: sqlite3.Connection, where: str, params: list[Any], tail: str, *more: Any) -> list[StoredRun]:
    """The runs `where` selects (`tail`: order and limit, with `more` parameters), each with its scores."""
    version = version_column(db)
    request = "request" if has_column(db, "runs", "request") else "NULL"
    values = "values_json" if has_column(db, "runs", "values_json") else "NULL"
    rows = db.execute(
        "SELECT id, trace_id, span_id, agent, calls_json, calls_total, incomplete, scored_ns,"
        f" {version}, {request}, {values} FROM runs {where} {tail}",
        (*params, *more),
    ).fetchall()
    ids = [row[0] for row in rows]
    scores, sampled = _scores(db, ids), _sampled(db, ids)
    kept = {row[0]: json.loads(row[10]) if row[10] else {} for row in rows}
    return [
        StoredRun(
            trace,
            span,
            name,
            json.loads(calls),
            total,
            bool(incomplete),
            scored,
            tuple(scores.get(rid, ())),
            agent_v,
            text,
            rid,
            tuple(sampled.get(rid, ())),
            kept[rid].get("attributes", {}),
            kept[rid].get("resource", {}),
        )
        for rid, trace, span, name, calls, total, incomplete, scored, agent_v, text, _ in rows
    ]


def version_column(db: sqlite3.Connection) -> str:
    """`agent_version`, or `NULL` in a store of schema 1 that no `serve` has upgraded yet (reads never write)."""
    return "agent_version" if has_column(db, "runs", "agent_version") else "NULL"


def has_column(db: sqlite3.Connection, table: str, column: str) -> bool:
    """Whether a store (maybe written by an older toolscore) has `column`: added columns are read as NULL without."""
    return any(row[1] == column for row in db.execute(f"PRAGMA table_info({table})"))


def filters(
    agent: str | None, expectation: str | None, label: str | None, since_ns: int | None
) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if agent is not None:
        clauses.append("agent = ?")
        params.append(agent)
    if since_ns is not None:
        clauses.append("scored_ns >= ?")
        params.append(since_ns)
    score_clauses: list[str] = []
    if expectation is not None:
        score_clauses.append("expectation = ?")
        params.append(expectation)
    if label == "error":
        score_clauses.append("error_type IS NOT NULL")
    elif label is not None:
        score_clauses.append("label = ?")
        params.append(label)
    if score_clauses:
        clauses.append(f"id IN (SELECT run_id FROM scores WHERE {' AND '.join(score_clauses)})")
    return ("WHERE " + " AND ".join(clauses) if clauses else ""), params


def _scores(db: sqlite3.Connection, run_ids: list[int]) -> dict[int, list[StoredScore]]:
    out: dict[int, list[StoredScore]] = {}
    if not run_ids:
        return out
    marks = ",".join("?" * len(run_ids))
    for run_id, *fields in db.execute(
        "SELECT run_id, expectation, version, scorer, value, label, error_type, explanation, scored_ns"
        f" FROM scores WHERE run_id IN ({marks}) ORDER BY rowid",
        run_ids,
    ):
        out.setdefault(run_id, []).append(StoredScore(*fields))
    return out


def _sampled(db: sqlite3.Connection, run_ids: list[int]) -> dict[int, list[SampledOut]]:
    """The runs' sampled-out scorers; none in a store older than the `sampled` table (reads never write)."""
    out: dict[int, list[SampledOut]] = {}
    if (
        not run_ids
        or not db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sampled'").fetchone()
    ):
        return out
    marks = ",".join("?" * len(run_ids))
    for run_id, *fields in db.execute(
        "SELECT run_id, expectation, version, scorer, sample_rate FROM sampled"
        f" WHERE run_id IN ({marks}) ORDER BY rowid",
        run_ids,
    ):
        out.setdefault(run_id, []).append(SampledOut(*fields))
    return out
