"""The registry's reads, replies and streams stay bounded whatever the length of its change log."""

from __future__ import annotations

import queue
import threading
from pathlib import Path

import pytest

from tests.registry_builders import doc, eventually, names, serve
from toolscore.collector.registry import Change, Registry, SqliteStore
from toolscore.collector.registry.client import RegistryClient, Watch

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
    monkeypatch.setattr("toolscore.collector.registry.watch.CHANGE_PAGE_SIZE", PAGE)
    monkeypatch.setattr("toolscore.collector.registry.registry.CHANGE_PAGE_SIZE", PAGE)


def _drain(watch: Watch, into: queue.Queue[Change]) -> threading.Thread:
    def run() -> None:
        for change in watch:
            into.put(change)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_watch_replayed_from_the_start_reads_the_log_a_page_at_a_time(small_pages: None, tmp_path: Path) -> None:
    store = RecordingReads(tmp_path / "registry.db")
    with Registry(store, poll_interval_s=0.05) as registry:
        registry.apply([doc(f"e{i:02d}") for i in range(30)])
        for server in serve(registry):
            got: queue.Queue[Change] = queue.Queue()
            with RegistryClient(server.target) as client:
                store.reads.clear()
                watch = client.watch(since_seq=0)
                thread = _drain(watch, got)
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
