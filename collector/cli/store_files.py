"""Which toolscore store a SQLite file is, told by its tables, so that a command given the other one says so.

`toolscore serve` keeps two SQLite files side by side, the registry (`.toolscore/registry.db`) and the
score store (`.toolscore/scores.db`). Given the score store, `toolscore expectations` would add the
registry's tables to it and answer with an empty registry; given the registry, `toolscore runs` would
fail on a missing table. Both refuse instead, naming what the file is; the file is only read.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Literal

from toolscore.collector.sqlite_read import connect_read_only

__all__ = ["StoreKind", "store_kind"]

StoreKind = Literal["registry", "score store"]


def store_kind(path: str) -> StoreKind | None:
    """What the SQLite file at `path` holds: all of a registry's tables or of a score store's, not both.

    None when it holds neither, both (one file configured for both stores, which `serve` now refuses, by an older
    version), or is no SQLite file at all.
    """
    from toolscore.collector.registry.stores._sqlite_store import TABLES as REGISTRY_TABLES
    from toolscore.collector.serve.scores._store import TABLES as SCORE_TABLES

    tables = _tables(path)
    registry = tables.issuperset(REGISTRY_TABLES)
    scores = tables.issuperset(SCORE_TABLES)
    if registry and not scores:
        return "registry"
    if scores and not registry:
        return "score store"
    return None


def _tables(path: str) -> frozenset[str]:
    """The tables of the SQLite file at `path`, read leaving no trace (`sqlite_read`); none if it is not one."""
    file = Path(path)
    if not file.is_file():
        return frozenset()
    try:
        db = connect_read_only(file)
    except sqlite3.Error:
        return frozenset()
    try:
        rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    except sqlite3.Error:
        return frozenset()
    finally:
        db.close()
    return frozenset(name for (name,) in rows)
