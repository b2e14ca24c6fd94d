"""The store contract, run against every store: memory, SQLite and a real PostgreSQL server."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import psycopg
import pytest

from tests.postgres import POSTGRES_PARAM
from toolscore.collector.registry import (
    AlreadyExists,
    ChangesCompacted,
    Expectation,
    NoRegistryTables,
    NotFound,
    PostgresStoreConfig,
    SqliteStoreConfig,
    VersionConflict,
)
from toolscore.collector.registry.stores import ExpectationStore, MemoryStore, SqliteStore, Write, open_store
from toolscore.collector.registry.stores._postgres_store import PostgresStore
from toolscore.collector.registry.stores._sql_base import prefix_end

Opener = Callable[[], ExpectationStore]


def exp(name: str = "travel", agent: str = "travel-agent", tool: str = "book_flight") -> Expectation:
    return Expectation.model_validate(
        {
            "name": name,
            "labels": {"owner": "travel-team"},
            "match": {"agent": agent, "attributes": {"session.id": {"exists": True}}},
            "scorers": [
                {"type": "tool_selection", "expected_tool": tool},
                {"type": "f1", "expected": [{"name": tool}]},
            ],
        }
    )


@pytest.fixture(params=["memory", "sqlite", POSTGRES_PARAM])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens a new store on the same underlying data each call (for the memory store: the same object)."""
    opened: list[ExpectationStore] = []
    if request.param == "memory":
        shared = MemoryStore()

        def open_store() -> ExpectationStore:
            return shared
    elif request.param == "sqlite":

        def open_store() -> ExpectationStore:
            opened.append(SqliteStore(tmp_path / "sub" / "registry.db"))
            return opened[-1]
    else:
        dsn = request.getfixturevalue("postgres_dsn")

        def open_store() -> ExpectationStore:
            opened.append(PostgresStore(dsn))
            return opened[-1]

    yield open_store
    for store in opened:
        store.close()


@pytest.fixture
def store(opener: Opener) -> ExpectationStore:
    return opener()


def test_store_satisfies_the_protocol(store: ExpectationStore) -> None:
    assert isinstance(store, ExpectationStore)


def test_put_assigns_versions_and_get_returns_the_stored_value(store: ExpectationStore) -> None:
    stored, change = store.put(exp())
    assert (stored.version, change.kind, change.version, change.name) == (1, "created", 1, "travel")
    assert store.get("travel") == stored
    again, change = store.put(exp(tool="search"))
    assert (again.version, change.kind) == (2, "updated")
    assert store.get("travel").scorers[0].spec == {"type": "tool_selection", "expected_tool": "search"}


def test_get_of_a_missing_name_raises_not_found(store: ExpectationStore) -> None:
    with pytest.raises(NotFound):
        store.get("nope")
    with pytest.raises(NotFound):
        store.delete("nope")
    with pytest.raises(NotFound):
        store.history("nope")


def test_list_is_in_name_order(store: ExpectationStore) -> None:
    for name in ("c", "a", "b"):
        store.put(exp(name))
    assert [e.name for e in store.list()] == ["a", "b", "c"]


MIXED_NAMES = [f"{stem}{i:02d}" for stem in ("a", "A", "a-", "a_", "a.", "B", "b", "_b", "-b") for i in range(12)]
"""Names whose code point order is not a locale's (`B` before `a`, `-` before `.` before `_`), 108 of them."""


def _pages(store: ExpectationStore, name_prefix: str, size: int) -> list[list[str]]:
    """Every page of `size` with the prefix, each read after the last name of the one before."""
    pages, after = [], ""
    while page := [e.name for e in store.list(name_prefix, after, size)]:
        pages.append(page)
        after = page[-1]
    return pages


def test_list_pages_in_code_point_order_each_after_the_last_name(store: ExpectationStore) -> None:
    store.write_batch([Write(name, exp(name)) for name in MIXED_NAMES])
    for name in MIXED_NAMES[::5]:
        store.delete(name)
    live = sorted(set(MIXED_NAMES) - set(MIXED_NAMES[::5]))
    for prefix in ("", "a", "a_", "b", "-", "zz"):
        pages = _pages(store, prefix, 7)
        expected = [name for name in live if name.startswith(prefix)]
        assert [name for page in pages for name in page] == expected, prefix
        assert all(len(page) == 7 for page in pages[:-1]), "every page full but the last"
    assert [e.name for e in store.list()] == live
    assert [e.name for e in store.list("a_", "a_05")] == [n for n in live if n.startswith("a_") and n > "a_05"]


def test_a_prefix_is_the_range_of_names_below_its_end() -> None:
    assert prefix_end("a_") == "a`"
    assert prefix_end("a\U0010ffff\U0010ffff") == "b", "no name after `a` and the last code point but starts so"
    assert prefix_end("\U0010ffff") is None
    assert prefix_end("\ud7ff") == "\ue000", "surrogates are skipped: they cannot be encoded"
    assert prefix_end("") is None


def test_a_postgres_database_of_another_collation_pages_in_code_point_order_too(postgres_icu_dsn: str) -> None:
    """Page tokens are names compared as Python compares them: the store must not page in the locale's order."""
    store = PostgresStore(postgres_icu_dsn, listen=False)
    try:
        store.write_batch([Write(name, exp(name)) for name in MIXED_NAMES])
        assert [name for page in _pages(store, "", 10) for name in page] == sorted(MIXED_NAMES)
        assert [name for page in _pages(store, "a", 5) for name in page] == sorted(
            name for name in MIXED_NAMES if name.startswith("a")
        )
    finally:
        store.close()


def test_create_with_expected_version_zero_fails_when_present(store: ExpectationStore) -> None:
    store.put(exp(), expected_version=0)
    with pytest.raises(AlreadyExists) as caught:
        store.put(exp(tool="other"), expected_version=0)
    assert caught.value.version == 1
    assert store.get("travel").version == 1


def test_put_with_a_stale_version_is_a_conflict_and_writes_nothing(store: ExpectationStore) -> None:
    store.put(exp())
    store.put(exp(tool="second"), expected_version=1)
    with pytest.raises(VersionConflict) as caught:
        store.put(exp(tool="third"), expected_version=1)
    assert (caught.value.expected, caught.value.actual) == (1, 2)
    assert store.get("travel").scorers[0].spec["expected_tool"] == "second"
    assert store.latest_seq() == 2
    with pytest.raises(NotFound):
        store.put(exp("absent"), expected_version=3)


def test_delete_keeps_history_and_versions_keep_increasing(store: ExpectationStore) -> None:
    store.put(exp())
    store.put(exp(tool="second"))
    with pytest.raises(VersionConflict):
        store.delete("travel", expected_version=1)
    change = store.delete("travel", expected_version=2)
    assert (change.kind, change.version, change.expectation.version) == ("deleted", 3, 2)
    assert store.list() == []
    with pytest.raises(NotFound):
        store.get("travel")
    recreated, change = store.put(exp(tool="third"), expected_version=0)
    assert (recreated.version, change.kind) == (4, "created")
    history = store.history("travel")
    assert [e.version for e in history] == [1, 2, 4]
    assert [e.scorers[0].spec["expected_tool"] for e in history] == ["book_flight", "second", "third"]
    changes = store.history_changes("travel")
    assert [(c.kind, c.version, c.expectation.version) for c in changes] == [
        ("created", 1, 1),
        ("updated", 2, 2),
        ("deleted", 3, 2),  # a deletion carries the value it deleted
        ("created", 4, 4),
    ]
    assert [c.seq for c in changes] == sorted(c.seq for c in changes)
    with pytest.raises(NotFound):
        store.history_changes("never-written")


def test_history_changes_page_after_a_seq(store: ExpectationStore) -> None:
    for tool in ("a", "b", "c"):
        store.put(exp(tool=tool))
        store.put(exp("other", tool=tool))
    store.delete("travel")
    seqs = [c.seq for c in store.history_changes("travel")]
    assert seqs == [1, 3, 5, 7]
    assert [c.seq for c in store.history_changes("travel", limit=2)] == [1, 3]
    assert [c.seq for c in store.history_changes("travel", after_seq=3, limit=2)] == [5, 7]
    assert [c.seq for c in store.history_changes("travel", after_seq=5)] == [7]
    assert store.history_changes("travel", after_seq=7) == [], "past the last page: empty, not NotFound"


def test_changes_since_is_the_ordered_log(store: ExpectationStore) -> None:
    assert store.latest_seq() == 0
    store.put(exp("a"))
    store.put(exp("b"))
    store.delete("a")
    changes = store.changes_since(0)
    assert [(c.seq, c.kind, c.name, c.version) for c in changes] == [
        (1, "created", "a", 1),
        (2, "created", "b", 1),
        (3, "deleted", "a", 2),
    ]
    assert [c.seq for c in store.changes_since(2)] == [3]
    assert store.changes_since(3) == []
    assert store.latest_seq() == 3
    assert [c.seq for c in store.changes_since(0, limit=2)] == [1, 2], "the first `limit`, in order"
    assert [c.seq for c in store.changes_since(1, limit=1)] == [2]
    assert [c.seq for c in store.changes_since(2, limit=5)] == [3]


def test_stored_expectation_round_trips_whole(store: ExpectationStore) -> None:
    original = Expectation.model_validate(
        {
            "name": "full",
            "enabled": False,
            "labels": {"owner": "o", "severity": "page"},
            "match": {
                "agent": {"in": ["a", "b"]},
                "service": {"regex": "^svc-"},
                "resource": {"deployment.environment.name": "prod"},
                "attributes": {"tier": 3, "flag": {"exists": False}},
                "input": {"contains": "refund"},
            },
            "scorers": [
                {"type": "trajectory", "name": "t", "threshold": 0.5, "mode": "strict", "expected": [{"name": "x"}]},
                {"type": "llm_judge", "model": "openai/gpt-4o-mini", "sample_rate": 0.25},
            ],
        }
    )
    stored, _ = store.put(original)
    assert store.get("full").to_dict() == stored.to_dict() == {**original.to_dict(), "version": 1}


def test_writes_survive_a_restart(opener: Opener) -> None:
    first = opener()
    first.put(exp("a"))
    first.put(exp("a", tool="second"))
    first.put(exp("b"))
    first.delete("b")
    first.close()
    reopened = opener()
    assert [(e.name, e.version) for e in reopened.list()] == [("a", 2)]
    assert [e.version for e in reopened.history("b")] == [1]
    assert [(c.kind, c.version) for c in reopened.history_changes("b")] == [("created", 1), ("deleted", 2)]
    assert reopened.latest_seq() == 4
    assert reopened.put(exp("b"))[0].version == 3


def test_two_store_instances_see_each_others_writes(opener: Opener) -> None:
    one, two = opener(), opener()
    one.put(exp("a"))
    assert two.get("a").version == 1
    two.put(exp("a", tool="other"), expected_version=1)
    assert [c.version for c in one.changes_since(0)] == [1, 2]


def test_concurrent_writers_exactly_one_wins_per_version(opener: Opener) -> None:
    """Threads on separate store instances race to move the same expectation from version v to v+1."""
    stores = [opener() for _ in range(6)]
    stores[0].put(exp())
    rounds = 8
    wins: list[list[int]] = []

    def race(i: int, version: int, barrier: threading.Barrier, winners: list[int], conflicts: list[int]) -> None:
        barrier.wait()
        try:
            stores[i].put(exp(tool=f"writer-{i}"), expected_version=version)
            winners.append(i)
        except VersionConflict:
            conflicts.append(i)

    for version in range(1, rounds + 1):
        barrier = threading.Barrier(len(stores))
        winners: list[int] = []
        conflicts: list[int] = []
        threads = [
            threading.Thread(target=race, args=(i, version, barrier, winners, conflicts)) for i in range(len(stores))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(winners) == 1
        assert len(conflicts) == len(stores) - 1
        wins.append(winners)
        current = stores[0].get("travel")
        assert current.version == version + 1
        assert current.scorers[0].spec["expected_tool"] == f"writer-{winners[0]}"
    assert [e.version for e in stores[0].history("travel")] == list(range(1, rounds + 2))


def test_concurrent_creates_of_one_name_exactly_one_succeeds(opener: Opener) -> None:
    stores = [opener() for _ in range(6)]
    barrier = threading.Barrier(len(stores))
    outcomes: list[str] = []

    def create(i: int) -> None:
        barrier.wait()
        try:
            stores[i].put(exp("fresh", tool=f"w{i}"), expected_version=0)
            outcomes.append("created")
        except AlreadyExists:
            outcomes.append("exists")

    threads = [threading.Thread(target=create, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["created"] + ["exists"] * (len(stores) - 1)
    assert [c.seq for c in stores[0].changes_since(0)] == [1]


def test_unconditional_concurrent_puts_all_land_with_distinct_versions(opener: Opener) -> None:
    stores = [opener() for _ in range(4)]
    per_thread = 10

    def write(i: int) -> None:
        for n in range(per_thread):
            stores[i].put(exp(tool=f"w{i}-{n}"))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = len(stores) * per_thread
    assert [e.version for e in stores[0].history("travel")] == list(range(1, total + 1))
    assert [c.seq for c in stores[0].changes_since(0)] == list(range(1, total + 1))


def test_a_batch_is_written_whole_with_its_changes_in_order(store: ExpectationStore) -> None:
    store.put(exp("old"))
    changes = store.write_batch([Write("a", exp("a"), 0), Write("old", None, 1), Write("b", exp("b"))])
    assert [(c.kind, c.name, c.version) for c in changes] == [
        ("created", "a", 1),
        ("deleted", "old", 2),
        ("created", "b", 1),
    ]
    assert [e.name for e in store.list()] == ["a", "b"]
    assert [c.seq for c in store.changes_since(1)] == [c.seq for c in changes]


def test_a_batch_with_one_failing_check_writes_nothing(store: ExpectationStore) -> None:
    store.put(exp("kept"))
    before = store.latest_seq()
    with pytest.raises(VersionConflict):
        store.write_batch([Write("a", exp("a"), 0), Write("kept", exp("kept", tool="cancel"), 7)])
    with pytest.raises(AlreadyExists):
        store.write_batch([Write("b", exp("b"), 0), Write("kept", exp("kept"), 0)])
    assert [e.name for e in store.list()] == ["kept"]
    assert store.get("kept").version == 1
    assert store.latest_seq() == before
    assert store.changes_since(before) == []
    (change,) = store.write_batch([Write("a", exp("a"), 0)])  # and it still writes afterwards
    assert (change.name, change.version) == ("a", 1)


def test_compaction_keeps_the_last_changes_and_each_live_version(store: ExpectationStore) -> None:
    for tool in ("v1", "v2", "v3"):
        store.put(exp("a", tool=tool))  # seq 1-3
    store.put(exp("b"))  # 4: b's live version, older than the last 3 but kept
    store.put(exp("c"))  # 5
    store.delete("c")  # 6
    store.put(exp("a", tool="v4"))  # 7
    store.put(exp("d"))  # 8
    assert store.compact(keep=3, max_removed=100) == 4, "a v1-v3 and c's creation"
    assert store.compacted_seq() == 5
    assert [c.seq for c in store.changes_since(5)] == [6, 7, 8]
    with pytest.raises(ChangesCompacted) as caught:
        store.changes_since(4)
    assert (caught.value.seq, caught.value.compacted_seq) == (4, 5)
    assert [c.seq for c in store.history_changes("b")] == [4]
    assert [e.version for e in store.history("a")] == [4]
    assert [c.kind for c in store.history_changes("c")] == ["deleted"]
    assert [e.name for e in store.list()] == ["a", "b", "d"]
    assert store.compact(keep=3, max_removed=100) == 0, "nothing more until more is written"
    assert store.latest_seq() == 8
    assert store.put(exp("e"))[1].seq == 9, "seqs are never reused"


def test_compaction_goes_a_batch_at_a_time(store: ExpectationStore) -> None:
    for n in range(6):
        store.put(exp("a", tool=f"v{n}"))  # seq 1-6; only 6 is live
    assert store.compact(keep=1, max_removed=2) == 2
    assert store.compacted_seq() == 2, "as far as the batch went"
    assert [c.seq for c in store.changes_since(2)] == [3, 4, 5, 6]
    assert store.compact(keep=1, max_removed=2) == 2
    assert store.compact(keep=1, max_removed=2) == 1
    assert store.compact(keep=1, max_removed=2) == 0
    assert store.compacted_seq() == 5
    assert [c.seq for c in store.changes_since(5)] == [6]


@pytest.mark.parametrize("kind", ["sqlite", POSTGRES_PARAM])
def test_a_store_opened_read_only_reads_and_every_write_fails(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """What `toolscore expectations list/get/history` open: the database itself refuses the writes (SQLite's
    `query_only` or `mode=ro`, PostgreSQL's read-only sessions), whoever runs it, root included."""
    if kind == "sqlite":
        config: SqliteStoreConfig | PostgresStoreConfig = SqliteStoreConfig(path=str(tmp_path / "registry.db"))
    else:
        config = PostgresStoreConfig(dsn=request.getfixturevalue("postgres_dsn"), listen=False)
    with closing(open_store(config)) as writer:
        writer.put(exp("travel", tool="a"))
        writer.put(exp("travel", tool="b"))
    with closing(open_store(config, read_only=True)) as reader:
        assert (reader.get("travel").version, [e.name for e in reader.list()]) == (2, ["travel"])
        writes: list[Callable[[], object]] = [
            lambda: reader.put(exp("other")),
            lambda: reader.delete("travel"),
            lambda: reader.write_batch([Write("other", exp("other"))]),
            lambda: reader.compact(keep=1, max_removed=10),
        ]
        for write in writes:
            with pytest.raises((sqlite3.OperationalError, psycopg.errors.ReadOnlySqlTransaction), match=r"read-?only"):
                write()
    with closing(open_store(config)) as writer:
        assert [(c.seq, c.kind) for c in writer.changes_since(0)] == [(1, "created"), (2, "updated")]


@pytest.mark.parametrize("kind", ["sqlite", POSTGRES_PARAM])
def test_a_store_opened_read_only_names_the_registry_tables_it_lacks(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Told from the catalog, table by table, before any query: not the driver's error about the probe."""
    create = "CREATE TABLE toolscore_expectations (name TEXT)"
    if kind == "sqlite":
        path = tmp_path / "partial.db"
        with closing(sqlite3.connect(path)) as db:
            db.execute(create)
        config: SqliteStoreConfig | PostgresStoreConfig = SqliteStoreConfig(path=str(path))
    else:
        dsn = request.getfixturevalue("postgres_dsn")
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(create)
        config = PostgresStoreConfig(dsn=dsn, listen=False)
    with pytest.raises(NoRegistryTables) as refused:
        open_store(config, read_only=True)
    assert (refused.value.prefix, refused.value.missing) == ("toolscore_", ("toolscore_changes",))
