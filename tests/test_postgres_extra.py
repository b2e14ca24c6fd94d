"""Without the `postgres` extra (psycopg not installed), choosing the PostgreSQL store is one line naming the extra."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

_WITHOUT_PSYCOPG = "import sys\nsys.modules['psycopg'] = None  # as if the extra were not installed\n"


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_PSYCOPG + code], check=False, capture_output=True, text=True, timeout=60
    )


def test_the_cli_names_the_postgres_extra_when_psycopg_is_missing() -> None:
    result = _run(
        "from toolscore.collector.cli import main\n"
        "main(['expectations', 'list', '--db', 'postgresql://toolscore@127.0.0.1:1/registry'])\n"
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "pip install 'toolscore[postgres]'" in result.stderr
    assert "PostgreSQL store" in result.stderr


def test_opening_a_postgres_store_without_psycopg_raises_missing_extra() -> None:
    result = _run(
        "from toolscore.collector.registry._config import PostgresStoreConfig\n"
        "from toolscore.collector.registry._errors import MissingExtra\n"
        "from toolscore.collector.registry.stores import open_store\n"
        "try:\n"
        "    open_store(PostgresStoreConfig(dsn='postgresql://toolscore@127.0.0.1:1/registry'))\n"
        "except MissingExtra as exc:\n"
        "    print(exc.extra, exc, sep='|')\n"
    )
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout.strip()
        == "postgres|the PostgreSQL store needs the 'postgres' extra: pip install 'toolscore[postgres]'"
    )
