"""Shared fixtures."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest

# Tests never reach the internet: litellm would otherwise fetch its model price list when imported.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from tests.integration_guard import (  # noqa: F401 (the guard's fixture and hooks)
    mark_integration,
    pytest_make_collect_report,
    pytest_runtest_setup,
    pytest_runtest_teardown,
    unmarked_tests_start_no_process,
)
from tests.metric_reader import Meters
from tests.metric_reader import meters as open_meters
from tests.openai_server import OpenAIServer
from tests.otlp_downstream import TelemetryReceiver
from tests.postgres import own_postgres, postgres_dsn, postgres_icu_dsn, postgres_server  # noqa: F401 (fixtures)


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A scripted OpenAI-compatible server on 127.0.0.1 (see tests/openai_server.py), closed after the test."""
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def otlp_collector() -> Iterator[tuple[str, TelemetryReceiver]]:
    """A real OTLP/gRPC logs and metrics receiver on 127.0.0.1 (see tests/otlp_downstream.py), and its endpoint."""
    receiver = TelemetryReceiver()
    yield receiver.endpoint, receiver
    receiver.stop()


@pytest.fixture
def meters() -> Iterator[Meters]:
    """toolscore's real OTel telemetry on an in-memory metric reader (see tests/metric_reader.py)."""
    with open_meters() as opened:
        yield opened


_REGISTRY_THREADS = "toolscore-registry-"
"""The threads a `Registry` and its store start (poll, file watch, watchdog), which only `close` ends."""
_CLOSE_GRACE_S = 2.0
"""How long a thread started by the test may take to end after it: `close` joins them, so this is slack."""


@pytest.fixture(autouse=True)
def registry_closed() -> Iterator[None]:
    """A test that leaves a `Registry` open fails: its threads would poll on through later tests, against a
    store the test removed, and one opened without a store argument holds `.toolscore/registry.db` under the
    working directory."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + _CLOSE_GRACE_S
    while left := [t for t in threading.enumerate() if t not in before and t.name.startswith(_REGISTRY_THREADS)]:
        if time.monotonic() > deadline:
            pytest.fail(f"the test left a Registry (or its store) open: threads {sorted(t.name for t in left)} run on")
        time.sleep(0.02)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_integration(items)
