"""The `integration` marker: tests that start a process carry it, so `-m "not integration"` is the unit run."""

from __future__ import annotations

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
