"""toolscore's scorers beside the Python peers (deepeval, ragas, agentevals), same cases, timed in alternation.

    this process: make the cases, score them with toolscore ─JSON─→ peers/peer_server.py (.venv-bench Python)
                  one toolscore pass, then one peer pass, repeated  ←─ agreement, then evals/s per pass

The peers live in their own environment (`.venv-bench`, made by `make bench-env` from
`peers/requirements.txt`) so they never meet toolscore's dependencies. The cases are
bench_scorers' runs: `n` expected calls (5 or 50, ~200-byte JSON arguments) and the run the agent
made (two calls swapped, one argument changed); agreement is also checked on the identical run
and on the run without the first expected tool. Each peer is set up as the toolscore scorer it
stands beside:

| peer | its settings | toolscore |
|---|---|---|
| deepeval `ToolCorrectnessMetric` | default: the expected tool among the calls | `tool_selection`, `expected_tool` |
| ragas `ToolCallAccuracy` | `strict_order=True`: same calls in order, argument accuracy | `trajectory`, `exact` |
| agentevals trajectory match | `strict`, exact arguments, one call per message | `trajectory`, `strict` |

Figures: `peer.<peer>.<metric>.<n>calls.evals_per_s`, and toolscore's rate on the same case as
`scorer.<type>.<n>calls.vs_<peer>.evals_per_s` with the peer as its baseline (the ratio is the
median of the per-pair ratios; target >= 10). A verdict is "the run passes" (score 1.0);
`peer.<peer>.verdicts_agree` is the share of cases where the peer's verdict is toolscore's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.bench.bench_scorers import _perturbed
from tests.bench.harness import Bench
from tests.bench.peers.peer_server import ENV
from tests.bench.workload import make_calls
from toolscore.scorers import AgentRun, ScorerBase, ToolCall, ToolSelection, Trajectory

ROOT = Path(__file__).resolve().parents[2]
BENCH_PYTHON = ROOT / ".venv-bench" / "bin" / "python"
SERVER = Path(__file__).resolve().parent / "peers" / "peer_server.py"
PAIRS = 5
PASS_S = 0.15
"""Target CPU time of one timed pass, each side."""
METRICS = {"deepeval": "tool_correctness", "ragas": "tool_call_accuracy", "agentevals": "trajectory_strict"}
OURS = {"deepeval": "tool_selection", "ragas": "trajectory_exact", "agentevals": "trajectory_strict"}


def comparable(peer: str, expected: list[ToolCall]) -> ScorerBase:
    """The toolscore scorer that does the peer's job, with the same settings."""
    dumped = [call.model_dump() for call in expected]
    if peer == "deepeval":
        return ToolSelection(expected_tool=expected[0].name)
    if peer == "ragas":
        return Trajectory(expected=dumped)
    return Trajectory(expected=dumped, mode="strict")


def make_cases(n: int) -> dict[str, Any]:
    """One case: expected calls, named runs of actual calls, and toolscore's score for each peer and run."""
    expected = make_calls(n, seed=n)
    runs = {
        "perturbed": _perturbed(expected, seed=n),
        "identical": list(expected),
        "without_first_tool": [call for call in expected if call.name != expected[0].name],
    }
    scores = {
        peer: {name: _value(comparable(peer, expected), calls) for name, calls in runs.items()} for peer in METRICS
    }
    return {
        "n": n,
        "expected_tool": expected[0].name,
        "expected": [_plain(call) for call in expected],
        "runs": {name: [_plain(call) for call in calls] for name, calls in runs.items()},
        "timed_run": "perturbed",
        "toolscore": scores,
    }


def _plain(call: ToolCall) -> dict[str, Any]:
    return {"name": call.name, "args": call.args}


def _value(scorer: ScorerBase, calls: list[ToolCall]) -> float:
    result = scorer.score(AgentRun(calls=tuple(calls)))
    assert result.ok, f"{scorer.type} scored the case: {result}"
    return float(result.value)  # type: ignore[union-attr]


class PeerProcess:
    """The peer script in the benchmark environment, driven line by line."""

    def __init__(self, cases: list[dict[str, Any]], python: Path = BENCH_PYTHON) -> None:
        env = {**os.environ, **ENV}
        self.proc = subprocess.Popen(
            [str(python), str(SERVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT / ".venv-bench",
        )
        self.report = self._ask(cases)

    def _ask(self, message: object) -> dict[str, Any]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the peer script exited with {self.proc.wait()}")
        reply: dict[str, Any] = json.loads(line)
        refused = reply.get("network_refused")
        assert not refused, f"a peer tried to reach the network: {refused}"
        return reply

    def rate(self, peer: str, n: int, repeat: int) -> float:
        return float(self._ask({"peer": peer, "n": n, "repeat": repeat})["evals_per_s"])

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(30)


def _ours_rate(scorer: ScorerBase, run: AgentRun, repeat: int) -> float:
    start = time.process_time()
    for _ in range(repeat):
        scorer.score(run)
    return repeat / (time.process_time() - start)


def measure(b: Bench, peers: PeerProcess, cases: list[dict[str, Any]], pairs: int = PAIRS) -> None:
    """For each (n, peer): a warm-up pass each, then `pairs` peer passes each followed by a toolscore pass."""
    for case in cases:
        n = case["n"]
        expected = make_calls(n, seed=n)
        run = AgentRun(calls=tuple(_perturbed(expected, seed=n)))
        for peer, metric in METRICS.items():
            scorer = comparable(peer, expected)
            peer_repeat = max(1, int(peers.rate(peer, n, 5) * PASS_S))
            our_repeat = max(1, int(_ours_rate(scorer, run, 200) * PASS_S))
            theirs, ours = [], []
            for _ in range(pairs):
                theirs.append(peers.rate(peer, n, peer_repeat))
                ours.append(_ours_rate(scorer, run, our_repeat))
            baseline = f"peer.{peer}.{metric}.{n}calls.evals_per_s"
            b.paired(f"scorer.{OURS[peer]}.{n}calls.vs_{peer}.evals_per_s", ours, baseline, theirs, unit="evals/s")


def record_agreement(b: Bench, report: dict[str, Any]) -> None:
    print(f"peers: {report['versions']}")
    for peer in METRICS:
        rows = [row for row in report["agreement"] if row["peer"] == peer]
        for row in rows:
            mark = "agrees" if row["agree"] else "DIFFERS"
            print(
                f"  {peer:<10} {row['n']:>2} calls {row['run']:<19} peer {row['peer_score']:.3f}"
                f"  toolscore {row['toolscore_score']:.3f}  {mark}"
            )
        agreed = [float(row["agree"]) for row in rows]
        b.record(f"peer.{peer}.verdicts_agree", [sum(agreed) / len(agreed)], unit="share of cases")


def bench(b: Bench) -> None:
    if not BENCH_PYTHON.exists():
        print(f"peers skipped: no benchmark environment at {BENCH_PYTHON} (`make bench-env` makes it)", file=sys.stderr)
        return
    cases = [make_cases(5), make_cases(50)]
    peers = PeerProcess(cases)
    try:
        record_agreement(b, peers.report)
        measure(b, peers, cases)
    finally:
        peers.close()
