"""The in-process `Registry`: writes, atomic apply, the change feed, file reloads and replicas."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

import pytest

from tests.registry_builders import doc, eventually, names
from toolscore.collector.registry import (
    Expectation,
    InvalidExpectation,
    NotFound,
    PostgresStoreConfig,
    Registry,
    RegistryConfig,
    SqliteStoreConfig,
    VersionConflict,
)
from toolscore.collector.registry._file_sync import FILE_SOURCE_LABEL
from toolscore.collector.registry.stores import Change, MemoryStore, SqliteStore
from toolscore.scorers import AgentRun

EXAMPLE = Path(__file__).parent.parent / "deploy" / "expectations" / "example.yaml"


def test_put_is_visible_to_match_at_once_and_returns_the_version() -> None:
    with Registry(MemoryStore()) as registry:
        stored = registry.put(doc("a"))
        assert stored.version == 1
        assert names(registry) == ["a"]
        assert registry.put(doc("a", agent="other"), expected_version=1).version == 2
        assert names(registry) == []
        assert names(registry, "other") == ["a"]
        registry.delete("a")
        assert names(registry, "other") == []
        assert [e.version for e in registry.history("a")] == [1, 2]


def test_put_of_an_invalid_document_raises_with_the_field() -> None:
    with Registry(MemoryStore()) as registry:
        with pytest.raises(InvalidExpectation) as caught:
            registry.put({"name": "a", "match": {"agent": {"regex": "("}}})
        assert caught.value.field == "match.agent"
        assert registry.list() == []


def test_apply_reports_created_updated_unchanged() -> None:
    with Registry(MemoryStore()) as registry:
        assert registry.apply([doc("a"), doc("b")]) == [("a", "created"), ("b", "created")]
        assert registry.apply([doc("a"), doc("b", tool="other")]) == [("a", "unchanged"), ("b", "updated")]
        assert [(e.name, e.version) for e in registry.list()] == [("a", 1), ("b", 2)]
        assert registry.apply([doc("a")], prune=["a", "b", "never"]) == [("a", "unchanged"), ("b", "deleted")]


def test_apply_with_one_invalid_expectation_writes_nothing() -> None:
    with Registry(MemoryStore()) as registry:
        registry.apply([doc("a")])
        bad = {**doc("c"), "scorers": [{"type": "trajectory", "mode": "sideways"}]}
        with pytest.raises(InvalidExpectation) as caught:
            registry.apply([doc("a", tool="changed"), doc("b"), bad])
        assert caught.value.field == "[2].scorers[0].mode"
        assert [(e.name, e.version) for e in registry.list()] == [("a", 1)]
        assert registry.store.latest_seq() == 1


def test_apply_racing_another_writer_fails_whole(tmp_path: Path) -> None:
    """Another replica edits `b` between apply reading the store and writing to it: nothing is written."""
    path = str(tmp_path / "r.db")

    class RacedStore(SqliteStore):
        racing = False

        def list(self, name_prefix: str = "", after: str = "", limit: int | None = None) -> list[Expectation]:
            found = super().list(name_prefix, after, limit)
            if not self.racing:
                return found
            self.racing = False
            other = SqliteStore(path)
            try:
                other.put(Expectation.model_validate(doc("b", tool="someone-else")), 1)
            finally:
                other.close()
            return found

    with Registry(SqliteStore(path)) as registry:
        registry.apply([doc("a"), doc("b")])
    raced = RacedStore(path)
    with Registry(raced) as registry:
        raced.racing = True
        with pytest.raises(VersionConflict):
            registry.apply([doc("a", tool="changed"), doc("b", tool="mine"), doc("c")])
        assert [(e.name, e.version) for e in registry.list()] == [("a", 1), ("b", 2)]
        assert registry.get("b").scorers[0].model_dump()["expected_tool"] == "someone-else"
    raced.close()


def test_apply_rejects_duplicate_names_before_writing() -> None:
    with Registry(MemoryStore()) as registry:
        with pytest.raises(InvalidExpectation) as caught:
            registry.apply([doc("a"), doc("a", tool="x")])
        assert caught.value.field == "[1].name"
        assert registry.list() == []


def test_subscribers_see_every_change_in_order_until_unsubscribed() -> None:
    with Registry(MemoryStore()) as registry:
        seen: list[Change] = []
        unsubscribe = registry.subscribe(seen.append)
        registry.put(doc("a"))
        registry.put(doc("a", tool="x"))
        registry.delete("a")
        unsubscribe()
        registry.put(doc("b"))
        assert [(c.seq, c.kind, c.name, c.version) for c in seen] == [
            (1, "created", "a", 1),
            (2, "updated", "a", 2),
            (3, "deleted", "a", 3),
        ]


def test_a_failing_subscriber_does_not_stop_others(caplog: pytest.LogCaptureFixture) -> None:
    def broken(change: Change) -> None:
        raise RuntimeError("boom")

    with Registry(MemoryStore()) as registry:
        seen: list[str] = []
        registry.subscribe(broken)
        registry.subscribe(lambda c: seen.append(c.name))
        registry.put(doc("a"))
        assert seen == ["a"]
    assert "registry subscriber failed" in caplog.text


def test_match_in_flight_keeps_its_snapshot() -> None:
    with Registry(MemoryStore()) as registry:
        registry.put(doc("a"))
        snapshot = registry.index
        registry.put(doc("b"))
        assert [e.name for e in snapshot.match(AgentRun(agent_name="travel"))] == ["a"]
        assert names(registry) == ["a", "b"]


def test_example_file_feeds_a_registry() -> None:
    with Registry.from_file(EXAMPLE, watch=False) as registry:
        run = AgentRun(
            agent_name="travel-agent",
            resource={"service.name": "travel-api"},
            attributes={"baggage.test_case.id": "book-flight-001"},
        )
        assert [e.name for e in registry.match(run)] == ["travel.book-flight.canary"]
        assert len(registry.list()) == 6


# -- files ------------------------------------------------------------------------------------------


PICK = "scorers: [{type: tool_selection, expected_tool: x}]"
"""A scorer for the documents of these tests, which are about files and stores, not scoring."""


def _write(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def test_file_edit_is_reloaded_without_restart(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    _write(path, f"name: a\nmatch: {{agent: travel}}\n{PICK}\n")
    with Registry.from_file(path, interval_s=0.05) as registry:
        assert names(registry) == ["a"]
        _write(
            path, f"- name: a\n  match: {{agent: other}}\n  {PICK}\n- name: b\n  match: {{agent: travel}}\n  {PICK}\n"
        )
        assert eventually(lambda: names(registry) == ["b"])
        assert names(registry, "other") == ["a"]
        assert registry.get("a").version == 2
        _write(path, f"name: b\nmatch: {{agent: travel}}\n{PICK}\n")
        assert eventually(lambda: [e.name for e in registry.list()] == ["b"])
        assert registry.get("b").version == 1


def test_bad_edit_keeps_the_last_good_set_and_reports_where(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "exp.yaml"
    _write(path, f"name: a\nmatch: {{agent: travel}}\n{PICK}\n")
    with (
        caplog.at_level(logging.ERROR, logger="toolscore.registry"),
        Registry.from_file(path, interval_s=0.05) as registry,
    ):
        _write(path, f"name: a\nmatch:\n  agent: {{regex: '('}}\n{PICK}\n")
        assert eventually(lambda: registry.last_error is not None)
        assert registry.last_error is not None
        assert (registry.last_error.file, registry.last_error.line) == (str(path), 3)
        assert names(registry) == ["a"]
        assert registry.get("a").version == 1
        _write(path, f"name: a\nmatch: {{agent: fixed}}\n{PICK}\n")
        assert eventually(lambda: names(registry, "fixed") == ["a"])
        assert registry.last_error is None
    assert f"{path}:3: match.agent: bad regex" in caplog.text


def test_directory_of_files_is_watched_for_new_files(tmp_path: Path) -> None:
    _write(tmp_path / "a.yaml", f"name: a\nmatch: {{agent: travel}}\n{PICK}\n")
    with Registry.from_file(tmp_path, interval_s=0.05) as registry:
        _write(
            tmp_path / "b.json",
            json.dumps({**doc("b"), "match": {"agent": "travel"}}),
        )
        assert eventually(lambda: names(registry) == ["a", "b"])
        (tmp_path / "a.yaml").unlink()
        assert eventually(lambda: names(registry) == ["b"])


def test_a_configmap_mounted_directory_loads_each_file_once(tmp_path: Path) -> None:
    """Kubernetes mounts a ConfigMap as links to `..data/`, itself a link to a hidden timestamped copy."""
    snapshot = tmp_path / "..2026_11_22_02_40_00.000000001"
    snapshot.mkdir()
    _write(snapshot / "agents.yaml", f"name: a\nmatch: {{agent: travel}}\n{PICK}\n")
    (tmp_path / "..data").symlink_to(snapshot.name)
    (tmp_path / "agents.yaml").symlink_to(Path("..data") / "agents.yaml")
    (tmp_path / ".git").mkdir()
    _write(tmp_path / ".git" / "stale.yaml", f"name: stale\nmatch: {{agent: travel}}\n{PICK}\n")
    with Registry.from_file(tmp_path, watch=False) as registry:
        assert names(registry) == ["a"]


def test_invalid_files_at_start_raise(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    _write(path, "name: 'bad name'\nmatch: {agent: travel}\n")
    with pytest.raises(InvalidExpectation) as caught:
        Registry.from_file(path)
    assert (caught.value.line, caught.value.field) == (1, "name")


def test_files_applied_into_a_persistent_store_survive_restart(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    _write(path, f"name: a\nmatch: {{agent: travel}}\n{PICK}\n")
    config = RegistryConfig(store=SqliteStoreConfig(path=str(tmp_path / "r.db")), files=[str(path)], watch_files=False)
    with Registry.from_config(config) as registry:
        assert registry.get("a").version == 1
    with Registry.from_config(config) as registry:
        assert registry.get("a").version == 1  # unchanged file: not rewritten
        assert names(registry) == ["a"]


def test_a_name_removed_from_the_files_while_no_collector_ran_is_deleted_at_the_next_start(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    _write(path, f"name: a\nmatch: {{agent: travel}}\n{PICK}\n---\nname: b\nmatch: {{agent: travel}}\n{PICK}\n")
    config = RegistryConfig(store=SqliteStoreConfig(path=str(tmp_path / "r.db")), files=[str(path)], watch_files=False)
    with Registry.from_config(config) as registry:
        registry.put(doc("made-through-the-api"))
        assert names(registry) == ["a", "b", "made-through-the-api"]
        assert registry.get("a").labels == {FILE_SOURCE_LABEL: "files"}
    _write(path, f"name: a\nmatch: {{agent: travel}}\n{PICK}\n")  # edited while nothing was running
    with Registry.from_config(config) as registry:
        assert names(registry) == ["a", "made-through-the-api"]  # what the API made is not the files' to delete
        assert registry.get("a").version == 1


# -- replicas ---------------------------------------------------------------------------------------


def test_sqlite_replicas_see_each_others_changes_within_the_poll_interval(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    with Registry(SqliteStore(db), poll_interval_s=0.05) as one, Registry(SqliteStore(db), poll_interval_s=0.05) as two:
        seen: list[str] = []
        two.subscribe(lambda c: seen.append(f"{c.kind} {c.name}"))
        one.put(doc("a"))
        assert eventually(lambda: names(two) == ["a"])
        one.delete("a")
        assert eventually(lambda: names(two) == [])
        assert seen == ["created a", "deleted a"]
        one.put(doc("b"))
        two.put(doc("b", tool="x"), expected_version=1)
        with pytest.raises(VersionConflict):
            one.put(doc("b", tool="y"), expected_version=1)


def test_postgres_replicas_are_woken_by_notify_before_the_poll(postgres_dsn: str) -> None:
    config = RegistryConfig(store=PostgresStoreConfig(dsn=postgres_dsn), poll_interval_s=30)
    with Registry.from_config(config) as one, Registry.from_config(config) as two:
        arrived = threading.Event()
        two.subscribe(lambda c: arrived.set())
        started = time.monotonic()
        one.put(doc("a"))
        assert arrived.wait(10)
        assert time.monotonic() - started < 5  # far below the 30 s poll interval
        assert names(two) == ["a"]
        with pytest.raises(NotFound):
            two.get("b")


def test_postgres_replica_without_listen_polls(postgres_dsn: str) -> None:
    config = RegistryConfig(store=PostgresStoreConfig(dsn=postgres_dsn, listen=False), poll_interval_s=0.05)
    with Registry.from_config(config) as one, Registry.from_config(config) as two:
        one.put(doc("a"))
        assert eventually(lambda: names(two) == ["a"])


def test_close_is_prompt_and_idempotent(postgres_dsn: str) -> None:
    registry = Registry.from_config(RegistryConfig(store=PostgresStoreConfig(dsn=postgres_dsn), poll_interval_s=30))
    started = time.monotonic()
    registry.close()
    registry.close()
    assert time.monotonic() - started < 2


def test_postgres_listener_that_lost_its_connection_reconnects_and_is_woken_again(postgres_dsn: str) -> None:
    import psycopg

    config = RegistryConfig(store=PostgresStoreConfig(dsn=postgres_dsn), poll_interval_s=30)
    with Registry.from_config(config) as one, Registry.from_config(config) as two:
        arrived = threading.Event()
        two.subscribe(lambda c: arrived.set())
        with psycopg.connect(postgres_dsn, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE query LIKE 'LISTEN %%' AND pid <> pg_backend_pid()"
            ).fetchall()
            assert len(killed) == 2, "both replicas' listeners were cut"
            assert eventually(
                lambda: (
                    len(admin.execute("SELECT pid FROM pg_stat_activity WHERE query LIKE 'LISTEN %%'").fetchall()) == 2
                )
            ), "both listeners are back"
        started = time.monotonic()
        one.put(doc("a"))
        assert arrived.wait(10)
        assert time.monotonic() - started < 5  # woken by NOTIFY, far below the 30 s poll interval
        assert names(two) == ["a"]
