"""The registry's reads, replies and streams stay bounded whatever the length of its change log."""

from __future__ import annotations

import itertools
import logging
import queue
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.registry_builders import collect_changes, doc, eventually, names, serve
from toolscore.collector.registry import (
    ChangesCompacted,
    Registry,
    RegistryConfig,
    SqliteStoreConfig,
    parse_expectation,
)
from toolscore.collector.registry.api import RegistryCallError, RegistryClient
from toolscore.collector.registry.stores import Change, SqliteStore, Write
from toolscore.collector.registry.stores._sql_base import Cursor
from toolscore.registry.v1 import registry_pb2 as pb
from toolscore.registry.v1 import registry_pb2_grpc as pb_grpc

PAGE = 7
"""The page size the tests set, so that a few dozen changes span several pages."""


class RecordingReads(SqliteStore):
    """A real SQLite store that records how many changes each read of the log returned."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.reads: list[int] = []

    def changes_since(self, seq: int, limit: int | None = None) -> list[Change]:
        changes = super().changes_since(seq, limit)
        self.reads.append(len(changes))
        return changes


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("toolscore.collector.registry.api._watch.CHANGE_PAGE_SIZE", PAGE)
    monkeypatch.setattr("toolscore.collector.registry._snapshot.CHANGE_PAGE_SIZE", PAGE)


def test_a_watch_replayed_from_the_start_reads_the_log_a_page_at_a_time(small_pages: None, tmp_path: Path) -> None:
    store = RecordingReads(tmp_path / "registry.db")
    with Registry(store, poll_interval_s=0.05) as registry:
        registry.apply([doc(f"e{i:02d}") for i in range(30)])
        for server in serve(registry):
            got: queue.Queue[Change] = queue.Queue()
            with RegistryClient(server.target) as client:
                store.reads.clear()
                watch = client.watch(since_seq=0)
                thread = collect_changes(watch, got)
                replayed = [got.get(timeout=10) for _ in range(30)]
                client.put(registry.get("e00").model_copy(update={"enabled": False}))
                live = got.get(timeout=10)
                watch.cancel()
                thread.join(10)
    assert [c.seq for c in [*replayed, live]] == list(range(1, 32)), "no gap and no repeat across pages"
    assert (live.name, live.kind) == ("e00", "updated")
    assert max(store.reads) <= PAGE, store.reads
    store.close()


def test_a_replica_catches_up_on_a_long_backlog_a_page_at_a_time(small_pages: None, tmp_path: Path) -> None:
    path = tmp_path / "registry.db"
    store = RecordingReads(path)
    with Registry(store, poll_interval_s=0.05) as replica:
        seen: list[int] = []
        replica.subscribe(lambda change: seen.append(change.seq))
        with Registry(SqliteStore(path), poll_interval_s=60) as writer:
            writer.apply([doc(f"e{i:02d}") for i in range(30)])
        assert eventually(lambda: len(names(replica)) == 30)
        assert replica.seq == 30
    assert seen == list(range(1, 31)), "every change, in order, once"
    assert max(store.reads) <= PAGE, store.reads
    store.close()


def _big(name: str, tool: str) -> dict[str, object]:
    """An expectation of ~30 KB: one expected call whose argument is 30,000 characters."""
    expected = [{"name": tool, "args": {"query": "x" * 30_000}}]
    return {"name": name, "match": {"agent": "travel"}, "scorers": [{"type": "trajectory", "expected": expected}]}


def test_a_history_larger_than_a_message_reaches_the_client_whole(tmp_path: Path) -> None:
    """150 versions of ~30 KB (and the deletions between them): ~9 MB, over a client's 4 MiB message limit."""
    with Registry(SqliteStore(tmp_path / "registry.db"), poll_interval_s=0.05) as registry:
        for i in range(150):
            registry.put(_big("long", f"v{i}"))
            if i % 50 == 49:
                registry.delete("long")
        for server in serve(registry):
            with RegistryClient(server.target) as client:
                changes = client.history_changes("long")
                versions = client.history("long")
    assert [c.kind for c in changes].count("deleted") == 3
    assert len(changes) == 153
    assert [c.seq for c in changes] == list(range(1, 154))
    assert [v.scorers[0].spec["expected"][0]["name"] for v in versions] == [f"v{i}" for i in range(150)]


def _history_pages(stub: Any, name: str, page_size: int) -> list[pb.GetExpectationHistoryResponse]:
    pages, token = [], ""
    while True:
        request = pb.GetExpectationHistoryRequest(name=name, page_size=page_size, page_token=token)
        pages.append(stub.GetExpectationHistory(request, timeout=10))
        token = pages[-1].next_page_token
        if not token:
            return pages


def test_history_pages_follow_the_token_and_page_size_0_is_everything(tmp_path: Path) -> None:
    with Registry(SqliteStore(tmp_path / "registry.db"), poll_interval_s=0.05) as registry:
        for i in range(60):
            registry.put(doc("h", tool=f"t{i}"))
            registry.put(doc(f"other{i}"))
        for server in serve(registry):
            with grpc.insecure_channel(server.target) as channel:
                stub = pb_grpc.ExpectationRegistryStub(channel)
                pages = _history_pages(stub, "h", 25)
                whole = stub.GetExpectationHistory(pb.GetExpectationHistoryRequest(name="h"), timeout=10)
                bad_token = pb.GetExpectationHistoryRequest(name="h", page_token="x1")
                with pytest.raises(grpc.RpcError) as bad:
                    stub.GetExpectationHistory(bad_token, timeout=10)
    assert [len(page.changes) for page in pages] == [25, 25, 10]
    assert [c.version for page in pages for c in page.changes] == list(range(1, 61))
    assert [v.version for page in pages for v in page.versions] == list(range(1, 61)), "versions: the same changes"
    assert (len(whole.changes), whole.next_page_token) == (60, ""), "page_size 0: all at once, as before"
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert bad.value.details() == "page_token: 'x1' is not a token this registry gave"


class CountingSteps(SqliteStore):
    """A real SQLite store counting the virtual-machine steps of each read (SQLite's progress handler): the work
    a query does, every row it visits included, whatever it returns."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.steps: list[int] = []

    @contextmanager
    def _read(self) -> Iterator[Cursor]:
        steps = itertools.count()
        with super()._read() as cur:
            cur.connection.set_progress_handler(lambda: next(steps) * 0, 1)
            try:
                yield cur
            finally:
                cur.connection.set_progress_handler(None, 1)
        self.steps.append(next(steps))


def _list_page_cost(path: Path, size: int) -> int:
    """The steps of the costliest of three pages of 10 (the first, one in the middle, the last) listed through the
    API from a registry of `size` live expectations and as many deleted ones between them."""
    store = CountingSteps(path)
    store.write_batch([Write(f"e{i:05d}", parse_expectation(doc(f"e{i:05d}"))) for i in range(2 * size)])
    store.write_batch([Write(f"e{i:05d}", None) for i in range(1, 2 * size, 2)])
    with Registry(store, poll_interval_s=60) as registry:
        for server in serve(registry):
            with grpc.insecure_channel(server.target) as channel:
                stub = pb_grpc.ExpectationRegistryStub(channel)
                store.steps.clear()
                for token in ("", f"e{size:05d}", f"e{2 * size - 22:05d}"):
                    page = stub.ListExpectations(pb.ListExpectationsRequest(page_size=10, page_token=token))
                    assert len(page.expectations) == 10
    store.close()
    return max(store.steps)


def test_a_list_page_reads_its_own_rows_whatever_the_registry_size(tmp_path: Path) -> None:
    small, large = _list_page_cost(tmp_path / "small.db", 100), _list_page_cost(tmp_path / "large.db", 3000)
    assert large < small * 1.5, f"a page of 10 took {large} steps among 3,000 expectations, {small} among 100"


def test_watches_beyond_max_watches_are_refused_saying_the_limit_until_one_ends(tmp_path: Path) -> None:
    with Registry(SqliteStore(tmp_path / "registry.db"), poll_interval_s=0.05) as registry:
        for server in serve(registry, max_watches=2):
            with RegistryClient(server.target) as client:
                first, second = client.watch(), client.watch()
                third = client.watch()
                assert third.since_seq is None, "refused before it subscribed"
                with pytest.raises(RegistryCallError) as refused:
                    list(third)
                first.cancel()
                assert eventually(lambda: _watch_opens(client)), "a watch ended: there is room again"
                second.cancel()
            assert server.server is not None
            assert server.server.servicer.watches_refused >= 1
    assert refused.value.code == "RESOURCE_EXHAUSTED"
    assert "already serves 2 watches, its limit (max_watches" in refused.value.message


def _watch_opens(client: RegistryClient) -> bool:
    """Whether a new watch is served (it subscribes) rather than refused."""
    with client.watch() as watch:
        return watch.since_seq is not None


# -- the change log is compacted --------------------------------------------------------------------


def _registry(path: Path, changes_kept: int, poll_interval_s: float = 0.05) -> Registry:
    config = RegistryConfig(store=SqliteStoreConfig(path=str(path)), changes_kept=changes_kept)
    return Registry(config=config, poll_interval_s=poll_interval_s)


def test_the_poll_compacts_the_log_to_changes_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("toolscore.collector.registry._compaction.COMPACT_EVERY_S", 0.05)
    with _registry(tmp_path / "registry.db", changes_kept=3) as registry:
        for n in range(10):
            registry.put(doc("a", tool=f"v{n}"))
        registry.put(doc("b"))
        assert eventually(lambda: registry.store.compacted_seq() == 8)
        assert [e.version for e in registry.history("a")] == [9, 10], "the last 3 changes, b's among them"
        assert [e.version for e in registry.history("b")] == [1]


def test_a_watch_from_a_compacted_seq_is_out_of_range_saying_to_list_again(tmp_path: Path) -> None:
    with _registry(tmp_path / "registry.db", changes_kept=5) as registry:
        for n in range(20):
            registry.put(doc("a", tool=f"v{n}"))
        assert registry.compact() == 15
        for server in serve(registry):
            with RegistryClient(server.target) as client:
                with pytest.raises(ChangesCompacted) as caught:
                    list(client.watch(since_seq=3))
                with client.watch(since_seq=15) as resumed:
                    replayed = [change.seq for _, change in zip(range(5), resumed, strict=False)]
            with grpc.insecure_channel(server.target) as channel, pytest.raises(grpc.RpcError) as raw:
                list(
                    pb_grpc.ExpectationRegistryStub(channel).WatchExpectations(pb.WatchExpectationsRequest(since_seq=0))
                )
    assert (caught.value.seq, caught.value.compacted_seq) == (3, 15)
    assert "list the expectations again, then watch from now (without since_seq)" in str(caught.value)
    assert replayed == [16, 17, 18, 19, 20], "from the compacted point on, the log is whole"
    assert raw.value.code() == grpc.StatusCode.OUT_OF_RANGE


def test_a_replica_behind_the_compacted_log_reads_the_whole_set_and_ends_its_watches(tmp_path: Path) -> None:
    """The changes it missed, a deletion among them, are gone from the log: it must not miss the deletion."""
    path = tmp_path / "registry.db"
    with _registry(path, changes_kept=5, poll_interval_s=60) as replica:
        replica.apply([doc("a"), doc("gone")])
        gaps: list[ChangesCompacted] = []
        replica.subscribe(lambda change: None, gaps.append)
        for server in serve(replica):
            with RegistryClient(server.target) as client:
                watch = client.watch()
                with _registry(path, changes_kept=5) as writer:
                    writer.delete("gone")
                    for n in range(10):
                        writer.put(doc("a", tool=f"v{n}"))
                    writer.put(doc("new"))
                    writer.compact()
                replica.refresh()
                with pytest.raises(ChangesCompacted) as ended:
                    list(watch)
    assert names(replica) == ["a", "new"], "the deletion it never read is applied"
    assert replica.seq == 14
    assert [(gap.seq, gap.compacted_seq) for gap in gaps] == [(2, 9)]
    assert ended.value.seq == 2, "the stream had sent everything up to seq 2"


class ReadOnly(SqliteStore):
    """A real SQLite store whose writes are refused, as under a database role that may only read."""

    def compact(self, keep: int, max_removed: int) -> int:
        raise sqlite3.OperationalError("attempt to write a readonly database")


def test_a_compaction_the_database_refuses_is_logged_once_and_scoring_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("toolscore.collector.registry._compaction.COMPACT_EVERY_S", 0.02)
    store = ReadOnly(tmp_path / "registry.db")
    with caplog.at_level(logging.DEBUG, "toolscore.registry"), Registry(store, poll_interval_s=0.02) as registry:
        registry.put(doc("a"))
        assert eventually(lambda: caplog.text.count("registry change log not compacted") >= 5)
        assert names(registry) == ["a"]
        assert registry.health.error is None, "not an outage: reads work"
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == [
        "registry change log not compacted (OperationalError: attempt to write a readonly database); "
        "trying again every 0 s"
    ]
    store.close()
