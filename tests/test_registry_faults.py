"""The registry when its store misbehaves: unreadable rows, concurrent replicas, outages.

Real stores only (a SQLite file, a PostgreSQL server); faults are made the way they happen, by editing
rows with SQL or stopping the server.
"""

from __future__ import annotations

import gc
import logging
import sqlite3
import threading
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml

from tests.postgres import POSTGRES_PARAM, PostgresServer
from tests.registry_builders import FlakyReads, doc, eventually, names
from toolscore.collector.registry import (
    InvalidExpectation,
    PostgresStoreConfig,
    Registry,
    RegistryConfig,
    SqliteStoreConfig,
    StoreConfig,
    StoreUnavailable,
)
from toolscore.collector.registry._validation import UNREADABLE_LABEL
from toolscore.collector.registry.stores import Change, SqliteStore, Write
from toolscore.collector.registry.stores._postgres_store import PostgresStore


class Database:
    """A real store's database, and hand-made SQL against it (what an operator's `psql` would do)."""

    def __init__(self, config: StoreConfig, execute: Callable[[str, tuple[Any, ...]], None]) -> None:
        self.config = config
        self._execute = execute

    def sql(self, statement: str, *params: Any) -> None:
        self._execute(statement, params)

    def hand_edit(self, name: str, version: int, body: str) -> None:
        """Store `body` as the next version of `name`, in both tables, as a careless manual fix would."""
        self.sql("UPDATE toolscore_expectations SET version = ?, body = ? WHERE name = ?", version, body, name)
        self.sql(
            "INSERT INTO toolscore_changes (name, kind, version, body, at_ns) VALUES (?, 'updated', ?, ?, 0)",
            name,
            version,
            body,
        )


@pytest.fixture(params=["sqlite", POSTGRES_PARAM])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        path = tmp_path / "registry.db"

        def sqlite_execute(statement: str, params: tuple[Any, ...]) -> None:
            with sqlite3.connect(path) as conn:
                conn.execute(statement, params)

        yield Database(SqliteStoreConfig(path=str(path)), sqlite_execute)
        return
    dsn = request.getfixturevalue("postgres_dsn")

    def postgres_execute(statement: str, params: tuple[Any, ...]) -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(statement.replace("?", "%s").encode(), params)

    yield Database(PostgresStoreConfig(dsn=dsn), postgres_execute)


def _config(database: Database, **extra: Any) -> RegistryConfig:
    return RegistryConfig(store=database.config, poll_interval_s=0.05, **extra)


# -- rows this version cannot read -------------------------------------------------------------------

NEWER_SCORER = '{"enabled":true,"labels":{},"match":{"agent":"travel"},"name":"b","scorers":[{"type":"from_v2"}]}'


def test_an_unreadable_row_does_not_stop_a_replica_from_starting(
    database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    """A newer toolscore (or a hand edit) stored a document this one cannot validate: the rest load."""
    with Registry.from_config(_config(database)) as writer:
        writer.apply([doc("a"), doc("b"), doc("c")])
    database.hand_edit("b", 2, NEWER_SCORER)
    with caplog.at_level(logging.ERROR, "toolscore.registry"), Registry.from_config(_config(database)) as replica:
        assert names(replica) == ["a", "c"]
        assert list(replica.unreadable) == ["b"]
        stand_in = replica.get("b")
        assert (stand_in.version, stand_in.enabled) == (2, False)
        assert "scorers[0]" in stand_in.labels[UNREADABLE_LABEL]
    assert "'b' version 2" in caplog.text
    assert "from_v2" in caplog.text


def test_an_unreadable_update_keeps_the_last_good_version_and_later_changes_still_arrive(
    database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    with Registry.from_config(_config(database)) as one, Registry.from_config(_config(database)) as two:
        one.apply([doc("a"), doc("b")])
        assert eventually(lambda: names(two) == ["a", "b"])
        with caplog.at_level(logging.ERROR, "toolscore.registry"):
            database.hand_edit("b", 2, "{not json")
            stored = one.put(doc("d"))  # a good write after the bad row: it succeeds and is reported so
            assert stored.version == 1
            assert eventually(lambda: names(two) == ["a", "b", "d"]), "the poll went past the bad row"
        assert two.index.expectations[1].version == 1, "`b` stays at its last readable version"
        assert two.unreadable.keys() == {"b"}
        assert "'b' version 2" in caplog.text
        one.put(doc("b", tool="fixed"), expected_version=2)  # replacing the bad row heals it everywhere
        assert eventually(lambda: not two.unreadable and two.get("b").version == 3)
        assert names(two) == ["a", "b", "d"]


def test_apply_replaces_an_unreadable_row(database: Database) -> None:
    with Registry.from_config(_config(database)) as writer:
        writer.apply([doc("a"), doc("b")])
    database.hand_edit("b", 2, NEWER_SCORER)
    with Registry.from_config(_config(database)) as registry:
        assert registry.apply([doc("a"), doc("b")]) == [("a", "unchanged"), ("b", "updated")]
        assert names(registry) == ["a", "b"]
        assert not registry.unreadable


# -- replicas applying the same files at once --------------------------------------------------------


def _files(directory: Path, *docs: dict[str, Any]) -> Path:
    directory.mkdir(exist_ok=True)
    (directory / "expectations.yaml").write_text(yaml.safe_dump({"expectations": list(docs)}))
    return directory


class RacedStore(SqliteStore):
    """A real SQLite store whose first batch write lets `rival` (another replica) write just before it."""

    def __init__(self, path: Path, rival: Callable[[], None]) -> None:
        super().__init__(path)
        self._rival: Callable[[], None] | None = rival

    def write_batch(self, writes: Sequence[Write]) -> list[Change]:
        rival, self._rival = self._rival, None
        if rival is not None:
            rival()
        return super().write_batch(writes)


def test_replicas_starting_together_with_the_same_files_all_start(tmp_path: Path) -> None:
    """Both plan to create the files' expectations; the one that writes second re-plans instead of failing."""
    files = _files(tmp_path / "files", doc("a"), doc("b"))
    db = tmp_path / "registry.db"
    config = RegistryConfig(store=SqliteStoreConfig(path=str(db)), files=[str(files)], watch_files=False)

    def rival() -> None:
        Registry.from_config(config).close()

    with Registry(RacedStore(db, rival), config=config) as registry:
        assert names(registry) == ["a", "b"]
        assert [len(registry.history(name)) for name in ("a", "b")] == [1, 1], "written once, by the rival"


def test_a_file_reload_racing_another_replica_applies_again(tmp_path: Path) -> None:
    files = _files(tmp_path / "files", doc("a"), doc("b"))
    db = tmp_path / "registry.db"
    config = RegistryConfig(store=SqliteStoreConfig(path=str(db)), files=[str(files)], watch_files=False)
    Registry.from_config(config).close()
    store = RacedStore(db, lambda: Registry.from_config(config).close())
    with Registry(store, config=config) as registry:
        _files(files, doc("a", tool="changed"), doc("c"))  # the ConfigMap changed under every replica
        store._rival = lambda: Registry.from_config(config).close()
        assert registry.reload_files() == [("a", "unchanged"), ("c", "unchanged")]
        assert names(registry) == ["a", "c"]
        assert [e.version for e in registry.history("a")] == [1, 2]


def test_three_postgres_replicas_starting_at_once_with_the_same_files_all_start(
    postgres_dsn: str, tmp_path: Path
) -> None:
    files = _files(tmp_path / "files", *(doc(f"e{i}", agent=f"agent-{i}") for i in range(30)))
    config = RegistryConfig(store=PostgresStoreConfig(dsn=postgres_dsn), files=[str(files)], watch_files=False)
    start = threading.Barrier(3)
    outcomes: list[str] = []

    def replica() -> None:
        start.wait()
        try:
            Registry.from_config(config).close()
            outcomes.append("started")
        except Exception as exc:  # what the collector would exit with
            outcomes.append(repr(exc))

    threads = [threading.Thread(target=replica) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes == ["started"] * 3
    with Registry.from_config(config) as registry:
        assert {e.version for e in registry.list()} == {1}


# -- the store going away and coming back ----------------------------------------------------------


def _postgres(server: PostgresServer, **extra: Any) -> RegistryConfig:
    store = PostgresStoreConfig(dsn=server.dsn, connect_timeout_s=1)
    return RegistryConfig(store=store, poll_interval_s=0.05, **extra)


@pytest.mark.integration
def test_a_postgres_outage_is_logged_once_matching_goes_on_and_the_registry_catches_up(
    own_postgres: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    with Registry.from_config(_postgres(own_postgres)) as replica:
        replica.put(doc("a"))
        with caplog.at_level(logging.DEBUG, "toolscore.registry"):
            own_postgres.stop()
            assert eventually(lambda: replica.health.failures >= 20), "the poll keeps trying"
            assert names(replica) == ["a"], "matching goes on with what was read last"
            assert replica.health.error is not None
            outage = [r for r in caplog.records if r.levelno >= logging.WARNING]
            own_postgres.start()
            assert eventually(lambda: replica.health.error is None)
        errors = [r for r in outage if r.levelno >= logging.ERROR]
        assert len(errors) == 1, [r.getMessage() for r in errors]
        assert "registry store unreachable" in errors[0].getMessage()
        assert "1 expectations read" in errors[0].getMessage()
        assert len(outage) <= 3, [r.getMessage() for r in outage]  # + the listener's loss and first retry
        assert not [r for r in caplog.records if r.exc_info], "no tracebacks"
        assert "registry store readable again" in caplog.text
        with Registry.from_config(_postgres(own_postgres)) as writer:
            writer.put(doc("b"))
        assert eventually(lambda: names(replica) == ["a", "b"])


@pytest.mark.integration
def test_a_file_change_during_an_outage_is_applied_when_the_store_returns(
    own_postgres: PostgresServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    files = _files(tmp_path / "files", doc("a"))
    config = _postgres(own_postgres, files=[str(files)], file_poll_interval_s=0.05)
    with Registry.from_config(config) as replica:
        own_postgres.stop()
        assert eventually(lambda: replica.health.error is not None)
        with caplog.at_level(logging.WARNING, "toolscore.registry"):
            _files(files, doc("a"), doc("b"))  # the ConfigMap changed while the database was down
            assert eventually(lambda: "expectation files not applied" in caplog.text)
        own_postgres.start()
        assert eventually(lambda: names(replica) == ["a", "b"])


def test_a_committed_write_is_reported_as_written_when_reading_it_back_fails(tmp_path: Path) -> None:
    store = FlakyReads(tmp_path / "registry.db")
    with Registry(store, poll_interval_s=0.05) as registry:
        store.failing = True
        assert registry.put(doc("a")).version == 1
        assert registry.apply([doc("b")]) == [("b", "created")]
        assert registry.health.error == "OperationalError: disk I/O error"
        store.failing = False
        assert eventually(lambda: names(registry) == ["a", "b"]), "the poll caught up"
    store.close()


# -- starting while the store is down --------------------------------------------------------------


@pytest.mark.integration
def test_without_wait_for_store_an_unreachable_store_fails_the_start(own_postgres: PostgresServer) -> None:
    """The CLI's and the library's default: a command against a database that is down says so."""
    own_postgres.stop()
    with pytest.raises(psycopg.OperationalError):
        Registry.from_config(_postgres(own_postgres))


@pytest.mark.integration
def test_a_registry_waiting_for_its_store_starts_empty_and_loads_when_it_is_back(
    own_postgres: PostgresServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    files = _files(tmp_path / "files", doc("a"))
    config = _postgres(own_postgres, files=[str(files)], file_poll_interval_s=0.05)
    with Registry.from_config(_postgres(own_postgres)) as writer:
        writer.put(doc("b"))  # written through the API earlier: in the store, not in the files
    own_postgres.stop()
    with caplog.at_level(logging.WARNING, "toolscore.registry"), Registry(config=config, wait_for_store=True) as late:
        assert not late.loaded
        assert names(late) == []
        with pytest.raises(StoreUnavailable):
            late.list()
        assert eventually(lambda: late.health.failures >= 5)
        assert len([r for r in caplog.records if r.levelno >= logging.ERROR]) == 1
        own_postgres.start()
        assert eventually(lambda: names(late) == ["a", "b"]), "the store's set, and the files applied into it"
        assert late.loaded
        assert late.health.error is None


@pytest.mark.integration
def test_a_registry_waiting_for_its_store_still_refuses_bad_files(own_postgres: PostgresServer, tmp_path: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    (files / "bad.yaml").write_text("name: a\nmatch: {agent: {regex: '('}}\n")
    own_postgres.stop()
    with pytest.raises(InvalidExpectation) as caught:
        Registry(config=_postgres(own_postgres, files=[str(files)]), wait_for_store=True)
    assert caught.value.field == "match.agent"


def _watchdogs() -> int:
    return sum(thread.name == "toolscore-registry-watchdog" for thread in threading.enumerate())


def test_a_postgres_store_that_cannot_create_its_tables_closes_its_connection(postgres_server: str) -> None:
    """A registry waiting for its store opens it at every poll: a failed open must leave no connection, nor
    the thread that bounds its calls."""
    watchdogs = _watchdogs()
    role = f"weak_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")  # no CREATE on schema public
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                PostgresStore(f"{postgres_server} user={role}", listen=False)
            except psycopg.errors.InsufficientPrivilege:
                pass
            else:
                raise AssertionError("the tables were created without the privilege")
            gc.collect()
        assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
        assert eventually(lambda: _watchdogs() == watchdogs)
    finally:
        with psycopg.connect(postgres_server, autocommit=True) as admin:
            admin.execute(f"DROP ROLE {role}")
