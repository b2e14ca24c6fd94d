"""The score store: every scored run, its calls and its scores in SQLite, bounded by count and age.

Public: `ScoreStoreConfig`; the readers `toolscore runs` uses (`query_runs`, `parse_since`, and the
`StoredRun`/`StoredScore`/`SampledOut` values it returns; `query_versions` and `compare_versions`, the `VersionRow`s of
`--by-version`); and the runs page's readers (`runs_page`, `run_by_id`, `run_by_span`, `latest_id`, `agents`,
`expectation_names`, `expectation_trends`). The store is written by the service; every module is private
(`_`-prefixed).
"""

from __future__ import annotations

from toolscore.collector.serve.scores._browse import (
    Bucket,
    ExpectationTrend,
    RunFilter,
    agents,
    expectation_names,
    expectation_trends,
    latest_id,
    run_by_id,
    run_by_span,
    runs_page,
)
from toolscore.collector.serve.scores._query import SampledOut, StoredRun, StoredScore, parse_since, query_runs
from toolscore.collector.serve.scores._store import ScoreStoreConfig
from toolscore.collector.serve.scores._versions import VersionRow, compare_versions, query_versions

__all__ = [
    "Bucket",
    "ExpectationTrend",
    "RunFilter",
    "SampledOut",
    "ScoreStoreConfig",
    "StoredRun",
    "StoredScore",
    "VersionRow",
    "agents",
    "compare_versions",
    "expectation_names",
    "expectation_trends",
    "latest_id",
    "parse_since",
    "query_runs",
    "query_versions",
    "run_by_id",
    "run_by_span",
    "runs_page",
]
