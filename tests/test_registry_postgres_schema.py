"""Opening a PostgreSQL store: what the catalog lacks is created, once, and an open of a database that has it
all takes no lock a writer holds or waits for (replicas start and restart while others write)."""

from __future__ import annotations

import threading
import time

import psycopg

from toolscore.collector.registry.stores._postgres_store import PostgresStore

INDEXES = {"toolscore_changes_by_name", "toolscore_expectations_live"}


def _indexes(dsn: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()").fetchall()
    return {str(name) for (name,) in rows} & INDEXES


def test_opening_a_store_does_not_wait_for_a_write_in_progress(postgres_dsn: str) -> None:
    """`CREATE INDEX IF NOT EXISTS` would wait for the writer's ROW EXCLUSIVE lock (and queue writers behind it)."""
    PostgresStore(postgres_dsn, listen=False).close()
    with psycopg.connect(postgres_dsn) as writer:
        writer.execute(
            b"INSERT INTO toolscore_changes (name, kind, version, body, at_ns) VALUES ('a', 'put', 1, '', 0)"
        )
        writer.execute(b"INSERT INTO toolscore_expectations (name, version, live, body) VALUES ('a', 1, true, '')")
        started = time.monotonic()
        store = PostgresStore(postgres_dsn, listen=False, query_timeout_s=3)  # waiting, it would fail at 3 s
        took = time.monotonic() - started
        try:
            assert store.latest_seq() == 0, "the write is not committed yet"
        finally:
            store.close()
        writer.rollback()
    assert took < 2


def test_an_index_missing_from_the_catalog_is_created_when_a_store_opens(postgres_dsn: str) -> None:
    PostgresStore(postgres_dsn, listen=False).close()
    assert _indexes(postgres_dsn) == INDEXES
    with psycopg.connect(postgres_dsn) as conn:
        conn.execute(b"DROP INDEX toolscore_changes_by_name")
    PostgresStore(postgres_dsn, listen=False).close()
    assert _indexes(postgres_dsn) == INDEXES


def test_replicas_opening_a_new_database_at_once_all_open_it(postgres_dsn: str) -> None:
    """Each finds the indexes missing: the creation is serialized, and the later ones find them created."""
    start = threading.Barrier(4)
    failures: list[BaseException] = []

    def open_store() -> None:
        start.wait()
        try:
            PostgresStore(postgres_dsn, listen=False).close()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(start.parties)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []
    assert _indexes(postgres_dsn) == INDEXES
