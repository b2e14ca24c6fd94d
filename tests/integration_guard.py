"""The `integration` marker kept honest: a test that starts a process and is not marked fails.

`pytest -m "not integration"` is the fast unit run only if every test that starts a process (the CLI as a
subprocess, `toolscore serve`, PostgreSQL, Prometheus, a fork) carries the marker. Fixtures that start one
mark their tests (`INTEGRATION_FIXTURES`, applied in `tests/conftest.py`); a test that starts one itself
must be marked by hand, and this guard finds the ones that are not: CPython raises an audit event
(`sys.addaudithook`) for every way of starting a process but one, and the guard notes those raised while an
unmarked test runs, then fails it at teardown, naming what it started. The one without an event,
`multiprocessing`'s spawn and forkserver start methods, is given one by the guard (`multiprocessing.Process.start`).

An unmarked test is watched from the start of its setup, so a module- or session-scoped fixture it is the first
to need, which starts a process, counts as the test's; collection is watched too (a test module that starts a
process when imported fails to collect), since `pytest -m "not integration"` imports every test module.
"""

from __future__ import annotations

import functools
import multiprocessing.process
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

__all__ = [
    "INTEGRATION_FIXTURES",
    "mark_integration",
    "pytest_make_collect_report",
    "pytest_runtest_setup",
    "pytest_runtest_teardown",
    "unmarked_tests_start_no_process",
]

INTEGRATION_FIXTURES = frozenset(
    {"postgres_server", "own_postgres", "served", "collector", "serve", "prometheus", "phoenix"}
)
"""Fixtures that start a process or an outside server (PostgreSQL, `toolscore serve`, Prometheus, Phoenix): a test that
uses one, directly or through another fixture, is an `integration` test."""

_MULTIPROCESSING_START = "multiprocessing.Process.start"
"""The guard's own event: `multiprocessing` starts a spawn or forkserver child through `_posixsubprocess.fork_exec`
or the fork server, which raise none."""

_STARTS_A_PROCESS = frozenset(
    {
        "subprocess.Popen",
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.spawn",
        "os.system",
        "os.exec",
        "pty.spawn",
        _MULTIPROCESSING_START,
    }
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


def _audited_start(start: Callable[[Any], None]) -> Callable[[Any], None]:
    @functools.wraps(start)
    def audited(process: Any) -> None:
        sys.audit(_MULTIPROCESSING_START, process.name)
        start(process)

    return audited


# Every context's Process (fork, spawn, forkserver) and every pool's worker starts through BaseProcess.start.
multiprocessing.process.BaseProcess.start = _audited_start(multiprocessing.process.BaseProcess.start)  # type: ignore[method-assign]

_STARTED = pytest.StashKey[list[str]]()
"""What an unmarked test has started so far, from the start of its setup."""


def mark_integration(items: list[pytest.Item]) -> None:
    """Mark every collected test that uses a fixture of `INTEGRATION_FIXTURES`."""
    for item in items:
        if INTEGRATION_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Watch an unmarked test from before its first fixture is set up (a module- or session-scoped one included)."""
    if item.get_closest_marker("integration") is None:
        started: list[str] = []
        item.stash[_STARTED] = started
        _watched.append(started)


@pytest.fixture(autouse=True)
def unmarked_tests_start_no_process(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail an unmarked test that started a process (see the module docstring).

    Torn down after the test's other function-scoped fixtures (autouse fixtures are set up first), before the
    wider fixtures that end with this test: those were set up, and judged, with the test that needed them first.
    """
    yield
    _judge(request.node)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """Judge a test whose setup ended before the fixture above ran (skipped, or a fixture failed)."""
    try:
        return (yield)
    finally:
        _judge(item)


def _judge(item: pytest.Item) -> None:
    started = item.stash.get(_STARTED, None)
    if started is None:
        return
    del item.stash[_STARTED]
    _watched.remove(started)
    if started:
        pytest.fail(
            f"{item.nodeid} starts a process but is not marked `integration` "
            f"(pytest.mark.integration): {'; '.join(started[:3])}",
            pytrace=False,
        )


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[pytest.CollectReport]:
    """A test module that starts a process as it is imported or collected fails to collect."""
    started: list[str] = []
    _watched.append(started)
    try:
        report: pytest.CollectReport = yield
    finally:
        _watched.remove(started)
    if started and report.passed:
        report.outcome = "failed"
        report.longrepr = (
            f"{collector.nodeid} starts a process when collected, which `pytest -m 'not integration'` does too: "
            f"{'; '.join(started[:3])}"
        )
    return report
