"""The embedded score store: every scored run, its calls and its scores in SQLite, bounded by count and age.

`record` runs on the pipeline's worker thread and only appends to a bounded deque; one writer thread
owns the connection and writes what gathered in one transaction every `write_interval_ms`, then
applies the retention. WAL mode lets `toolscore runs` (`score_query`) read while the collector writes.

    runs(id, trace_id, span_id, agent, calls_json, calls_total, incomplete, scored_ns, agent_version, request,
         values_json)
    scores(run_id → runs.id, expectation, version, scorer, value, label, error_type, explanation, scored_ns)
    sampled(run_id → runs.id, expectation, version, scorer, sample_rate): the scorers sampled out of the run

Every index grows at one end: run ids are given by the writer in the order runs are recorded, and
both retentions delete the lowest ids. A run's later results (a judge's, after the others were
written) find its row through the writer's map of the runs it still keeps, not through an index
on (trace id, span id), where random trace ids make every insert and delete touch a page anywhere
in the file, and a retention that walks rows instead of cutting by id costs the writer as much again.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from toolscore.collector.registry import Expectation
from toolscore.collector.serve.scores._calls_json import calls_json
from toolscore.collector.serve.scores._run_values import run_values_json, sampled_out_rows
from toolscore.collector.telemetry.base import NoopTelemetry
from toolscore.collector.utf8 import valid_utf8
from toolscore.scorers._model import AgentRun, Score, ScoreResult

__all__ = ["SCHEMA", "TABLES", "ScoreStore", "ScoreStoreConfig", "ScoreStoreTelemetry"]

_log = logging.getLogger("toolscore.serve.scores")

_RUNS_COLUMNS_V1 = """(
    id INTEGER PRIMARY KEY,
    trace_id TEXT NOT NULL,
    span_id TEXT NOT NULL,
    agent TEXT,
    calls_json TEXT NOT NULL,
    calls_total INTEGER NOT NULL,
    incomplete INTEGER NOT NULL,
    scored_ns INTEGER NOT NULL
)"""
_RUNS_COLUMNS = _RUNS_COLUMNS_V1[:-2] + ",\n    agent_version TEXT,\n    values_json TEXT\n)"
SCHEMA_VERSION = 3
"""0: a store written before run ids were the writer's, with a unique index on (trace_id, span_id).
1: before runs had their agent version (`runs.agent_version`).
2: before runs kept their selectable attributes (`runs.values_json`) and their sampled-out scorers (`sampled`)."""

TABLES = ("runs", "scores")
"""The tables `SCHEMA` creates, by which the CLI tells a score store file from a registry (`cli.store_files`)."""

_SAMPLED_TABLE = """CREATE TABLE IF NOT EXISTS sampled (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    expectation TEXT NOT NULL,
    version INTEGER NOT NULL,
    scorer TEXT NOT NULL,
    sample_rate REAL NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS sampled_run ON sampled (run_id, expectation, version, scorer);"""
"""A row per scorer an expectation the run matched did not run on it (its `sample_rate`); unique, since a run's
late results (a judge's) name the same sampled-out scorers again."""

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS runs {_RUNS_COLUMNS};
CREATE INDEX IF NOT EXISTS runs_scored ON runs (scored_ns);
CREATE TABLE IF NOT EXISTS scores (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    expectation TEXT NOT NULL,
    version INTEGER NOT NULL,
    scorer TEXT NOT NULL,
    value REAL,
    label TEXT,
    error_type TEXT,
    explanation TEXT NOT NULL,
    scored_ns INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS scores_run ON scores (run_id);
{_SAMPLED_TABLE}
PRAGMA user_version = {SCHEMA_VERSION};
"""

_MIGRATE_FROM_0 = f"""
BEGIN IMMEDIATE;
CREATE TABLE runs_v1 {_RUNS_COLUMNS_V1};
INSERT INTO runs_v1 SELECT id, trace_id, span_id, agent, calls_json, calls_total, incomplete, scored_ns FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v1 RENAME TO runs;
PRAGMA user_version = 1;
COMMIT;
"""
"""SQLite's way to change a table (create, copy, drop, rename), run with foreign keys off: with them on,
dropping the old table would cascade into `scores`. `SCHEMA` then adds the index the drop took."""

_MIGRATE_FROM_1 = """
BEGIN IMMEDIATE;
ALTER TABLE runs ADD COLUMN agent_version TEXT;
PRAGMA user_version = 2;
COMMIT;
"""
"""A column added at the end: the runs stored before it have no version (NULL), as a run that had none."""

_MIGRATE_FROM_2 = f"""
BEGIN IMMEDIATE;
ALTER TABLE runs ADD COLUMN values_json TEXT;
{_SAMPLED_TABLE}
PRAGMA user_version = 3;
COMMIT;
"""
"""The runs stored before have no attributes kept (NULL) and no sampled-out scorers on record."""

_MIGRATIONS = {0: _MIGRATE_FROM_0, 1: _MIGRATE_FROM_1, 2: _MIGRATE_FROM_2}
"""Each step takes a store from its schema version to the next, in order, each in its own transaction."""

_ADDED_COLUMNS = (("runs", "request", "TEXT"),)
"""Columns added apart from the numbered migrations, each with its table and type: added where missing (a store
written before them), whatever `user_version` says, so additions made apart from each other merge without
renumbering. Readers treat them as NULL in the rows written before."""
_MAX_REQUEST_CHARS = 2_000
"""Longest user request kept per run (the page and `runs` show its first line); longer is cut and marked `…`."""

_RunRow = tuple[str, str, str | None, str, int, int, int, str | None, str | None, str | None]
"""A run's row without its id: trace_id, span_id, agent, calls_json, calls_total, incomplete, scored_ns,
agent_version, request, values_json."""
_Pending = tuple[_RunRow, tuple[Any, ...] | None, tuple[tuple[Any, ...], ...]]
"""A run's row, one score's row (None: an expectation all of whose scorers were sampled out), and the
sampled-out scorers' rows (`_run_values.sampled_out_rows`), without the run id."""
_RETAIN_EVERY_S = 10.0
"""Age retention also runs this often when nothing is written."""


class ScoreStoreTelemetry(Protocol):
    """What the store reports (`toolscore.score_store.dropped`); never raises, never blocks."""

    def score_results_dropped(self, n: int, reason: str) -> None:
        """`n` results were not stored: ``queue_full`` (the writer is behind), ``write_failed`` (SQLite
        refused them), ``shutdown`` (recorded after `close`)."""


class ScoreStoreConfig(BaseModel):
    """Where scored runs are kept for `toolscore runs`, and for how long."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = Field(default=True, description="Keep scored runs in the store at all. Default: true.")
    path: str = Field(
        default=".toolscore/scores.db",
        description="SQLite file (created with its directory), not the registry's (`registry.store.path`); "
        "`toolscore runs --db` reads it. "
        "Default: .toolscore/scores.db.",
    )
    max_runs: int = Field(
        default=10_000, ge=1, description="Runs kept; the oldest beyond this are deleted. Default: 10000."
    )
    max_age_s: float = Field(
        default=7 * 24 * 3600.0,
        gt=0,
        description="Runs scored longer ago than this are deleted (seconds). Default: 604800.",
    )
    max_calls: int = Field(default=50, ge=0, description="Calls kept per run (the total is kept too). Default: 50.")
    max_args_chars: int = Field(
        default=2_000,
        ge=0,
        description="Longest JSON text kept of one call's arguments; longer is cut and marked. Default: 2000.",
    )
    queue_size: int = Field(
        default=10_000,
        ge=1,
        description="Results waiting for the writer; beyond it results are not stored (counted in "
        "`toolscore.score_store.dropped`, reason `queue_full`). Default: 10000.",
    )
    write_interval_ms: float = Field(
        default=200.0, gt=0, description="How often the writer commits what gathered. Default: 200."
    )


class ScoreStore:
    """Stores scored runs; `record` is safe from any thread and never blocks (see the module docstring).

    Every result `record` is given is stored or counted in `dropped` and the telemetry, with its reason.
    """

    def __init__(self, config: ScoreStoreConfig | None = None, telemetry: ScoreStoreTelemetry | None = None) -> None:
        self.config = config = config or ScoreStoreConfig()
        self.telemetry: ScoreStoreTelemetry = telemetry or NoopTelemetry()
        Path(config.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(config.path, check_same_thread=False, isolation_level=None)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._migrate()
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.executescript(SCHEMA)
            _add_columns(self._db)
        except BaseException:
            self._db.close()
            raise
        self._ids: OrderedDict[tuple[str, str], int] = OrderedDict()
        """(trace id, span id) → row id of the runs this writer stored and retention has not deleted."""
        self._next_id = 0
        self._pending: deque[_Pending] = deque()
        self._last: tuple[AgentRun, _RunRow, set[tuple[str, int]]] | None = None
        """The run last recorded, its row, and the expectations (name, version) its sampled-out rows were queued for."""
        self.dropped = 0
        self._enqueued = 0
        self._written = 0
        self._cond = threading.Condition()
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="toolscore-score-store", daemon=True)
        self._thread.start()

    def record_sampled_out(self, run: AgentRun, expectation: Expectation, agent_version: str | None = None) -> None:
        """Queue the run with the expectation it matched whose every scorer was sampled out of it (the
        `Engine.on_sampled_out` callback): no result comes for it, and the run would be missing or look checked."""
        self.record(run, expectation, None, agent_version)

    def record(
        self, run: AgentRun, expectation: Expectation, result: ScoreResult | None, agent_version: str | None = None
    ) -> None:
        """Queue one result for the writer; the `Engine.on_scored` callback (`agent_version`: the run's).

        The rows are made here, so the queue holds strings and numbers rather than the run: a run kept
        alive until the writer's next batch survived into the collector's older generations, which
        cost `serve` more than encoding its calls here does (measured on the `collector.ingest` load).
        """
        if len(self._pending) >= self.config.queue_size or self._stopping:
            self._drop(1, "shutdown" if self._stopping else "queue_full")
            if self.dropped == 1 or self.dropped % 1000 == 0:
                _log.warning("score store is behind or closed: %d results not stored", self.dropped)
            return
        now = time.time_ns()
        last = self._last
        if last is not None and last[0] is run:  # the engine records a run's results one after another
            run_row, seen = last[1], last[2]
        else:
            config = self.config
            calls = calls_json(run, config.max_calls, config.max_args_chars)
            agent = None if run.agent_name is None else valid_utf8(run.agent_name)
            version = None if agent_version is None else valid_utf8(agent_version)
            request = _request_text(run.input)
            values = run_values_json(run)
            run_row = (
                run.trace_id, run.span_id, agent, calls, len(run.calls), int(run.incomplete), now, version, request,
                values,
            )  # fmt: skip
            seen = set()
            self._last = (run, run_row, seen)
        key = (expectation.name, expectation.version)
        sampled: tuple[tuple[Any, ...], ...] = ()
        if key not in seen:
            seen.add(key)
            sampled = sampled_out_rows(expectation, run.trace_id)
        score_row = None if result is None else _score_row(expectation, result, now)
        self._pending.append((run_row, score_row, sampled))
        self._enqueued += 1

    def flush(self, timeout_s: float) -> bool:
        """Wait until everything recorded so far is written; False on timeout."""
        target = self._enqueued
        deadline = time.monotonic() + timeout_s
        self._wake.set()
        with self._cond:
            while self._written < target and self._thread.is_alive():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return self._written >= target

    def close(self, timeout_s: float = 5.0) -> bool:
        """Write what is queued, stop the writer and close the database. Idempotent."""
        if self._stopping:
            return not self._thread.is_alive()
        flushed = self.flush(timeout_s)
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout_s)
        return flushed and not self._thread.is_alive()

    # -- the writer thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        interval = self.config.write_interval_ms / 1000
        last_retention = 0.0
        try:
            while True:
                self._wake.wait(interval)
                self._wake.clear()
                stopping = self._stopping
                try:
                    wrote = self._write_pending()
                    if wrote or time.monotonic() - last_retention >= _RETAIN_EVERY_S:
                        last_retention = time.monotonic()
                        self._retain()
                except Exception:  # `_store` counts what it loses; nothing may end the writer
                    _log.exception("score store writer step failed")
                if stopping:
                    return
        finally:
            self._db.close()
            with self._cond:
                self._cond.notify_all()

    def _write_pending(self) -> int:
        batch = [self._pending.popleft() for _ in range(len(self._pending))]
        try:
            if batch:
                self._store(batch)
        finally:
            with self._cond:
                self._written += len(batch)
                self._cond.notify_all()
        return len(batch)

    def _store(self, batch: list[_Pending]) -> None:
        """Write the batch; if that fails, each run's results on their own, so a row SQLite cannot take
        (any exception: a `str` it cannot encode, an integer beyond 64 bits, a full disk) costs its own
        run's results, counted in `dropped`, and never the writer thread, which would store nothing more.
        """
        try:
            self._write(batch)
            return
        except Exception as exc:
            error = exc
        by_run: dict[tuple[str, str], list[_Pending]] = {}
        for pending in batch:
            by_run.setdefault((pending[0][0], pending[0][1]), []).append(pending)
        lost = len(batch)
        if len(by_run) > 1:
            lost = 0
            for results in by_run.values():
                try:
                    self._write(results)
                except Exception:
                    lost += len(results)
        if lost:
            self._drop(lost, "write_failed")
            _log.error("could not store %d of %d results; the first error:", lost, len(batch), exc_info=error)

    def _drop(self, results: int, reason: str) -> None:
        with self._cond:  # the worker thread (`record`) and the writer both count
            self.dropped += results
        self.telemetry.score_results_dropped(results, reason)

    def _migrate(self) -> None:
        (version,) = self._db.execute("PRAGMA user_version").fetchone()
        has_runs = self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs'").fetchone()
        if version > SCHEMA_VERSION:
            raise ValueError(
                f"score store {self.config.path}: schema version {version} was written by a newer toolscore"
                f" (this one knows {SCHEMA_VERSION}); point score_store.path at another file"
            )
        if not has_runs or version == SCHEMA_VERSION:
            return  # a new store: `SCHEMA` makes it whole
        _log.info(
            "score store %s: upgrading its schema from version %d to %d", self.config.path, version, SCHEMA_VERSION
        )
        for step in range(version, SCHEMA_VERSION):
            self._db.executescript(_MIGRATIONS[step])

    def _write(self, batch: list[_Pending]) -> None:
        """One transaction: the new runs' rows, with the ids given here, then every score (and sampled-out scorer)."""
        db, ids = self._db, self._ids
        runs: list[tuple[Any, ...]] = []
        scores: list[tuple[Any, ...]] = []
        sampled: list[tuple[Any, ...]] = []
        try:
            with _transaction(db):  # the write lock first: no other writer can take the ids given here
                (top,) = db.execute("SELECT coalesce(max(id), 0) FROM runs").fetchone()
                next_id = max(top + 1, self._next_id)
                for run_row, score_row, sampled_rows in batch:
                    key = (run_row[0], run_row[1])
                    run_id = ids.get(key)
                    if run_id is None:
                        run_id = ids[key] = next_id
                        next_id += 1
                        runs.append((run_id, *run_row))
                    if score_row is not None:
                        scores.append((run_id, *score_row))
                    sampled.extend((run_id, *row) for row in sampled_rows)
                db.executemany(_INSERT_RUN, runs)
                db.executemany("INSERT INTO scores VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", scores)
                if sampled:
                    db.executemany("INSERT OR IGNORE INTO sampled VALUES (?, ?, ?, ?, ?)", sampled)
        except BaseException:
            for row in runs:
                ids.pop((row[1], row[2]), None)
            raise
        self._next_id = next_id

    def _retain(self) -> None:
        """Delete the runs older than `max_age_s`, then those beyond `max_runs`; forget their ids.

        Both delete every id up to a cut: ids follow the order runs were scored, so the runs scored
        before the newest expired one are expired too (but for a wall clock set back), and the excess
        is the lowest ids. Each step reads an index, or the rows about to go: finding the `max_runs`
        cut from the top, or the newest expired id in rowid order, walks the rows that stay.
        """
        config, db = self.config, self._db
        oldest = time.time_ns() - int(config.max_age_s * 1e9)
        try:
            with _transaction(db):
                by_age = _first(db, "SELECT id FROM runs WHERE scored_ns < ? ORDER BY scored_ns DESC LIMIT 1", oldest)
                self._delete_through(by_age)
                (count,) = db.execute("SELECT count(*) FROM runs").fetchone()  # on the index: a tenth of the pages
                excess = count - config.max_runs
                by_count = (
                    _first(db, "SELECT id FROM runs ORDER BY id LIMIT 1 OFFSET ?", excess - 1) if excess > 0 else 0
                )
                self._delete_through(by_count)
        except sqlite3.Error:
            _log.exception("score store retention failed")
            return
        cut, ids = max(by_age, by_count), self._ids
        while ids and next(iter(ids.values())) <= cut:
            ids.popitem(last=False)
        while len(ids) > config.max_runs:  # rows another writer added, or none deleted yet: still bounded
            ids.popitem(last=False)

    def _delete_through(self, cut: int) -> None:
        if cut:
            self._db.execute("DELETE FROM scores WHERE run_id <= ?", (cut,))
            self._db.execute("DELETE FROM sampled WHERE run_id <= ?", (cut,))
            self._db.execute("DELETE FROM runs WHERE id <= ?", (cut,))


_INSERT_RUN = (
    "INSERT INTO runs (id, trace_id, span_id, agent, calls_json, calls_total, incomplete, scored_ns,"
    " agent_version, request, values_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _add_columns(db: sqlite3.Connection) -> None:
    """Add each of `_ADDED_COLUMNS` its table lacks (see there)."""
    for table, column, kind in _ADDED_COLUMNS:
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if column not in have:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


def _request_text(text: str | None) -> str | None:
    """The user's request as kept: valid UTF-8, at most `_MAX_REQUEST_CHARS` (cut with `…`)."""
    if text is None:
        return None
    text = valid_utf8(text)
    return text if len(text) <= _MAX_REQUEST_CHARS else text[: _MAX_REQUEST_CHARS - 1] + "…"


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """`BEGIN IMMEDIATE` (the write lock at once), committed, or rolled back on any exception."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _first(db: sqlite3.Connection, sql: str, *params: Any) -> int:
    """The first column of the first row as an int, 0 when there is no row."""
    row = db.execute(sql, params).fetchone()
    return int(row[0]) if row else 0


def _score_row(expectation: Expectation, result: ScoreResult, now: int) -> tuple[Any, ...]:
    if isinstance(result, Score):
        value, label, error, explanation = float(result.value), result.label, None, result.explanation
    else:
        value, label, error, explanation = None, None, result.error_type, result.message
    error = None if error is None else valid_utf8(error)  # a label is "pass" or "fail"
    text = valid_utf8(explanation or "")
    return (valid_utf8(expectation.name), expectation.version, valid_utf8(result.name), value, label, error, text, now)
