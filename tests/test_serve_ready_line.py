"""`toolscore serve`'s ready line says what to do next, with the options this collector needs."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.serve_demo_checks import DEMO_EXPECTATIONS
from tests.serve_harness import ServeProcess, serve_config

pytestmark = pytest.mark.integration  # every test here starts a process

_READY = "toolscore serve ready:"


def _ready_line(process: ServeProcess, timeout_s: float = 30.0) -> str:
    """The ready line, once logged (the HTTP receiver, which `wait_ready` asks, may be off)."""
    deadline = time.monotonic() + timeout_s
    while _READY not in process.log() and process.proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    (line,) = [line for line in process.log().splitlines() if _READY in line]
    return line


def test_the_ready_line_gives_the_demo_runs_and_sender_commands_for_this_collector(tmp_path: Path) -> None:
    with ServeProcess(serve_config(tmp_path, [DEMO_EXPECTATIONS], None), tmp_path) as process:
        line = _ready_line(process)
        assert process.terminate() == 0
    grpc, http, db = process.grpc_endpoint, process.http_url, tmp_path / "scores.db"
    assert line.partition("; next: ")[2] == (
        f"`toolscore demo --endpoint {grpc} --db {db}` sends sample agent runs here and prints their scores; "
        f"`toolscore runs --since 10m --db {db}` lists the runs scored; "
        f"agents send here with OTEL_EXPORTER_OTLP_ENDPOINT=http://{grpc} (gRPC) or {http} (OTLP/HTTP); "
        "docs: docs/serve.md"
    )
    assert (Path(__file__).parents[1] / "docs" / "serve.md").is_file()


def test_without_the_demo_expectations_the_ready_line_says_to_load_them_first(tmp_path: Path) -> None:
    with ServeProcess(serve_config(tmp_path, [], None, receiver={"http_enabled": False}), tmp_path) as process:
        line = _ready_line(process)
        assert process.terminate() == 0
    demo = (
        r"`toolscore demo --endpoint [\d.:]+ --db \S+` sends sample agent runs here and prints their scores "
        r"\(once deploy/expectations/demo\.yaml is loaded: registry\.files\); "
    )
    assert re.search(demo, line), line
    assert "(OTLP/HTTP)" not in line


def test_with_a_bearer_token_the_ready_line_says_how_agents_send_it_and_never_prints_it(tmp_path: Path) -> None:
    config = serve_config(tmp_path, [DEMO_EXPECTATIONS], None, receiver={"bearer_token": "s3cret-t0ken"})
    with ServeProcess(config, tmp_path) as process:
        line = _ready_line(process)
        assert process.terminate() == 0
    assert "`toolscore demo" not in line  # it sends without a token: it would be refused
    assert line.endswith(
        " (OTLP/HTTP) and OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20<receiver.bearer_token>; "
        "docs: docs/serve.md"
    )
    assert "s3cret-t0ken" not in process.log()
