"""The service's own process settings (applied while it serves, given back when it stops), and its start log."""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.serve_harness import serve_config
from toolscore.collector.serve import ServeConfig, start_service

PICK = "scorers: [{type: tool_selection, expected_tool: x}]"
"""A scorer for the documents of these tests, which are about starting the service, not scoring."""


def _config(tmp_path: Path, files: list[Path] | None = None, **keys: object) -> ServeConfig:
    path = serve_config(tmp_path, files or [], None, telemetry={"enabled": False}, **keys)
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


def _start_log(config: ServeConfig, caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    with caplog.at_level(logging.INFO, logger="toolscore.serve"):
        service = start_service(config)
        service.shutdown(grace_s=2)
    return [r for r in caplog.records if r.name == "toolscore.serve"]


def test_ready_line_says_how_many_expectations_are_enabled_and_where_from(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    file = tmp_path / "exp.yaml"
    file.write_text(
        f"- {{name: one, match: {{agent: a}}, {PICK}}}\n"
        f"- {{name: disabled, enabled: false, match: {{agent: a}}, {PICK}}}\n"
        f"- {{name: two, match: {{agent: b}}, {PICK}}}\n"
    )
    records = _start_log(_config(tmp_path, [file]), caplog)
    (ready,) = [r.getMessage() for r in records if "serve ready" in r.getMessage()]
    assert f"; 2 enabled expectation(s) in {tmp_path / 'registry.db'}, applied from {file}; next: " in ready
    assert not [r for r in records if r.levelno >= logging.WARNING]


def test_a_collector_with_no_expectations_warns_that_it_scores_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Started where `deploy/expectations/` does not exist, it would otherwise forward everything and say nothing."""
    records = _start_log(_config(tmp_path), caplog)
    (warning,) = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    assert warning.startswith("nothing to score: registry.files is empty (deploy/expectations/ is read by default")
    assert f"`toolscore expectations apply FILE --db {tmp_path / 'registry.db'}`" in warning


def test_expectation_files_with_none_enabled_warn_too(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    file = tmp_path / "exp.yaml"
    file.write_text(
        f"- {{name: disabled, enabled: false, match: {{agent: a}}, {PICK}}}\n- {{name: no-selector, {PICK}}}\n"
    )
    records = _start_log(_config(tmp_path, [file]), caplog)
    (warning,) = [r.getMessage() for r in records if r.levelno == logging.WARNING and "nothing" in r.getMessage()]
    assert warning.startswith(f"nothing to score: the files ({file}) and the store define none that is enabled")
