"""Small builders shared by the registry tests: expectation documents, what a run matches, a flaky store, a
registry API server on a thread."""

from __future__ import annotations

import asyncio
import json
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from tests.pipeline_builders import wait_until
from toolscore.collector.registry import Registry
from toolscore.collector.registry.api import RegistryServer, RegistryServerConfig, start_registry_server
from toolscore.collector.registry.stores import Change, SqliteStore
from toolscore.scorers import AgentRun


def doc(name: str, agent: str = "travel", tool: str = "book_flight") -> dict[str, Any]:
    """An expectation document: runs of `agent` should call `tool`."""
    return {"name": name, "match": {"agent": agent}, "scorers": [{"type": "tool_selection", "expected_tool": tool}]}


def names(registry: Registry, agent: str = "travel") -> list[str]:
    """The names of the expectations a run of `agent` matches."""
    return [e.name for e in registry.match(AgentRun(agent_name=agent))]


def eventually(check: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    """`wait_until` with the registry's pace: a store read per poll, a database restart to wait for."""
    return wait_until(check, timeout_s, poll_s=0.02)


def store_raw(path: Path, name: str, document: dict[str, Any]) -> None:
    """Write `document` into the SQLite registry at `path` as version 1 of `name`, bypassing validation (a row
    written by an older toolscore, or by hand)."""
    SqliteStore(path).close()
    body = json.dumps(document)
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO toolscore_expectations VALUES (?, 1, 1, ?)", (name, body))
        insert = "INSERT INTO toolscore_changes (name, kind, version, body, at_ns) VALUES (?, 'created', 1, ?, 0)"
        conn.execute(insert, (name, body))


class FlakyReads(SqliteStore):
    """A real SQLite store whose change-log reads fail while `failing` is set (a disk or network error)."""

    failing = False

    def changes_since(self, seq: int, limit: int | None = None) -> list[Change]:
        if self.failing:
            raise sqlite3.OperationalError("disk I/O error")
        return super().changes_since(seq, limit)


class ServerThread:
    """The asyncio server on its own loop in a thread, so the blocking client can be used from the test."""

    def __init__(self, registry: Registry, config: RegistryServerConfig) -> None:
        self.registry = registry
        self.config = config
        self.loop = asyncio.new_event_loop()
        self.server: RegistryServer | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(start_registry_server(self.registry, self.config))
        self._ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(self.server.stop())
        self.loop.close()

    def start(self) -> ServerThread:
        self._thread.start()
        assert self._ready.wait(10), "server did not start"
        return self

    @property
    def target(self) -> str:
        assert self.server is not None
        return f"127.0.0.1:{self.server.port}"

    def stop_server(self, grace_s: float) -> float:
        """Stop from the test thread; returns how long the graceful stop took."""
        assert self.server is not None
        started = time.monotonic()
        asyncio.run_coroutine_threadsafe(self.server.stop(grace_s), self.loop).result(30)
        return time.monotonic() - started

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)


def serve(registry: Registry, **config: Any) -> Iterator[ServerThread]:
    """A started server on a free port (`config`: `RegistryServerConfig` fields), closed after the loop body."""
    server = ServerThread(registry, RegistryServerConfig(port=0, **config)).start()
    yield server
    server.close()


def collect_changes(watch: Iterable[Change], into: queue.Queue[Change]) -> threading.Thread:
    """A daemon thread putting every change of `watch` into `into` until the watch ends."""

    def run() -> None:
        for change in watch:
            into.put(change)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread
