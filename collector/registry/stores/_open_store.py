"""The one place a store kind named in configuration becomes a store object."""

from __future__ import annotations

from toolscore.collector.registry._config import MemoryStoreConfig, PostgresStoreConfig, SqliteStoreConfig
from toolscore.collector.registry._errors import MissingExtra
from toolscore.collector.registry.stores._store import ExpectationStore

__all__ = ["open_store"]


def open_store(
    config: SqliteStoreConfig | PostgresStoreConfig | MemoryStoreConfig, *, read_only: bool = False
) -> ExpectationStore:
    """Open (and create the tables of) the configured store; PostgreSQL's driver is imported only here.

    `read_only`: look at an existing SQLite or PostgreSQL store without changing it (nothing is created, every
    write fails), for a command that only reads; a memory store is the process's own, and is opened as usual.
    """
    if isinstance(config, SqliteStoreConfig):
        from toolscore.collector.registry.stores._sqlite_store import SqliteStore

        return SqliteStore(config.path, busy_timeout_ms=config.busy_timeout_ms, read_only=read_only)
    if isinstance(config, PostgresStoreConfig):
        try:
            from toolscore.collector.registry.stores._postgres_store import PostgresStore
        except ImportError as exc:
            if (exc.name or "").partition(".")[0] != "psycopg":
                raise
            raise MissingExtra("the PostgreSQL store", "postgres") from None

        return PostgresStore(
            config.dsn,
            table_prefix=config.table_prefix,
            listen=config.listen,
            connect_timeout_s=config.connect_timeout_s,
            query_timeout_s=config.query_timeout_s,
            network_timeout_s=config.network_timeout_s,
            read_only=read_only,
        )
    from toolscore.collector.registry.stores._memory_store import MemoryStore

    return MemoryStore()
