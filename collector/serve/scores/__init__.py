"""The score store: every scored run, its calls and its scores in SQLite, bounded by count and age.

Public: `ScoreStoreConfig`, and the readers `toolscore runs` uses (`query_runs`, `parse_since`, and the
`StoredRun`/`StoredScore` values it returns; `query_versions` and `compare_versions`, the `VersionRow`s of
`--by-version`). The store is written by the service; every module is private
(`_`-prefixed).
"""

from __future__ import annotations

from toolscore.collector.serve.scores._query import StoredRun, StoredScore, parse_since, query_runs
from toolscore.collector.serve.scores._store import ScoreStoreConfig
from toolscore.collector.serve.scores._versions import VersionRow, compare_versions, query_versions

__all__ = [
    "ScoreStoreConfig",
    "StoredRun",
    "StoredScore",
    "VersionRow",
    "compare_versions",
    "parse_since",
    "query_runs",
    "query_versions",
]
