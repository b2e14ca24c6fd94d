"""The registry across `os.fork()`, as gunicorn `--preload` and Celery's prefork pool use it: a child forked
after the registry started follows the store and the files on its own, through connections of its own,
and the parent's go on unharmed.

Each test forks the real test process (`tests.forking`): the parent writes after the fork, and the child
waits to see it.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.forking import FORK_MARKS, Forked
from tests.registry_builders import doc, eventually, names
from toolscore.collector.forks import ForkSafeLock
from toolscore.collector.registry import PostgresStoreConfig, Registry, RegistryConfig, SqliteStoreConfig

pytestmark = [*FORK_MARKS, pytest.mark.integration]


def _polls() -> int:
    """The registry polls running in this process: one per open registry (earlier tests may leave some open)."""
    return sum(thread.name == "toolscore-registry-poll" for thread in threading.enumerate())


def _follows_then_writes(registry: Registry) -> dict[str, Any]:
    """The child's part: wait for the parent's write after the fork, write one of its own, and close the registry
    (as a worker process ending does)."""
    seen = eventually(lambda: names(registry) == ["after", "before"])
    registry.put(doc("from-child"))
    polls = _polls()
    registry.close()
    return {"seen": seen, "polls": polls}


def _child_and_parent_share_the_store(registry: Registry) -> None:
    registry.put(doc("before"))
    polls = _polls()
    child = Forked(lambda: _follows_then_writes(registry))
    registry.put(doc("after"))
    assert child.result() == {"seen": True, "polls": polls}, "the child polls as the parent does, and saw it"
    registry.put(doc("after-child"))  # through the parent's own connection, which the child left alone
    assert eventually(lambda: names(registry) == ["after", "after-child", "before", "from-child"])


def test_a_forked_child_follows_the_sqlite_store_through_a_connection_of_its_own(tmp_path: Path) -> None:
    store = SqliteStoreConfig(path=str(tmp_path / "registry.db"))
    with Registry.from_config(RegistryConfig(store=store, poll_interval_s=0.05)) as registry:
        _child_and_parent_share_the_store(registry)
        assert registry.health.error is None


def test_a_forked_child_follows_the_postgres_store_and_leaves_the_parents_sessions_alone(
    postgres_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Closing an inherited connection would send the server a Terminate on the parent's socket: the parent's
    next call would fail, and its listener be lost."""
    store = PostgresStoreConfig(dsn=postgres_dsn)
    config = RegistryConfig(store=store, poll_interval_s=0.05)
    with caplog.at_level(logging.WARNING, "toolscore.registry"), Registry.from_config(config) as registry:
        _child_and_parent_share_the_store(registry)
        assert registry.health.failures == 0
    assert caplog.text == "", "the parent lost nothing"


def test_a_forked_child_reloads_the_files_it_watches(tmp_path: Path) -> None:
    """A store in memory: each process has its own copy, and only the child's own watch can tell it of the edit."""
    path = tmp_path / "expectations.yaml"
    path.write_text(yaml.safe_dump([doc("a")]))
    with Registry.from_file(path, interval_s=0.05) as registry:
        child = Forked(lambda: eventually(lambda: names(registry) == ["a", "b"]))
        path.write_text(yaml.safe_dump([doc("a"), doc("b")]))
        assert child.result() is True
        assert eventually(lambda: names(registry) == ["a", "b"])


def test_a_registry_closed_before_the_fork_stays_closed_in_the_child(tmp_path: Path) -> None:
    registry = Registry.from_config(RegistryConfig(store=SqliteStoreConfig(path=str(tmp_path / "registry.db"))))
    registry.close()
    assert Forked(_polls).result() == _polls(), "no poll but those of the registries open in the parent"


# -- the locks under it ------------------------------------------------------------------------------


def test_a_fork_waits_for_a_lock_held_a_moment_so_the_child_inherits_its_state_whole() -> None:
    lock, state = ForkSafeLock(), {"steps": 0}
    taken = threading.Event()

    def update() -> None:
        with lock:
            taken.set()
            state["steps"] = 1
            time.sleep(0.3)  # a fork now would copy the state half way
            state["steps"] = 2

    writer = threading.Thread(target=update)
    writer.start()
    assert taken.wait(5)

    def child() -> dict[str, int]:
        with lock:  # free in the child: the fork took it once the writer let go, and the child let it go
            return dict(state)

    assert Forked(child).result() == {"steps": 2}
    writer.join(5)


def test_a_lock_still_held_past_the_wait_is_renewed_in_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("toolscore.collector.forks.FORK_LOCK_WAIT_S", 0.2)
    lock, held, release = ForkSafeLock(), threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(5)
    try:
        started = time.monotonic()
        in_child = Forked(lambda: lock.acquire(timeout=1))
        waited = time.monotonic() - started
        assert in_child.result() is True, "the child's lock is free: its holder is not in the child"
    finally:
        release.set()
        holder.join(5)
    assert waited < 3, "the fork went ahead past FORK_LOCK_WAIT_S"


def test_an_outer_lock_is_taken_before_the_others() -> None:
    """The worker's step holds its outer lock while it takes the registry's: a fork that held a registry lock
    while it waited for the step would leave the step waiting on that lock until the fork gave up a round."""
    taken: list[str] = []

    def lock(name: str, outer: bool = False) -> ForkSafeLock:
        return ForkSafeLock(outer=outer, before_fork=lambda: taken.append(name))

    locks = [lock(f"inner-{n}") for n in range(10)] + [lock("outer", outer=True)] + [lock("last")]
    assert Forked(lambda: True).result() is True
    mine = [name for name in taken if name in {"outer", "last"} or name.startswith("inner-")]
    assert len(mine) == len(locks)
    assert mine[0] == "outer", mine
