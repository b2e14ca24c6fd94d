"""The embedded score store: every scored run, its calls and its scores in SQLite, bounded by count and age.

`record` runs on the pipeline's worker thread and only appends to a bounded deque; one writer thread
owns the connection and writes what gathered in one transaction every `write_interval_ms`, then
applies the retention. WAL mode lets `toolscore runs` (`score_query`) read while the collector writes.

    runs(id, trace_id, span_id, agent, calls_json, calls_total, incomplete, scored_ns)   one row per run
    scores(run_id → runs.id, expectation, version, scorer, value, label, error_type, explanation, scored_ns)
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from toolscore.collector.registry import Expectation
from toolscore.scorers.model import AgentRun, Score, ScoreResult

__all__ = ["SCHEMA", "ScoreStore", "ScoreStoreConfig"]

_log = logging.getLogger("toolscore.serve.scores")

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    trace_id TEXT NOT NULL,
    span_id TEXT NOT NULL,
    agent TEXT,
    calls_json TEXT NOT NULL,
    calls_total INTEGER NOT NULL,
    incomplete INTEGER NOT NULL,
    scored_ns INTEGER NOT NULL,
    UNIQUE (trace_id, span_id)
);
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
"""

_Pending = tuple[AgentRun, Expectation, ScoreResult, int]
_RETAIN_EVERY_S = 10.0
"""Age retention also runs this often when nothing is written."""


class ScoreStoreConfig(BaseModel):
    """Where scored runs are kept for `toolscore runs`, and for how long."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = Field(default=True, description="Keep scored runs in the store at all. Default: true.")
    path: str = Field(
        default=".toolscore/scores.db",
        description="SQLite file (created with its directory); `toolscore runs --db` reads it. "
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
        description="Results waiting for the writer; beyond it results are not stored (logged). Default: 10000.",
    )
    write_interval_ms: float = Field(
        default=200.0, gt=0, description="How often the writer commits what gathered. Default: 200."
    )


_encode = json.JSONEncoder(ensure_ascii=False, default=str).encode


def _dumps(value: Any) -> str:
    """Compact JSON text; orjson (about ten times the standard encoder's speed) unless it refuses.

    orjson refuses integers beyond 64 bits, which the standard encoder writes; both write anything
    else JSON cannot hold as its `str` (`default=str`). Non-finite floats, which only a span's own
    values can carry, are written `null` by orjson rather than the standard `NaN`.
    """
    try:
        return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # orjson.JSONEncodeError is one
        return _encode(value)


def calls_json(run: AgentRun, max_calls: int, max_args_chars: int) -> str:
    """The run's first `max_calls` calls as JSON `[{"name", ..., "args"?}]`, long arguments cut and marked.

    The whole list is encoded once: when it is no longer than `max_args_chars`, no call's arguments
    can be, and that one call to the encoder is all a run costs. Otherwise each call is looked at.
    """
    entries = [call.to_json() for call in run.calls[:max_calls]]
    text = _dumps(entries)
    if len(text) <= max_args_chars:
        return text
    return "[" + ",".join(_call_json(entry, max_args_chars) for entry in entries) + "]"


def _call_json(entry: dict[str, Any], max_args_chars: int) -> str:
    text = _dumps(entry)
    if len(text) <= max_args_chars or "args" not in entry:
        return text
    args = _dumps(entry["args"])
    if len(args) <= max_args_chars:
        return text
    entry["args"] = args[:max_args_chars]
    entry["args_truncated"] = True
    return _dumps(entry)


class ScoreStore:
    """Stores scored runs; `record` is safe from any thread and never blocks (see the module docstring)."""

    def __init__(self, config: ScoreStoreConfig | None = None) -> None:
        self.config = config = config or ScoreStoreConfig()
        Path(config.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(config.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(SCHEMA)
        self._pending: deque[_Pending] = deque()
        self.dropped = 0
        self._enqueued = 0
        self._written = 0
        self._cond = threading.Condition()
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="toolscore-score-store", daemon=True)
        self._thread.start()

    def record(self, run: AgentRun, expectation: Expectation, result: ScoreResult) -> None:
        """Queue one result for the writer; the `Engine.on_scored` callback."""
        if len(self._pending) >= self.config.queue_size or self._stopping:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                _log.warning("score store is behind: %d results not stored", self.dropped)
            return
        self._pending.append((run, expectation, result, time.time_ns()))
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
                wrote = self._write_pending()
                if wrote or time.monotonic() - last_retention >= _RETAIN_EVERY_S:
                    self._retain()
                    last_retention = time.monotonic()
                if stopping:
                    return
        finally:
            self._db.close()
            with self._cond:
                self._cond.notify_all()

    def _write_pending(self) -> int:
        batch = [self._pending.popleft() for _ in range(len(self._pending))]
        if batch:
            try:
                self._write(batch)
            except sqlite3.Error:
                _log.exception("could not store %d scores", len(batch))
        with self._cond:
            self._written += len(batch)
            self._cond.notify_all()
        return len(batch)

    def _write(self, batch: list[_Pending]) -> None:
        config = self.config
        ids: dict[tuple[str, str], int] = {}
        rows: list[tuple[Any, ...]] = []
        db = self._db
        db.execute("BEGIN")
        try:
            for run, expectation, result, now in batch:
                key = (run.trace_id, run.span_id)
                run_id = ids.get(key)
                if run_id is None:
                    row = db.execute(
                        "INSERT INTO runs (trace_id, span_id, agent, calls_json, calls_total, incomplete, scored_ns)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (trace_id, span_id) DO NOTHING RETURNING id",
                        (*key, run.agent_name, calls_json(run, config.max_calls, config.max_args_chars),
                         len(run.calls), int(run.incomplete), now),
                    ).fetchone()  # fmt: skip
                    if row is None:  # stored by an earlier batch: its scores join that row
                        row = db.execute("SELECT id FROM runs WHERE trace_id = ? AND span_id = ?", key).fetchone()
                    run_id = ids[key] = row[0]
                rows.append(_score_row(run_id, expectation, result, now))
            db.executemany("INSERT INTO scores VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _retain(self) -> None:
        config = self.config
        oldest = time.time_ns() - int(config.max_age_s * 1e9)
        try:
            self._db.execute("DELETE FROM runs WHERE scored_ns < ?", (oldest,))
            self._db.execute(
                "DELETE FROM runs WHERE id <= (SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?)",
                (config.max_runs,),
            )
        except sqlite3.Error:
            _log.exception("score store retention failed")


def _score_row(run_id: int, expectation: Expectation, result: ScoreResult, now: int) -> tuple[Any, ...]:
    if isinstance(result, Score):
        value, label, error, explanation = float(result.value), result.label, None, result.explanation
    else:
        value, label, error, explanation = None, None, result.error_type, result.message
    return (run_id, expectation.name, expectation.version, result.name, value, label, error, explanation or "", now)
