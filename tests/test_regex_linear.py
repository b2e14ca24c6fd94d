"""Patterns meet sender-controlled text on a linear-time engine, and the ones it cannot run are refused when
written (file, API, CLI) naming the pattern and the feature."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import grpc
import pytest
from click.testing import CliRunner

from tests.registry_builders import serve, store_raw
from toolscore.collector.cli import main
from toolscore.collector.registry import (
    InvalidExpectation,
    Registry,
    RegistryConfig,
    SqliteStoreConfig,
    parse_expectation,
)
from toolscore.collector.registry._conditions import Condition
from toolscore.collector.registry._files import load_file
from toolscore.collector.registry._validation import unreadable_problem
from toolscore.collector.registry.stores import MemoryStore
from toolscore.registry.v1 import registry_pb2 as pb
from toolscore.registry.v1 import registry_pb2_grpc as pb_grpc
from toolscore.scorers import AgentRun, ToolCall
from toolscore.scorers._matching import ArgsMatch
from toolscore.scorers._regex import RegexError, compile_pattern

PROBE_PATTERN = "^(a+)+$"
PROBE_INPUT = "a" * 27 + "!"  # 6.6 s on Python's `re`, doubling with each extra `a`
FAST_S = 0.5


def _doc(pattern: str, where: str = "attributes") -> dict[str, Any]:
    match: dict[str, Any] = {"agent": "bot"}
    if where in ("attributes", "resource"):
        match[where] = {"session.id": {"regex": pattern}}
    else:
        match[where] = {"regex": pattern}
    return {"name": "probe", "match": match, "scorers": [{"type": "tool_selection", "expected_tool": "x"}]}


def _timed(fn: Any, *args: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


@pytest.mark.parametrize("where", ["attributes", "resource", "input"])
def test_the_probe_pattern_on_the_probe_input_is_matched_at_once(where: str) -> None:
    hostile = AgentRun(
        agent_name="bot",
        attributes={"session.id": PROBE_INPUT},
        resource={"session.id": PROBE_INPUT},
        input=PROBE_INPUT + "a" * 4000,
    )
    fine = AgentRun(agent_name="bot", attributes={"session.id": "aaa"}, resource={"session.id": "aaa"}, input="aaa")
    with Registry(MemoryStore()) as registry:
        registry.apply([parse_expectation(_doc(PROBE_PATTERN, where))])
        matched, took = _timed(registry.match, hostile)
        assert [e.name for e in registry.match(fine)] == ["probe"]
    assert matched == []
    assert took < FAST_S


def test_a_regex_argument_rule_on_the_probe_input_is_scored_at_once() -> None:
    rule = ArgsMatch.model_validate({"matchers": {"q": {"type": "regex", "pattern": PROBE_PATTERN}}})
    expected = ToolCall(name="search", args={"q": "aaa"})
    hostile = ToolCall(name="search", args={"q": PROBE_INPUT + "a" * 4000})
    matched, took = _timed(rule.matches, expected, hostile)
    assert matched is False
    assert took < FAST_S
    assert rule.matches(expected, ToolCall(name="search", args={"q": "aaaa"}))


@pytest.mark.parametrize(
    ("pattern", "feature"),
    [
        (r"^(a)\1$", "backreferences"),
        (r"(?P<x>a)(?P=x)", "named backreferences"),
        (r"^sess-(?=[0-9])", "lookahead"),
        (r"(?<!x)sess", "lookbehind"),
        (r"a++", "possessive"),
    ],
)
def test_a_pattern_the_engine_cannot_run_is_refused_naming_the_feature(pattern: str, feature: str) -> None:
    with pytest.raises(RegexError, match=f"^{feature}.* not supported by RE2"):
        compile_pattern(pattern)


def test_the_dialect_keeps_what_expectations_use() -> None:
    pattern = compile_pattern(r"(?i)^SESS-(?P<n>\d{2,4})\b.*é$")
    assert pattern.search("sess-123 xé")
    assert not pattern.search("sess-1 xé")
    assert compile_pattern("b").search("\ud800b")  # a lone surrogate is text, never an error
    assert Condition.model_validate({"regex": "b$"}).compile()("\ud800b")  # and so on the matching hot path


def test_the_two_documented_differences_from_python() -> None:
    assert not compile_pattern(r"^\d$").search("٣")  # ASCII classes
    assert compile_pattern(r"^\pN$").search("٣")
    assert not compile_pattern("a$").search("a\n")  # `$` only at the very end


def test_a_file_with_a_lookahead_is_refused_naming_the_file_line_pattern_and_feature(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_text(
        "name: probe\nmatch:\n  attributes:\n    session.id:\n      regex: 'x(?=y)'\n"
        "scorers:\n  - type: tool_selection\n    expected_tool: x\n"
    )
    with pytest.raises(InvalidExpectation) as caught:
        load_file(path)
    (problem,) = caught.value.problems
    assert (problem.file, problem.line) == (str(path), 4)
    assert problem.message.startswith("bad regex 'x(?=y)': lookahead")


def test_a_scorer_regex_with_a_backreference_is_refused_naming_the_param() -> None:
    doc = _doc("^a")
    doc["scorers"] = [
        {
            "type": "trajectory",
            "expected": [{"name": "a", "args": {}}],
            "args_match": {"mode": "subset", "matchers": {"id": {"type": "regex", "pattern": r"(x)\1"}}},
        }
    ]
    with pytest.raises(InvalidExpectation) as caught:
        parse_expectation(doc)
    text = str(caught.value)
    assert "scorers[0].args_match.matchers.id.pattern" in text
    assert r"'(x)\\1': backreferences" in text


def test_the_api_refuses_a_backreference_with_invalid_argument(tmp_path: Path) -> None:
    config = RegistryConfig(store=SqliteStoreConfig(path=str(tmp_path / "r.db")))
    with Registry(config=config) as registry:
        for server in serve(registry):
            msg = pb.Expectation(name="probe")
            msg.match.agent.regex = r"(a)\1"
            msg.scorers.add(type="tool_selection").params.update({"expected_tool": "x"})
            with grpc.insecure_channel(server.target) as channel:
                stub = pb_grpc.ExpectationRegistryStub(channel)
                with pytest.raises(grpc.RpcError) as caught:
                    stub.PutExpectation(pb.PutExpectationRequest(expectation=msg), timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details().startswith(r"match.agent: bad regex '(a)\\1': backreferences")


def test_the_cli_refuses_a_lookbehind_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_text(
        "name: probe\nmatch:\n  agent:\n    regex: '(?<=x)y'\n"
        "scorers:\n  - type: tool_selection\n    expected_tool: x\n"
    )
    result = CliRunner().invoke(main, ["expectations", "apply", str(path), "--db", str(tmp_path / "r.db")])
    assert result.exit_code == 1
    assert f"{path}:3: match.agent: bad regex '(?<=x)y': lookbehind" in result.stderr


def test_a_stored_pattern_written_before_the_engine_is_read_as_a_disabled_stand_in(tmp_path: Path) -> None:
    store_raw(tmp_path / "r.db", "old", _doc(r"(a)\1") | {"name": "old"})
    config = RegistryConfig(store=SqliteStoreConfig(path=str(tmp_path / "r.db")))
    with Registry(config=config) as registry:
        (old,) = registry.list()
    assert old.enabled is False
    assert "backreferences" in (unreadable_problem(old) or "")
