"""Which expectations a run selects, the index against a brute-force scan, and sampling."""

from __future__ import annotations

import logging
import random
from typing import Any

import pytest

from toolscore.collector.registry import Expectation, Registry
from toolscore.collector.registry._matching import MAX_KEYS_PER_EXPECTATION, ExpectationIndex, matches
from toolscore.collector.registry._sampling import sampled_scorers, should_sample
from toolscore.collector.registry.stores import MemoryStore
from toolscore.scorers import AgentRun

SCORER = {"type": "tool_selection", "expected_tool": "x"}


def exp(name: str, enabled: bool = True, **match: Any) -> Expectation:
    return Expectation.model_validate({"name": name, "enabled": enabled, "match": match, "scorers": [SCORER]})


def run(
    agent: str | None = "travel",
    attributes: dict[str, Any] | None = None,
    resource: dict[str, Any] | None = None,
    text: str | None = None,
) -> AgentRun:
    return AgentRun(
        trace_id="0af7651916cd43dd8448eb211c80319c",
        agent_name=agent,
        attributes=attributes or {},
        resource=resource or {},
        input=text,
    )


@pytest.mark.parametrize(
    ("condition", "value", "expected"),
    [
        ("travel", "travel", True),
        ("travel", "travel-v2", False),
        ({"equals": "travel"}, "travel", True),
        (3, "3", True),
        ("3", 3, True),
        (True, "true", True),
        (1, 1.0, True),
        (["a", "b"], "b", True),
        ({"in": ["a", "b"]}, "c", False),
        ({"regex": "^sess-[0-9]+$"}, "sess-42", True),
        ({"regex": "sess"}, "my-sess-42", True),
        ({"regex": "^sess$"}, "my-sess", False),
        ({"exists": True}, "anything", True),
        ({"exists": True}, None, False),
        ({"exists": False}, None, True),
        ({"exists": False}, "x", False),
        ({"contains": "fund"}, "refund", True),
        ({"contains": "fund"}, "return", False),
        ("x", None, False),
        ({"regex": "."}, None, False),
        ("b", ["a", "b"], True),
        ({"contains": "b"}, ["a", "b"], True),
        ({"contains": "b"}, ["a", "bc"], False),
        ({"regex": "^c"}, ["a", "bc"], False),
    ],
)
def test_attribute_condition_forms(condition: Any, value: Any, expected: bool) -> None:
    attributes = {} if value is None else {"k": value}
    index = ExpectationIndex([exp("e", attributes={"k": condition})])
    assert matches(exp("e", attributes={"k": condition}).match, run(attributes=attributes)) is expected
    assert [e.name for e in index.match(run(attributes=attributes))] == (["e"] if expected else [])


def test_each_selector_reads_its_part_of_the_run() -> None:
    target = run(
        agent="travel",
        attributes={"session.id": "s1"},
        resource={"service.name": "travel-api", "deployment.environment.name": "prod"},
        text="Book me a flight to JFK",
    )
    assert matches(exp("e", agent="travel").match, target)
    assert matches(exp("e", service="travel-api").match, target)
    assert matches(exp("e", resource={"deployment.environment.name": "prod"}).match, target)
    assert matches(exp("e", attributes={"session.id": "s1"}).match, target)
    assert matches(exp("e", input={"contains": "flight"}).match, target)
    assert matches(exp("e", input={"regex": "(?i)^book"}).match, target)
    assert not matches(exp("e", service="travel-api").match, run(resource={"service.name": "other"}))
    assert not matches(exp("e", agent={"exists": True}).match, run(agent=None))


def test_all_selectors_must_hold() -> None:
    spec = exp("e", agent="travel", service="travel-api", attributes={"tier": "pro"}).match
    full = run(attributes={"tier": "pro"}, resource={"service.name": "travel-api"})
    assert matches(spec, full)
    assert not matches(spec, run(attributes={"tier": "free"}, resource={"service.name": "travel-api"}))
    assert not matches(spec, run(agent="other", attributes={"tier": "pro"}, resource={"service.name": "travel-api"}))
    assert not matches(spec, run(attributes={"tier": "pro"}))


def test_attribute_falls_back_to_baggage_prefix() -> None:
    spec = exp("e", attributes={"test_case.id": "tc-7"}).match
    assert matches(spec, run(attributes={"baggage.test_case.id": "tc-7"}))
    assert matches(spec, run(attributes={"test_case.id": "tc-7", "baggage.test_case.id": "other"}))
    assert not matches(spec, run(attributes={"baggage.test_case.id": "tc-8"}))


def test_expectation_without_selectors_matches_nothing_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolscore.registry"), Registry(MemoryStore()) as registry:
        registry.put({"name": "catch-all", "scorers": [SCORER]})
        assert registry.match(run()) == []
        assert registry.match(AgentRun()) == []
    assert "'catch-all' has no selector" in caplog.text


def test_disabled_expectations_never_match() -> None:
    index = ExpectationIndex([exp("off", enabled=False, agent="travel"), exp("on", agent="travel")])
    assert [e.name for e in index.match(run())] == ["on"]
    assert [e.name for e in index.expectations] == ["off", "on"]


def test_matches_come_back_in_name_order_without_duplicates() -> None:
    index = ExpectationIndex(
        [
            exp("c", agent="travel"),
            exp("a", attributes={"tags": ["x", "y"]}),
            exp("b", input={"contains": "hi"}),
        ]
    )
    target = run(attributes={"tags": ["x", "y", "x"]}, text="hi there")
    assert [e.name for e in index.match(target)] == ["a", "b", "c"]


def test_in_conditions_beyond_the_key_cap_are_still_checked() -> None:
    many = [f"t-{i}" for i in range(MAX_KEYS_PER_EXPECTATION + 1)]
    index = ExpectationIndex(
        [exp("wide", agent={"in": ["travel", "other"]}, attributes={"tenant": many, "tier": ["a", "b"]})]
    )
    assert [e.name for e in index.match(run(attributes={"tenant": "t-256", "tier": "b"}))] == ["wide"]
    assert [e.name for e in index.match(run(agent="other", attributes={"tenant": "t-0", "tier": "a"}))] == ["wide"]
    assert index.match(run(attributes={"tenant": "t-999", "tier": "a"})) == []
    assert index.match(run(attributes={"tenant": "t-1", "tier": "c"})) == []


# -- the index gives the scan's answers --------------------------------------------------------------

_KEYS = ["session.id", "tenant", "test_case.id"]
_VALUES = ["a", "b", "c", 1, True]


def _random_condition(rng: random.Random) -> Any:
    kind = rng.choice(["eq", "eq", "in", "regex", "exists", "contains"])
    if kind == "eq":
        return rng.choice(_VALUES)
    if kind == "in":
        return {"in": rng.sample(_VALUES, rng.randint(1, 3))}
    if kind == "regex":
        return {"regex": rng.choice(["^a", "b|c", "1", "^tr"])}
    if kind == "exists":
        return {"exists": rng.random() < 0.7}
    return {"contains": rng.choice(["a", "ru", "x"])}


def _random_expectation(rng: random.Random, i: int) -> Expectation:
    match: dict[str, Any] = {}
    if rng.random() < 0.5:
        match["agent"] = _random_condition(rng)
    if rng.random() < 0.3:
        match["service"] = _random_condition(rng)
    if rng.random() < 0.6:
        match["attributes"] = {k: _random_condition(rng) for k in rng.sample(_KEYS, rng.randint(1, 2))}
    if rng.random() < 0.2:
        match["input"] = _random_condition(rng)
    return exp(f"e{i:03d}", enabled=rng.random() < 0.9, **match)


def _random_run(rng: random.Random) -> AgentRun:
    def value() -> Any:
        return rng.choice([*_VALUES, "true", "1", [rng.choice(_VALUES), rng.choice(_VALUES)]])

    attributes = {k if rng.random() < 0.7 else f"baggage.{k}": value() for k in _KEYS if rng.random() < 0.6}
    resource = {"service.name": value()} if rng.random() < 0.5 else {}
    agent = rng.choice(["a", "b", "c", "1", "true", None])
    return run(agent=agent, attributes=attributes, resource=resource, text=rng.choice([None, "a run", "xx"]))


def test_index_matches_brute_force_scan_on_random_sets() -> None:
    rng = random.Random(20260521)
    for _ in range(30):
        expectations = [_random_expectation(rng, i) for i in range(rng.randint(1, 60))]
        index = ExpectationIndex(expectations)
        for _ in range(40):
            target = _random_run(rng)
            scan = sorted(e.name for e in expectations if e.enabled and matches(e.match, target))
            assert [e.name for e in index.match(target)] == scan


# -- sampling ----------------------------------------------------------------------------------------


def test_sampling_follows_the_low_64_bits_of_the_trace_id() -> None:
    low_zero = "ffffffffffffffff0000000000000000"
    low_max = "0000000000000000ffffffffffffffff"
    assert should_sample(low_zero, 0.0001)
    assert not should_sample(low_max, 0.9999)
    half = "00000000000000007fffffffffffffff"
    assert should_sample(half, 0.5)
    assert not should_sample("00000000000000008000000000000000", 0.5)


def test_sampling_edges_and_determinism() -> None:
    rng = random.Random(7)
    ids = [f"{rng.getrandbits(128):032x}" for _ in range(20_000)]
    assert all(should_sample(t, 1.0) for t in ids[:100])
    assert not any(should_sample(t, 0.0) for t in ids[:100])
    first = [should_sample(t, 0.1) for t in ids]
    assert first == [should_sample(t, 0.1) for t in ids]
    assert 0.09 < sum(first) / len(ids) < 0.11
    # a lower rate samples a subset of a higher rate's traces
    assert all(should_sample(t, 0.3) for t, chosen in zip(ids, first, strict=True) if chosen)


def test_sampling_ids_that_are_not_hex_is_still_deterministic() -> None:
    assert should_sample("", 0.5) == should_sample("", 0.5)
    chosen = [should_sample(f"run-{i}", 0.5) for i in range(2000)]
    assert chosen == [should_sample(f"run-{i}", 0.5) for i in range(2000)]
    assert 0.4 < sum(chosen) / len(chosen) < 0.6


def test_sampled_scorers_apply_each_rate() -> None:
    e = Expectation.model_validate(
        {
            "name": "e",
            "match": {"agent": "a"},
            "scorers": [SCORER, {**SCORER, "name": "rare", "sample_rate": 0.5}],
        }
    )
    assert [s.name for s in sampled_scorers(e, "00000000000000000000000000000001")] == ["tool_selection", "rare"]
    assert [s.name for s in sampled_scorers(e, "0000000000000000ffffffffffffffff")] == ["tool_selection"]
