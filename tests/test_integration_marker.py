"""The `integration` marker: tests that start a process carry it, so `-m "not integration"` is the unit run."""

from __future__ import annotations

import multiprocessing.process
import sys

import pytest

from tests import integration_guard


def test_a_process_started_by_an_unmarked_test_is_noted_for_its_teardown() -> None:
    sys.audit("subprocess.Popen", "toolscore", ["toolscore", "serve"], None, None)  # the event alone: nothing starts
    noted = integration_guard._watched[-1]
    assert noted == ["subprocess.Popen ['toolscore', 'serve']"]
    noted.clear()  # else this test would fail at teardown, as an unmarked one that starts `toolscore serve` does


@pytest.mark.integration
def test_a_marked_test_may_start_processes() -> None:
    sys.audit("os.fork")
    assert integration_guard._watched == []


def test_a_test_using_a_fixture_that_starts_a_server_is_marked(request: pytest.FixtureRequest) -> None:
    item = request.node
    assert item.get_closest_marker("integration") is None  # this one uses none of them
    items = [item]
    item.fixturenames.append("postgres_server")  # as if it asked for PostgreSQL
    try:
        integration_guard.mark_integration(items)
        assert item.get_closest_marker("integration") is not None
    finally:
        item.fixturenames.remove("postgres_server")


class _NeverStarts(multiprocessing.process.BaseProcess):
    """A process whose start stops before anything is spawned, after the guard's event."""

    @staticmethod
    def _Popen(process: object) -> None:
        raise RuntimeError("not started")


def test_a_multiprocessing_start_is_noted_though_cpython_raises_no_event_for_spawn() -> None:
    with pytest.raises(RuntimeError, match="not started"):
        _NeverStarts(name="spawned-worker").start()
    noted = integration_guard._watched[-1]
    assert noted == ["multiprocessing.Process.start ('spawned-worker',)"]
    noted.clear()


@pytest.fixture(scope="module")
def started_for_the_module() -> list[str]:
    """A module-scoped fixture set up by the first test that needs it, before that test's own fixtures."""
    sys.audit("subprocess.Popen", "toolscore", ["toolscore", "eval"], None, None)  # the event alone: nothing starts
    return list(integration_guard._watched[-1])


def test_a_process_a_wider_fixture_starts_counts_for_the_first_test_that_needs_it(
    started_for_the_module: list[str],
) -> None:
    assert started_for_the_module == ["subprocess.Popen ['toolscore', 'eval']"]
    integration_guard._watched[-1].clear()


def test_a_module_that_starts_a_process_when_collected_fails_to_collect(request: pytest.FixtureRequest) -> None:
    module = request.node.parent
    assert isinstance(module, pytest.Module)
    wrapper = integration_guard.pytest_make_collect_report(module)
    next(wrapper)  # the collection starts
    sys.audit("os.system", b"toolscore demo")
    collected = pytest.CollectReport(module.nodeid, "passed", None, [])
    with pytest.raises(StopIteration) as stopped:
        wrapper.send(collected)
    report = stopped.value.value
    assert report.failed
    assert "starts a process when collected" in str(report.longrepr)
    assert "os.system (b'toolscore demo',)" in str(report.longrepr)
    assert integration_guard._watched[-1] == []  # the test's own list saw nothing: it is not failed for it
