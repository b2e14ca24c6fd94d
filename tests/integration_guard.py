"""The `integration` marker kept honest: a test that starts a process and is not marked fails.

`pytest -m "not integration"` is the fast unit run only if every test that starts a process (the CLI as a
subprocess, `toolscore serve`, PostgreSQL, Prometheus, a fork) carries the marker. Fixtures that start one
mark their tests (`INTEGRATION_FIXTURES`, applied in `tests/conftest.py`); a test that starts one itself
must be marked by hand, and this guard finds the ones that are not: CPython raises an audit event
(`sys.addaudithook`) for every way of starting a process, and the guard notes those raised while an
unmarked test runs, then fails it at teardown, naming what it started.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

__all__ = ["INTEGRATION_FIXTURES", "mark_integration", "unmarked_tests_start_no_process"]

INTEGRATION_FIXTURES = frozenset(
    {"postgres_server", "own_postgres", "served", "collector", "serve", "prometheus", "phoenix"}
)
"""Fixtures that start a process or an outside server (PostgreSQL, `toolscore serve`, Prometheus, Phoenix): a test that
uses one, directly or through another fixture, is an `integration` test."""

_STARTS_A_PROCESS = frozenset(
    {"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system", "os.exec", "pty.spawn"}
)
"""The audit events (https://docs.python.org/3/library/audit_events.html) of every way to start a process."""

_PROBES = frozenset({"uname"})
"""Not a process a test starts: `platform.processor()` runs `uname -p` once per interpreter, wherever a library
first asks which machine it runs on (litellm does, at import)."""

_watched: list[list[str]] = []
"""What the running unmarked test started (one list, empty while no unmarked test runs)."""


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _watched and event in _STARTS_A_PROCESS:
        what = args[1] if event == "subprocess.Popen" and len(args) > 1 else args[:1]
        if isinstance(what, list | tuple) and what and str(what[0]) in _PROBES:
            return
        _watched[-1].append(f"{event} {what!r}"[:200])


sys.addaudithook(_audit)  # for the life of the process: an audit hook cannot be removed


def mark_integration(items: list[pytest.Item]) -> None:
    """Mark every collected test that uses a fixture of `INTEGRATION_FIXTURES`."""
    for item in items:
        if INTEGRATION_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(autouse=True)
def unmarked_tests_start_no_process(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail an unmarked test that started a process (see the module docstring)."""
    if request.node.get_closest_marker("integration") is not None:
        yield
        return
    started: list[str] = []
    _watched.append(started)
    try:
        yield
    finally:
        _watched.remove(started)
    if started:
        pytest.fail(
            f"{request.node.nodeid} starts a process but is not marked `integration` "
            f"(pytest.mark.integration): {'; '.join(started[:3])}",
            pytrace=False,
        )
