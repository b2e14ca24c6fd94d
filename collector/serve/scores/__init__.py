"""The score store: every scored run, its calls and its scores in SQLite, bounded by count and age.

Public: `ScoreStoreConfig`, and the reader `toolscore runs` uses (`query_runs`, `parse_since`, and the
`StoredRun`/`StoredScore` values it returns). The store is written by the service; every module is private
(`_`-prefixed).
"""

from __future__ import annotations

from toolscore.collector.serve.scores._query import StoredRun, StoredScore, parse_since, query_runs
from toolscore.collector.serve.scores._store import ScoreStoreConfig

__all__ = ["ScoreStoreConfig", "StoredRun", "StoredScore", "parse_since", "query_runs"]
