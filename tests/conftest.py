"""Shared fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.openai_server import OpenAIServer
from tests.postgres import postgres_dsn, postgres_server  # noqa: F401 (fixtures)


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A scripted OpenAI-compatible server on 127.0.0.1 (see tests/openai_server.py), closed after the test."""
    with OpenAIServer() as server:
        yield server
