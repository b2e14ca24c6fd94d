"""Evaluations per second of each deterministic scorer on 5- and 50-call runs, calls already parsed."""

from __future__ import annotations

import random

from tests.bench.harness import Bench
from tests.bench.workload import make_calls
from toolscore.scorers import AgentRun, ToolCall
from toolscore.scorers.base import ScorerBase
from toolscore.scorers.f1 import F1
from toolscore.scorers.tool_selection import ToolSelection
from toolscore.scorers.trajectory import Trajectory


def _perturbed(calls: list[ToolCall], seed: int) -> list[ToolCall]:
    """The run the agent really made: the expected calls with one swap and one changed argument."""
    rng = random.Random(seed)
    actual = list(calls)
    i, j = rng.sample(range(len(actual)), 2)
    actual[i], actual[j] = actual[j], actual[i]
    changed = actual[0]
    actual[0] = changed.model_copy(update={"args": {**changed.args, "passengers": 9}})
    return actual


def _scorers(expected: list[ToolCall]) -> dict[str, ScorerBase]:
    names = [call.name for call in expected]
    return {
        "tool_selection": ToolSelection(expected_order=names[: max(2, len(names) // 2)]),
        "trajectory_exact": Trajectory(expected=[call.model_dump() for call in expected]),
        "trajectory_flexible": Trajectory(expected=[call.model_dump() for call in expected], mode="flexible"),
        "f1": F1(expected=[call.model_dump() for call in expected]),
    }


def bench(b: Bench, *, quick: bool = False) -> None:
    """`quick`: a few evaluations, one run, for the smoke test."""
    for n in (5, 50):
        expected = make_calls(n, seed=n)
        run = AgentRun(calls=tuple(_perturbed(expected, seed=n)))
        repeat = 20 if quick else 20_000 if n == 5 else 2_000
        for kind, scorer in _scorers(expected).items():

            def loop(scorer: ScorerBase = scorer, run: AgentRun = run, repeat: int = repeat) -> None:
                for _ in range(repeat):
                    scorer.score(run)

            b.rate(f"scorer.{kind}.{n}calls.evals_per_s", loop, repeat, unit="evals/s", runs=1 if quick else 5)
