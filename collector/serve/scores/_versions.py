"""Reading the score store per agent version: each version's runs, pass rate and mean score, and its difference
from the version before it; for `toolscore runs --by-version`.

A run's verdict on an expectation is the one `toolscore eval` and the live `toolscore.expectation.runs` count:
it passes when every stored score of that expectation on it is a `pass` (a scorer that could not score fails
it). Its score is the mean of those scores' values, and a version's mean score the mean of its runs' scores.
Versions of one agent and expectation are ordered by their first run in the store (the release order the canary
alert reads from `toolscore.agent.version.first_seen`), and each is compared with the one before it: *worse*
when both rest on at least `min_runs` runs and its pass rate is lower by more than `margin`. Runs without a
version are one row of their own (`version` None), compared with nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from toolscore.collector.serve.scores._query import reading, version_column

__all__ = ["VersionRow", "compare_versions", "query_versions"]

_EPSILON = 1e-12


@dataclass(frozen=True)
class VersionRow:
    """One agent version's runs against one expectation; `previous` and `delta` are set by `compare_versions`."""

    agent: str | None
    expectation: str
    version: str | None
    runs: int
    passed: int
    mean_score: float | None
    first_seen_ns: int
    last_seen_ns: int
    previous: str | None = None
    """The version before this one (by first run) against the same expectation, None for the first."""
    delta: float | None = None
    """This version's pass rate minus the previous one's; None when there is no previous version."""
    worse: bool = False
    """Lower than the previous version's by more than the margin, on enough runs on both sides."""

    @property
    def pass_rate(self) -> float:
        return self.passed / self.runs if self.runs else 0.0


_PER_RUN = """
SELECT r.agent, s.expectation, {version} AS version, r.id,
       min(coalesce(s.label = 'pass' AND s.error_type IS NULL, 0)) AS passed,
       avg(s.value) AS score, r.scored_ns
FROM runs r JOIN scores s ON s.run_id = r.id
{where}
GROUP BY r.id, s.expectation
"""
"""One row per run and expectation it was scored against: its verdict and its score (NULL: no value)."""


def query_versions(
    path: str | Path,
    *,
    agent: str | None = None,
    expectation: str | None = None,
    agent_version: str | None = None,
    since_ns: int | None = None,
) -> list[VersionRow]:
    """Per agent, expectation and version, in that order (versions by their first run; no version last).

    Raises FileNotFoundError when there is no store at `path`, sqlite3.DatabaseError when the file there
    is not one.
    """
    with reading(path) as db:
        version = version_column(db)
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("r.agent", agent), ("s.expectation", expectation), (version, agent_version)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if since_ns is not None:
            clauses.append("r.scored_ns >= ?")
            params.append(since_ns)
        where = "WHERE " + " AND ".join(clauses) if clauses else ""
        rows = db.execute(
            "SELECT agent, expectation, version, count(*), sum(passed), avg(score), min(scored_ns), max(scored_ns)"
            f" FROM ({_PER_RUN.format(version=version, where=where)})"
            " GROUP BY agent, expectation, version"
            " ORDER BY agent IS NULL, agent, expectation, version IS NULL, min(scored_ns), version",
            params,
        ).fetchall()
    return [VersionRow(a, e, v, n, int(p), s, first, last) for a, e, v, n, p, s, first, last in rows]


def compare_versions(rows: list[VersionRow], margin: float, min_runs: int) -> list[VersionRow]:
    """`rows` (in `query_versions`' order) with each version's difference from the one before it."""
    out: list[VersionRow] = []
    before: dict[tuple[str | None, str], VersionRow] = {}
    for row in rows:
        key = (row.agent, row.expectation)
        last = before.get(key)
        if row.version is None:
            out.append(row)
            continue
        before[key] = row
        if last is None:
            out.append(row)
            continue
        delta = row.pass_rate - last.pass_rate
        enough = row.runs >= min_runs and last.runs >= min_runs
        out.append(replace(row, previous=last.version, delta=delta, worse=enough and -delta > margin + _EPSILON))
    return out
