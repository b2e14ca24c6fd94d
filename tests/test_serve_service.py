"""The service's own process settings: applied while it serves, given back when it stops."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.serve_harness import serve_config
from toolscore.collector.serve.config import ServeConfig
from toolscore.collector.serve.service import start_service


def _config(tmp_path: Path, **keys: object) -> ServeConfig:
    path = serve_config(tmp_path, [], None, telemetry={"enabled": False}, **keys)
    return ServeConfig.model_validate(yaml.safe_load(path.read_text()))


@pytest.fixture
def interpreter_gc() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


@pytest.mark.parametrize(
    ("configured", "before", "serving"),
    [
        (12_345, (700, 10, 10), (12_345, 10, 10)),
        (0, (900, 11, 12), (900, 11, 12)),  # 0 leaves the interpreter's setting alone
    ],
)
def test_gc_threshold_applies_while_serving_and_is_restored_on_shutdown(
    tmp_path: Path,
    interpreter_gc: tuple[int, int, int],
    configured: int,
    before: tuple[int, int, int],
    serving: tuple[int, int, int],
) -> None:
    gc.set_threshold(*before)
    service = start_service(_config(tmp_path, gc_threshold=configured))
    try:
        assert gc.get_threshold() == serving
    finally:
        service.shutdown(grace_s=2)
    assert gc.get_threshold() == before
