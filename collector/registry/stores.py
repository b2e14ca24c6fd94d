"""The one place a store kind named in configuration becomes a store object."""

from __future__ import annotations

from toolscore.collector.registry.config import MemoryStoreConfig, PostgresStoreConfig, SqliteStoreConfig
from toolscore.collector.registry.store import ExpectationStore

__all__ = ["open_store"]


def open_store(config: SqliteStoreConfig | PostgresStoreConfig | MemoryStoreConfig) -> ExpectationStore:
    """Open (and create the tables of) the configured store; PostgreSQL's driver is imported only here."""
    if isinstance(config, SqliteStoreConfig):
        from toolscore.collector.registry.sqlite_store import SqliteStore

        return SqliteStore(config.path, busy_timeout_ms=config.busy_timeout_ms)
    if isinstance(config, PostgresStoreConfig):
        from toolscore.collector.registry.postgres_store import PostgresStore

        return PostgresStore(
            config.dsn,
            table_prefix=config.table_prefix,
            listen=config.listen,
            connect_timeout_s=config.connect_timeout_s,
            query_timeout_s=config.query_timeout_s,
            network_timeout_s=config.network_timeout_s,
        )
    from toolscore.collector.registry.memory_store import MemoryStore

    return MemoryStore()
