"""Matches per second of the expectation index with 10 and 10,000 expectations.

The set mirrors a large registry, which grows by canaries: 90% pin a canary test-case id (and an
agent, sometimes a service); 9% an agent and a tenant; 1% a service and words of the input. Runs
come from 200 agents, 30 tenants and 50 services; a third carry a canary's test-case id. Matching
cost grows with the candidates a run's values select (here about 7), not with the registry's size.

Expectations with no exact selector (only regex, exists or input text) are candidates for every
run, so each costs one check per run: `registry.match.10000.unindexed10.matches_per_s` adds ten.

The baseline is scoring the run with `trajectory` (exact mode, 5 calls) in the same process; the
target is a ratio above 1 for `registry.match.10000.matches_per_s`.
"""

from __future__ import annotations

import random
from typing import Any

from tests.bench.harness import Bench
from tests.bench.workload import make_calls
from toolscore.collector.registry import Expectation
from toolscore.collector.registry._matching import ExpectationIndex
from toolscore.scorers import AgentRun, Trajectory

_SCORER = [{"type": "tool_selection", "expected_tool": "search_flights"}]
_AGENTS = 200
_TENANTS = 30
_SERVICES = 50


def _match(rng: random.Random, i: int) -> dict[str, Any]:
    kind = rng.random()
    agent = f"agent-{rng.randrange(_AGENTS)}"
    if kind < 0.90:
        match: dict[str, Any] = {"agent": agent, "attributes": {"test_case.id": f"case-{i}"}}
        if rng.random() < 0.3:
            match["service"] = {"in": [f"svc-{rng.randrange(_SERVICES)}", f"svc-{rng.randrange(_SERVICES)}"]}
        return match
    if kind < 0.99:
        return {"agent": agent, "attributes": {"tenant": f"t-{rng.randrange(_TENANTS)}"}}
    return {"service": f"svc-{rng.randrange(_SERVICES)}", "input": {"contains": "refund"}}


def _unindexed(rng: random.Random) -> dict[str, Any]:
    return {"input": {"regex": f"(?i)order {rng.randint(0, 999)}\\b"}, "attributes": {"session.id": {"exists": True}}}


def make_expectations(n: int, seed: int = 11, unindexed: int = 0) -> list[Expectation]:
    rng = random.Random(seed)
    docs = [{"name": f"exp-{i:05d}", "match": _match(rng, i), "scorers": _SCORER} for i in range(n - unindexed)]
    docs += [{"name": f"scan-{i:02d}", "match": _unindexed(rng), "scorers": _SCORER} for i in range(unindexed)]
    return [Expectation.model_validate(doc) for doc in docs]


def make_runs(n: int, n_cases: int, seed: int = 13) -> list[AgentRun]:
    rng = random.Random(seed)
    runs = []
    for i in range(n):
        attributes: dict[str, Any] = {"session.id": f"s-{i}", "tenant": f"t-{rng.randrange(_TENANTS)}"}
        if rng.random() < 0.33:
            attributes["test_case.id"] = f"case-{rng.randrange(n_cases)}"
        runs.append(
            AgentRun(
                trace_id=f"{rng.getrandbits(128):032x}",
                agent_name=f"agent-{rng.randrange(_AGENTS)}",
                input=rng.choice(["Book a flight to JFK", "I want a refund for order 42", "weather in Lisbon?"]),
                attributes=attributes,
                resource={"service.name": f"svc-{rng.randrange(_SERVICES)}"},
            )
        )
    return runs


def bench(b: Bench, *, quick: bool = False) -> None:
    """`quick`: 50 runs against 10 and 200 expectations, one pair each, for the smoke test."""
    large, pairs = (200, 1) if quick else (10_000, 5)
    runs = make_runs(50 if quick else 2000, n_cases=large)
    expected = make_calls(5, seed=5)
    scored = AgentRun(calls=tuple(reversed(expected)))
    trajectory = Trajectory(expected=[call.model_dump() for call in expected])

    def score_loop() -> None:
        for _ in range(len(runs)):
            trajectory.score(scored)

    baseline = "registry.baseline.trajectory.5calls.evals_per_s"
    sets = {"10": make_expectations(10), f"{large}": make_expectations(large)}
    sets[f"{large}.unindexed10"] = make_expectations(large, unindexed=10)
    for label, expectations in sets.items():
        index = ExpectationIndex(expectations)

        def match_loop(index: ExpectationIndex = index) -> None:
            for run in runs:
                index.match(run)

        name = f"registry.match.{label}.matches_per_s"
        b.pair(name, match_loop, baseline, score_loop, len(runs), unit="matches/s", baseline_unit="evals/s", runs=pairs)
