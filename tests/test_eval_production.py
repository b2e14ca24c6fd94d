"""The reference-free scorers in `toolscore eval` over real captures, and live in the engine, with equal scores."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pipeline_builders import hand_driven
from toolscore.collector.evaluate import run_eval
from toolscore.collector.pipeline import PipelineConfig
from toolscore.collector.registry._files import load_file
from toolscore.collector.sources import read_trace_file
from toolscore.scorers import Score

ROOT = Path(__file__).parent.parent
TRACES = ROOT / "tests" / "testdata" / "traces"
FRAMEWORKS = ("openai-agents", "pydantic-ai", "vercel-ai")
PRODUCTION = ROOT / "tests" / "testdata" / "eval" / "production" / "production.yaml"


@pytest.mark.integration
def test_eval_names_the_broken_rule_and_the_call_that_broke_it() -> None:
    args = [arg for framework in FRAMEWORKS for arg in ("-t", str(TRACES / framework))]
    proc = subprocess.run(
        [sys.executable, "-m", "toolscore.collector.cli", "eval", *args, "--expectations", str(PRODUCTION)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "160"},
    )
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "FAIL: 2 of 3 expectations below threshold" in out
    assert "tool_policy rules, in order:" in out
    assert "✗ broken rule" in out
    assert "denied: denied by 'summar*'" in out
    assert "additionalProperties: /unit: 'unit' is not allowed" in out
    assert "maximum: /passengers: 2 is greater than the maximum of 1" in out


def test_live_scores_equal_the_offline_ones() -> None:
    files = sorted(p for f in FRAMEWORKS for p in (TRACES / f).glob("*.pb") if not p.name.endswith(".logs.pb"))
    offline = run_eval(files, [PRODUCTION])
    want = sorted(
        (r.run.agent_name, s.name, s.value) for r in offline.results for s in r.scorers if s.value is not None
    )
    expectations = [e.model_dump(mode="json", exclude_none=True) for e in load_file(PRODUCTION)]
    with hand_driven(PipelineConfig(settle_ms=20), *expectations) as driven:
        telemetry = driven.telemetry
        for path in files:
            driven.offer(list(read_trace_file(path)))
        driven.at(20)  # every run settles: scored as it would be live, not forced by a flush
        assert len(telemetry.scores) == len(want)
        assert driven.engine.flush(5.0)
    live = sorted((agent, r.name, r.value) for r, _, _, agent, _ in telemetry.scores if isinstance(r, Score))
    assert len(want) == 11
    assert live == want


def test_args_valid_reads_the_catalog_from_real_captures_live_as_offline(tmp_path: Path) -> None:
    """No schema in the scorer: each run's catalog comes from its trace (the frameworks' own tool definitions)."""
    frameworks = ("pydantic-ai", "vercel-ai", "smolagents")
    files = sorted(p for f in frameworks for p in (TRACES / f).glob("*.pb") if not p.name.endswith(".logs.pb"))
    spec = {"name": "catalog", "match": {"agent": {"regex": "."}}, "scorers": [{"type": "args_valid"}]}
    (tmp_path / "catalog.yaml").write_text(json.dumps({"expectations": [spec]}))
    offline = run_eval(files, [tmp_path / "catalog.yaml"])
    scored = [(r.run.agent_name, s) for r in offline.results for s in r.scorers]
    assert scored
    assert all(s.status != "error" for _, s in scored), [s.explanation for _, s in scored if s.status == "error"]
    assert sum(s.value == 1.0 for _, s in scored) >= 15
    strict = [s for agent, s in scored if agent == "strict_agent"]  # smolagents: a call that leaves out `city`
    assert [(v["rule"], v["pointer"]) for s in strict for v in s.details["violations"]] == [("required", "/city")]
    with hand_driven(PipelineConfig(settle_ms=20), spec) as driven:
        telemetry = driven.telemetry
        for path in files:
            driven.offer(list(read_trace_file(path)))
        driven.at(20)  # every run settles: scored as it would be live, not forced by a flush
        assert len(telemetry.scores) == len(scored)
        assert driven.engine.flush(5.0)
    live = sorted((agent, r.value) for r, _, _, agent, _ in telemetry.scores if isinstance(r, Score))
    assert live == sorted((agent, s.value) for agent, s in scored)
