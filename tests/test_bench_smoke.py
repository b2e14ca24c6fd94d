"""`make bench`'s toolscore-side benchmarks at tiny sizes, so a change that breaks one fails `make test`.

The figures are not checked for speed (a few iterations say nothing), only that every benchmark
still runs end to end and writes the figures it names. The peers' side needs the benchmark
environment and is not run here; what toolscore contributes to it (the cases and toolscore's verdicts) is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench import (
    bench_collector,
    bench_evaluation_logs,
    bench_extract,
    bench_inprocess,
    bench_peers,
    bench_regex,
    bench_registry,
    bench_scale,
    bench_scaleout,
    bench_scorers,
    bench_ui,
)
from tests.bench.harness import Bench

pytestmark = pytest.mark.integration

EXPECTED_FIGURES = {
    bench_scorers: [f"scorer.{kind}.{n}calls.evals_per_s" for kind in ("tool_selection", "f1") for n in (5, 50)]
    + [f"scorer.trajectory_{mode}.{n}calls.evals_per_s" for mode in ("exact", "flexible") for n in (5, 50)],
    bench_extract: [
        "extract.spans_per_s",
        "extract.baseline.spans_per_s",
        "extract.decode.spans_per_s",
        "extract.pure_python.spans_per_s",
    ],
    bench_registry: ["registry.match.10.matches_per_s", "registry.match.200.matches_per_s"],
    bench_regex: [
        "regex.re2.4kb.benign.matches_per_s",
        "regex.re.4kb.benign.matches_per_s",
        "regex.re2.4kb.probe.matches_per_s",
        "regex.re2.4kb.fullmatch.matches_per_s",
    ],
    bench_inprocess: [
        "inprocess.us_per_span",
        "inprocess.baseline.us_per_span",
        "inprocess.mixed10.us_per_span",
        "inprocess.mixed10.no_prefilter.us_per_span",
        "inprocess.mixed1.app_thread.us_per_span",
        "inprocess.gc.us_per_span",
        "inprocess.app_thread.gc.baseline.us_per_span",
        "inprocess.mixed10.app_thread.gc.us_per_span",
        "inprocess.on_end_plain.spans_per_s",
        "inprocess.on_end_plain.python.spans_per_s",
        "pipeline.score_delay_ms.p50",
        "pipeline.score_delay_ms.p99",
        "memory.bytes_per_pending_span",
        "memory.bytes_per_pending_run",
    ],
    bench_collector: [
        "collector.ingest.spans_per_s",
        "collector.ingest.baseline.spans_per_s",
        "collector.ingest.mixed10_same.spans_per_s",
        "collector.ingest.mixed1_separate.no_prefilter.cpu_spans_per_s",
    ],
    bench_evaluation_logs: ["evaluation_log.direct.us_per_record", "evaluation_log.sdk.us_per_record"],
    bench_scale: ["scale.spans_per_s.10", "scale.spans_per_s.100", "scale.bytes_per_pending_trace.100"],
    bench_ui: [f"ui.{page}_ms.200" for page in ("runs_page", "runs_page_failing", "run_page", "expectations_page")],
    bench_scaleout: ["scaleout.collector.spans_per_s"] + [f"scaleout.spans_per_s.{n}" for n in (1, 2, 3)],
}


@pytest.mark.parametrize("module", list(EXPECTED_FIGURES), ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_benchmark_runs_and_writes_its_figures(module: object, tmp_path: Path) -> None:
    b = Bench()
    module.bench(b, quick=True)  # type: ignore[attr-defined]
    b.write(tmp_path / "bench-results.json")
    written = json.loads((tmp_path / "bench-results.json").read_text())
    for name in EXPECTED_FIGURES[module]:  # type: ignore[index]
        figure = written[name]
        assert set(figure) == {"value", "unit", "baseline", "ratio", "runs", "min", "max", "target"}
        assert figure["value"] > 0, name
        assert figure["min"] <= figure["value"] <= figure["max"], name
    assert "figure" in b.table().splitlines()[0]


def test_comparable_scorer_passes_the_identical_run_and_fails_without_the_expected_tool() -> None:
    case = bench_peers.make_cases(5)
    for peer in bench_peers.METRICS:
        scores = case["toolscore"][peer]
        assert scores["identical"] == 1.0, peer
        assert scores["without_first_tool"] == 0.0, peer
    assert json.loads(json.dumps(case)) == case, "the cases cross to the peer process as JSON"


def test_paired_ratio_is_the_median_of_the_per_pair_ratios() -> None:
    b = Bench()
    b.paired("ours", [10.0, 40.0, 90.0], "theirs", [1.0, 10.0, 10.0], unit="evals/s")
    assert b.figures["ours"].ratio == 9.0
    assert b.figures["ours"].baseline == "theirs"
    assert b.figures["theirs"].value == 10.0


def test_make_bench_runs_each_module_in_its_own_process_and_merges_their_figures(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    command = [sys.executable, "-m", "tests.bench", "--quick", "extract", "registry"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    written = json.loads((tmp_path / "bench-results.json").read_text())
    assert set(EXPECTED_FIGURES[bench_extract]) | set(EXPECTED_FIGURES[bench_registry]) <= set(written)
    assert not any(name.startswith(("scorer.", "inprocess.")) for name in written), "only the modules named"
    assert done.stdout.count("== bench_") == 2
    assert "extract.spans_per_s" in done.stdout.split("wrote bench-results.json")[0].rsplit("figure", 1)[1]


def test_an_unknown_benchmark_name_is_refused_before_anything_runs(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    command = [sys.executable, "-m", "tests.bench", "--quick", "registry", "extrct"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "unknown benchmark 'extrct'" in done.stderr
    assert "known: collector, evaluation_logs, extract," in done.stderr
    assert not (tmp_path / "bench-results.json").exists()


def test_figures_survive_the_trip_between_processes(tmp_path: Path) -> None:
    b = Bench()
    b.paired("ours", [10.0, 40.0, 90.0], "theirs", [1.0, 10.0, 10.0], unit="evals/s")
    b.write(tmp_path / "one.json")
    merged = Bench()
    merged.record("other", [1.0, 2.0, 3.0], unit="x")
    merged.merge(Bench.read(tmp_path / "one.json"))
    assert merged.figures["ours"] == b.figures["ours"]
    assert set(merged.figures) == {"other", "ours", "theirs"}
