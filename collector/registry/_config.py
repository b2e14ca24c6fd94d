"""`RegistryConfig`: where expectations are stored and which files feed them. Kinds by `type`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MemoryStoreConfig", "PostgresStoreConfig", "RegistryConfig", "SqliteStoreConfig", "StoreConfig"]


class SqliteStoreConfig(BaseModel):
    """The embedded default: one SQLite file (WAL), for a single collector or a few on one host."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["sqlite"] = "sqlite"
    path: str = Field(
        default=".toolscore/registry.db", description="Database file; created with its directory when missing."
    )
    busy_timeout_ms: int = Field(
        default=5000,
        ge=0,
        description="How long a call waits for a lock another connection holds (a write transaction left open) "
        "before it fails; a poll that fails so is reported as an outage.",
    )


class PostgresStoreConfig(BaseModel):
    """PostgreSQL, for several collector replicas sharing one registry."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["postgres"] = "postgres"
    dsn: str = Field(default="postgresql://localhost/toolscore", description="libpq connection string or URL.")
    table_prefix: str = Field(
        default="toolscore_", pattern=r"^[a-z_][a-z0-9_]*$", description="Prefix of the two tables' names."
    )
    listen: bool = Field(
        default=True, description="LISTEN for change notifications, so replicas see a change at once, not at a poll."
    )
    connect_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="How long a connection attempt may take, in whole seconds and at least 2 (libpq's "
        "`connect_timeout`); a server that accepts the connection and never answers fails the call after it.",
    )
    query_timeout_s: float = Field(
        default=5.0,
        gt=0,
        description="How long one query may wait (for a lock another session holds) or run before the server "
        "cancels it (`statement_timeout`) and the call fails; a poll that fails so is reported as an outage.",
    )
    network_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="How long the client waits on a server that stopped answering at all before it drops the "
        "connection and fails the call (reopened on the next one): a call without a reply this long past "
        "`query_timeout_s` (a frozen server, a paused VM); a connection idle this long whose TCP keepalive "
        "probes go unanswered (probed after half of it, then 3 times a sixth of it apart: libpq's `keepalives_*`); "
        "data unacknowledged this long (`tcp_user_timeout`: a host gone, a partition). TCP settings the `dsn` "
        "gives itself are kept.",
    )


class MemoryStoreConfig(BaseModel):
    """In process memory: nothing survives a restart. For file-only registries and tests."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["memory"] = "memory"


StoreConfig = Annotated[SqliteStoreConfig | PostgresStoreConfig | MemoryStoreConfig, Field(discriminator="type")]


class RegistryConfig(BaseModel):
    """How the registry stores expectations, follows other replicas' changes and loads files."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    store: StoreConfig = Field(default_factory=SqliteStoreConfig, description="Where expectations are stored.")
    poll_interval_s: float = Field(
        default=2.0,
        gt=0,
        description="How often the registry checks the store for changes made by other replicas or processes. "
        "With PostgreSQL and `listen`, a notification wakes it earlier.",
    )
    files: list[str] = Field(
        default_factory=list,
        description="YAML/JSON files or directories of expectations, applied into the store at start. "
        "Files own the names they define: a name removed from the files is deleted from the store.",
    )
    changes_kept: int = Field(
        default=100_000,
        ge=1,
        description="Changes the store's change log keeps (the history `toolscore expectations history` shows, and "
        "what a watch can resume from); older ones are removed every minute, except the one that made each live "
        "expectation's current version. A replica that falls further behind reads the whole set again; a watch "
        "asked to resume from there is refused (OUT_OF_RANGE).",
    )
    watch_files: bool = Field(default=True, description="Reload `files` when they change, without a restart.")
    file_poll_interval_s: float = Field(default=1.0, gt=0, description="How often `files` are checked for changes.")
