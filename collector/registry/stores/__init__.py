"""Where a registry keeps its expectations: the storage plugin point and the stores that implement it.

`ExpectationStore` is the protocol (a handful of methods, safe for concurrent use) with its value types
(`Change`, `ChangeKind`, `Write`); `MemoryStore` and `SqliteStore` are built in, and `open_store` makes the
store a `StoreConfig` names. The PostgreSQL store is not exported here (it needs psycopg): configure it with
`PostgresStoreConfig` and `open_store`.
"""

from __future__ import annotations

from toolscore.collector.registry.stores._memory_store import MemoryStore
from toolscore.collector.registry.stores._open_store import open_store
from toolscore.collector.registry.stores._sqlite_store import SqliteStore
from toolscore.collector.registry.stores._store import Change, ChangeKind, ExpectationStore, Write

__all__ = ["Change", "ChangeKind", "ExpectationStore", "MemoryStore", "SqliteStore", "Write", "open_store"]
