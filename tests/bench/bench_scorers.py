"""Evaluations per second of each deterministic scorer on 5- and 50-call runs, calls already parsed."""

from __future__ import annotations

import random

from tests.bench.harness import Bench
from tests.bench.workload import TOOLS, make_calls
from toolscore.scorers import (
    F1,
    AgentRun,
    ArgsValid,
    Efficiency,
    ScorerBase,
    ToolCall,
    ToolErrors,
    ToolPolicy,
    ToolSelection,
    ToolSpec,
    Trajectory,
)

_STRING = {"type": "string"}
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "query": _STRING,
        "date": {"type": "string", "description": "YYYY-MM-DD"},
        "passengers": {"type": "integer", "minimum": 1, "maximum": 9},
        "filters": {
            "type": "object",
            "properties": {
                "max_price": {"type": "number", "minimum": 0},
                "cabin": {"type": "string", "enum": ["economy", "premium", "business", "first"]},
                "stops": {"type": "array", "items": {"type": "integer"}},
            },
            "additionalProperties": False,
        },
        "currency": {"type": "string", "enum": ["EUR", "USD", "GBP"]},
        "user_id": _STRING,
    },
    "required": ["query", "user_id"],
    "additionalProperties": False,
}
"""The JSON Schema of the workload's arguments (`make_args`), as a framework would offer each tool."""
CATALOG = tuple(ToolSpec(name=name, description=f"The {name} tool.", parameters=ARGS_SCHEMA) for name in TOOLS)
"""The run's tool catalog: every workload tool, each with its schema (one schema object, as a catalog
rebuilt per run would not share; the validator is cached by the schema's text all the same)."""


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
        "trajectory_strict": Trajectory(expected=[call.model_dump() for call in expected], mode="strict"),
        "tool_policy": ToolPolicy(
            allowed=list(TOOLS), denied=["delete_*"], before=[("search_flights", "book_hotel")], max_calls={"*": 100}
        ),
        "args_valid": ArgsValid(),
        "efficiency": Efficiency(),
        "tool_errors": ToolErrors(fallbacks={"search_flights": ["fetch_*"]}),
    }


def _production_run(calls: list[ToolCall]) -> AgentRun:
    """The run with its tool catalog and one failed call (recovered or not: a later call of its tool may come)."""
    failed = calls[1].model_copy(update={"error": True, "error_type": "TimeoutError"})
    return AgentRun(calls=(calls[0], failed, *calls[2:]), available_tools=CATALOG)


def bench(b: Bench, *, quick: bool = False) -> None:
    """`quick`: a few evaluations, one run, for the smoke test."""
    for n in (5, 50):
        expected = make_calls(n, seed=n)
        actual = _perturbed(expected, seed=n)
        run = _production_run(actual)
        repeat = 20 if quick else 20_000 if n == 5 else 2_000
        for kind, scorer in _scorers(expected).items():

            def loop(scorer: ScorerBase = scorer, run: AgentRun = run, repeat: int = repeat) -> None:
                for _ in range(repeat):
                    scorer.score(run)

            b.rate(f"scorer.{kind}.{n}calls.evals_per_s", loop, repeat, unit="evals/s", runs=1 if quick else 5)
