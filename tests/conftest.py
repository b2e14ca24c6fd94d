"""Shared fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# Tests never reach the internet: litellm would otherwise fetch its model price list when imported.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from tests.metric_reader import Meters
from tests.metric_reader import meters as open_meters
from tests.openai_server import OpenAIServer
from tests.postgres import own_postgres, postgres_dsn, postgres_icu_dsn, postgres_server  # noqa: F401 (fixtures)


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A scripted OpenAI-compatible server on 127.0.0.1 (see tests/openai_server.py), closed after the test."""
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def meters() -> Iterator[Meters]:
    """toolscore's real OTel telemetry on an in-memory metric reader (see tests/metric_reader.py)."""
    with open_meters() as opened:
        yield opened
