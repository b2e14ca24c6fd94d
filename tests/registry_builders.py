"""Small builders shared by the registry tests: expectation documents, what a run matches, a flaky store."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from tests.pipeline_builders import wait_until
from toolscore.collector.registry import Change, Registry, SqliteStore
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


class FlakyReads(SqliteStore):
    """A real SQLite store whose change-log reads fail while `failing` is set (a disk or network error)."""

    failing = False

    def changes_since(self, seq: int) -> list[Change]:
        if self.failing:
            raise sqlite3.OperationalError("disk I/O error")
        return super().changes_since(seq)
