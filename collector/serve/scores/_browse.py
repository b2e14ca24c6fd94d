"""Reading the score store page by page, for the runs page: newest runs by id, one run, expectation trends.

Every read walks an index that grows at one end (the run id, `runs_scored`), or the scores of the runs on
one page (`scores_run`), so a page costs the same with the store at its bound (`max_runs`) as near empty;
the trends read the scores once per window. Each call opens its own read-only connection (`sqlite_read`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from toolscore.collector.serve.scores._query import LabelFilter, StoredRun, filters, read_runs, reading

__all__ = [
    "Bucket",
    "ExpectationTrend",
    "RunFilter",
    "agents",
    "expectation_names",
    "expectation_trends",
    "latest_id",
    "run_by_id",
    "run_by_span",
    "runs_page",
]


@dataclass(frozen=True)
class RunFilter:
    """What the runs list shows: each set field narrows it (`label`: runs with a score of that verdict)."""

    agent: str | None = None
    expectation: str | None = None
    label: LabelFilter | None = None
    since_ns: int | None = None


def _where(run_filter: RunFilter, before_id: int | None) -> tuple[str, list[object]]:
    f = run_filter
    where, params = filters(f.agent, f.expectation, f.label, f.since_ns)
    if before_id is not None:
        where = (where + " AND " if where else "WHERE ") + "id < ?"
        params.append(before_id)
    return where, params


def runs_page(
    path: str | Path, run_filter: RunFilter = RunFilter(), *, before_id: int | None = None, limit: int = 50
) -> list[StoredRun]:
    """Up to `limit` runs the filter keeps, newest (highest id) first, all older than `before_id` when given."""
    with reading(path) as db:
        where, params = _where(run_filter, before_id)
        return read_runs(db, where, list(params), "ORDER BY id DESC LIMIT ?", limit)


def latest_id(path: str | Path, run_filter: RunFilter = RunFilter()) -> int:
    """The id of the newest run the filter keeps (0: none), which the page polls to see new runs."""
    with reading(path) as db:
        where, params = _where(run_filter, None)
        row = db.execute(f"SELECT max(id) FROM runs {where}", params).fetchone()
        return int(row[0] or 0)


def run_by_id(path: str | Path, row_id: int) -> StoredRun | None:
    with reading(path) as db:
        found = read_runs(db, "WHERE id = ?", [row_id], "")
        return found[0] if found else None


def run_by_span(path: str | Path, trace_id: str, span_id: str | None = None) -> list[StoredRun]:
    """The runs of a trace (newest first), or its run with `span_id`; ids compare without case.

    No index on the trace id (see the store's docstring): this reads every row, a few milliseconds at
    the store's bound, which a command run by hand affords and the page's links (by row id) avoid.
    """
    with reading(path) as db:
        where, params = "WHERE lower(trace_id) = ?", [trace_id.lower()]
        if span_id is not None:
            where += " AND lower(span_id) = ?"
            params.append(span_id.lower())
        return read_runs(db, where, list(params), "ORDER BY id DESC")


def agents(path: str | Path) -> list[str]:
    """The agent names in the store, for the filter's choices."""
    with reading(path) as db:
        return [row[0] for row in db.execute("SELECT DISTINCT agent FROM runs WHERE agent IS NOT NULL ORDER BY 1")]


def expectation_names(path: str | Path) -> list[str]:
    """The expectations the stored runs were scored against, for the filter's choices."""
    with reading(path) as db:
        return [row[0] for row in db.execute("SELECT DISTINCT expectation FROM scores ORDER BY 1")]


@dataclass(frozen=True)
class Bucket:
    """One slice of a window: runs scored, how many passed (every score of the expectation passed), and the mean
    of their scores' values (None when none had one)."""

    runs: int
    passed: int
    mean: float | None


@dataclass
class ExpectationTrend:
    """An expectation's runs over a window: per bucket, and the totals; `last_failure` is a run's id.

    `passed` counts the runs that passed it, as `toolscore eval`, `runs --by-version` and the
    `toolscore.expectation.runs` metric count them (every score of the run passed; a scorer error fails it);
    `scores` counts every score, `mean` is their values' mean."""

    expectation: str
    runs: int = 0
    scores: int = 0
    passed: int = 0
    mean: float | None = None
    last_failure: int | None = None
    buckets: list[Bucket] = field(default_factory=list)

    @property
    def pass_rate(self) -> float | None:
        """Runs passed / runs scored (not the scorer pass rate, which pools verdicts across scorers)."""
        return self.passed / self.runs if self.runs else None


_FAILED = "label IS NOT 'pass' OR error_type IS NOT NULL"
"""A score that fails its run: a fail, or a scorer error (no label)."""


def expectation_trends(path: str | Path, start_ns: int, end_ns: int, buckets: int = 24) -> list[ExpectationTrend]:
    """Every expectation scored since `start_ns`, with `buckets` equal slices of [start_ns, end_ns).

    One pass over the window's scores, grouped by expectation and slice: a slice's runs passed are its runs
    less those with a score that did not pass (a run's scores are recorded together, so a run falls in one
    slice; a judge's late result may put it in the next too); the totals are the slices' sums, and the last
    failure is the newest failing run in the window.
    """
    width = max(1, (end_ns - start_ns) // buckets)
    out: dict[str, ExpectationTrend] = {}
    sums: dict[str, float] = {}
    valued: dict[str, int] = {}
    with reading(path) as db:
        rows = db.execute(
            "SELECT expectation, min(?, max(0, (scored_ns - ?) / ?)) AS b, count(*),"
            f" count(DISTINCT run_id) - count(DISTINCT CASE WHEN {_FAILED} THEN run_id END),"
            " sum(value), count(value), count(DISTINCT run_id),"
            f" max(CASE WHEN {_FAILED} THEN run_id END)"
            " FROM scores WHERE scored_ns >= ? GROUP BY expectation, b",
            (buckets - 1, start_ns, width, start_ns),
        ).fetchall()
    for name, index, count, passed, total, n_valued, runs, failed in rows:
        trend = out.get(name)
        if trend is None:
            trend = out[name] = ExpectationTrend(name, buckets=[Bucket(0, 0, None)] * buckets)
        mean = total / n_valued if n_valued else None
        trend.buckets[int(index)] = Bucket(int(runs), int(passed or 0), mean)
        trend.runs += int(runs)
        trend.scores += int(count)
        trend.passed += int(passed or 0)
        sums[name] = sums.get(name, 0.0) + (total or 0.0)
        valued[name] = valued.get(name, 0) + int(n_valued)
        if failed is not None and (trend.last_failure is None or failed > trend.last_failure):
            trend.last_failure = int(failed)
    for name, trend in out.items():
        trend.mean = sums[name] / valued[name] if valued[name] else None
    return sorted(out.values(), key=lambda t: t.expectation)
