"""`toolscore eval --baseline`: two sets of traces of an agent, the per-expectation difference, failing when worse."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.pipeline_builders import agent_run
from tests.test_eval_cli import run_eval_cli
from toolscore.collector.export.otlp_file import OTLPFileSpanExporter

pytestmark = pytest.mark.integration  # every test here runs `toolscore eval` as a subprocess

EXPECTATIONS = """\
expectations:
  - name: books-flight
    match: {agent: travel}
    scorers: [{type: tool_selection, expected_tool: book_flight}]
  - name: searches
    match: {agent: travel}
    scorers: [{type: tool_selection, expected_tool: search_flights}]
"""


def _traces(path: Path, version: str, booking: int, runs: int = 10) -> Path:
    """`runs` runs of the travel agent at `version`, the first `booking` of which book the flight."""
    provider = TracerProvider(resource=Resource.create({"service.version": version}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPFileSpanExporter(path)))
    tracer = provider.get_tracer("baseline-test")
    for i in range(runs):
        agent_run(tracer, tools=("search_flights", "book_flight") if i < booking else ("search_flights",))
    provider.shutdown()
    return path


def test_a_worse_new_set_fails_with_the_per_expectation_difference(tmp_path: Path) -> None:
    (tmp_path / "e.yaml").write_text(EXPECTATIONS)
    main = _traces(tmp_path / "main.jsonl", "1.0", booking=10)
    pull = _traces(tmp_path / "pr.jsonl", "1.1", booking=6)
    proc = run_eval_cli(
        "-t", pull, "-e", tmp_path / "e.yaml", "--min-pass-rate", "0", "--baseline", main, "--margin", "0.3"
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert any(
        "books-flight" in line and "100% of 10" in line and "60% of 10" in line and "-0.40" in line and "WORSE" in line
        for line in lines
    ), proc.stdout
    assert any("searches" in line and "+0.00" in line and "WORSE" not in line for line in lines), proc.stdout
    assert "1 expectation(s) below the baseline by more than 0.30: books-flight" in proc.stdout
    assert "FAIL books-flight" in proc.stdout, "the new set's failing runs with their diffs, as eval shows them"


def test_a_drop_within_the_margin_or_an_equal_set_passes(tmp_path: Path) -> None:
    (tmp_path / "e.yaml").write_text(EXPECTATIONS)
    main = _traces(tmp_path / "main.jsonl", "1.0", booking=10)
    pull = _traces(tmp_path / "pr.jsonl", "1.1", booking=8)
    within = run_eval_cli(
        "-t", pull, "-e", tmp_path / "e.yaml", "--min-pass-rate", "0", "--baseline", main, "--margin", "0.2"
    )
    assert within.returncode == 0, within.stdout + within.stderr
    assert "No expectation below the baseline by more than 0.20." in within.stdout
    equal = run_eval_cli("-t", main, "-e", tmp_path / "e.yaml", "--baseline", main)
    assert equal.returncode == 0, equal.stdout + equal.stderr


def test_an_unreadable_baseline_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "e.yaml").write_text(EXPECTATIONS)
    main = _traces(tmp_path / "main.jsonl", "1.0", booking=10)
    (tmp_path / "bad.jsonl").write_text("not json\n")
    proc = run_eval_cli("-t", main, "-e", tmp_path / "e.yaml", "--baseline", tmp_path / "bad.jsonl")
    assert proc.returncode == 2, proc.stdout + proc.stderr
