"""Expectation documents: what validates, and errors that name the file, the line and the field."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from tests.registry_builders import store_raw
from toolscore.collector.registry import Expectation, InvalidExpectation, Registry, load_paths, parse_expectation
from toolscore.collector.registry._conditions import Condition
from toolscore.collector.registry._files import load_file
from toolscore.collector.registry.stores import MemoryStore, SqliteStore
from toolscore.scorers import SCORER_TYPES, AgentRun, Trajectory

DATA = Path(__file__).parent / "testdata" / "registry"
EXAMPLE = Path(__file__).parent.parent / "deploy" / "expectations" / "example.yaml"

# file -> (line, field, a piece of the message), for the first problem reported
INVALID = {
    "bad_condition.yaml": (5, 'match.resource["deployment.environment.name"]', "one key of equals, in"),
    "bad_in.json": (5, 'match.attributes["user.tier"]', "non-empty list"),
    "bad_name.yaml": (4, "name", "must match the pattern `^[A-Za-z0-9_.\\-]+$`, got 'not a valid name'"),
    "bad_regex.yaml": (5, 'match.attributes["session.id"]', "bad regex 'sess-(['"),
    "bad_sample_rate.yaml": (7, "scorers[0].sample_rate", "must be <= 1, got 1.5"),
    "duplicate_name.yaml": (6, "name", "duplicate name 'twice', first at"),
    "empty_scorers.yaml": (
        5,
        "scorers",
        "expectation 'travel' has no scorers, so it would score none of the runs it matches; give at least one",
    ),
    "missing_scorers.yaml": (4, "scorers", "expectation 'travel' has no scorers"),
    "threshold_above_one.yaml": (
        10,
        "scorers[1].threshold",
        "must be between 0 and 1, the range every score is in, got 80: every run would fail",
    ),
    "threshold_below_zero.yaml": (4, "scorers[0].threshold", "got -0.5: every run would pass"),
    "duplicate_scorer_name.yaml": (
        5,
        "scorers",
        "expectation 'travel' has two scorers reporting their scores as 'tool_selection', scorers[0] and scorers[1] "
        "(a scorer without `name` reports under its type); give one of them a distinct `name`",
    ),
    "long_label_value.yaml": (6, "labels.runbook", "is 1100 characters long, over the limit of 1024"),
    "long_name.yaml": (2, "name", "is 300 characters long, over the limit of 256"),
    "expected_call_without_name.yaml": (8, "scorers[0].expected[1].name", "required key missing"),
    "missing_judge_model.yaml": (5, "scorers[0].model", "required key missing"),
    "missing_name.yaml": (4, "name", "required key missing"),
    "missing_scorer_type.yaml": (
        5,
        "scorers[0]",
        "required key `type` missing; one of: tool_selection, trajectory, f1, llm_judge",
    ),
    "matcher_without_pattern.yaml": (9, "scorers[0].args_match.matchers.units.pattern", "required key missing"),
    "misspelt_matcher_type.yaml": (
        8,
        "scorers[0].args_match.matchers.lat",
        "unknown type 'numbr'; did you mean `number`?",
    ),
    "misspelt_mode.yaml": (6, "scorers[0].mode", "got 'strickt'; did you mean `strict`?"),
    "misspelt_name.yaml": (3, "nme", "unknown key; did you mean `name`? (a required key, missing)"),
    "misspelt_scorer_type.yaml": (5, "scorers[0]", "unknown type 'trajectry'; did you mean `trajectory`?"),
    "not_a_boolean.yaml": (2, "enabled", "expected true or false, got 'maybe'"),
    "not_a_list.yaml": (6, "scorers[0].expected", "expected a list, got 'search_flights'"),
    "not_yaml.yaml": (4, "", "not valid YAML/JSON"),
    "too_many_labels.yaml": (4, "labels", "has 65 labels, over the limit of 64"),
    "misspelt_scorer_param.yaml": (9, "scorers[1].expectd", "unknown key; did you mean `expected`?"),
    "unknown_match_key.yaml": (4, "match.agnet_version", "keys here: agent, attributes, input, resource, service"),
    "unknown_scorer_param.yaml": (
        9,
        "scorers[1].mode",
        "expected 'exact', 'flexible', 'strict', 'unordered', 'subset' or 'superset', got 'sideways'",
    ),
    "unknown_scorer_type.yaml": (7, "scorers[1]", "unknown type 'vibes'; known types: tool_selection, trajectory,"),
}


def test_every_invalid_testdata_file_has_an_expected_error() -> None:
    assert sorted(p.name for p in (DATA / "invalid").iterdir()) == sorted(INVALID)


@pytest.mark.parametrize("filename", sorted(INVALID))
def test_invalid_file_error_names_file_line_and_field(filename: str) -> None:
    path = DATA / "invalid" / filename
    line, field, message = INVALID[filename]
    with pytest.raises(InvalidExpectation) as caught:
        load_file(path)
    problem = caught.value.problems[0]
    assert (problem.file, problem.line, problem.field) == (str(path), line, field)
    assert message in problem.message
    assert f"{path}:{line}: " in str(caught.value)


def test_every_problem_of_a_file_is_reported_not_only_the_first(tmp_path: Path) -> None:
    path = tmp_path / "two.yaml"
    pick = "scorers: [{type: tool_selection, expected_tool: x}]"
    path.write_text(
        f"- name: 'bad name'\n  match: {{agent: a}}\n  {pick}\n"
        f"- name: ok\n  match: {{agent: {{regex: '('}}}}\n  {pick}\n"
    )
    with pytest.raises(InvalidExpectation) as caught:
        load_file(path)
    assert [(p.line, p.field) for p in caught.value.problems] == [(1, "name"), (5, "match.agent")]


def test_names_must_be_unique_across_files(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(
        "name: same\nmatch: {agent: a}\nscorers: [{type: tool_selection, expected_tool: x}]\n"
    )
    (tmp_path / "b.json").write_text(
        '{"name": "same", "match": {"agent": "b"}, "scorers": [{"type": "tool_selection", "expected_tool": "x"}]}'
    )
    with pytest.raises(InvalidExpectation) as caught:
        load_paths([tmp_path])
    assert caught.value.file == str(tmp_path / "b.json")
    assert f"first at {tmp_path / 'a.yaml'}:1" in caught.value.problems[0].message


def test_example_file_loads_every_scorer_type_and_selector_kind() -> None:
    expectations = load_file(EXAMPLE)
    kinds = {s.spec["type"] for e in expectations for s in e.scorers}
    assert kinds == set(SCORER_TYPES)
    ops = {cond.op for e in expectations for _, cond in e.match.selectors()}
    assert ops == {"equals", "in", "regex", "exists", "contains"}
    judge = next(s for e in expectations for s in e.scorers if s.spec["type"] == "llm_judge")
    assert judge.sample_rate < 1
    assert any(not e.enabled for e in expectations)


def test_json_list_file_loads_and_labels_become_text() -> None:
    (exp,) = load_file(DATA / "valid" / "canary.json")
    assert exp.labels == {"owner": "shop", "severity": "2"}
    assert exp.scorers[0].name == "tool_selection"


def test_document_round_trips_through_to_dict() -> None:
    for exp in load_file(EXAMPLE):
        again = Expectation.model_validate(exp.to_dict())
        assert again == exp
        assert again.to_dict() == exp.to_dict()


def test_scorer_spec_keeps_the_document_and_parses_the_scorer() -> None:
    exp = parse_expectation(
        {
            "name": "t",
            "match": {"agent": "a"},
            "scorers": [{"type": "trajectory", "name": "traj", "threshold": 0.5, "expected": [{"name": "x"}]}],
        }
    )
    scorer = exp.scorers[0]
    assert isinstance(scorer.scorer, Trajectory)
    assert (scorer.name, scorer.scorer.threshold, scorer.sample_rate) == ("traj", 0.5, 1.0)
    assert scorer.spec == {"type": "trajectory", "name": "traj", "threshold": 0.5, "expected": [{"name": "x"}]}


def test_condition_forms_parse_to_operators() -> None:
    forms = {
        "x": ("equals", "x"),
        3: ("equals", 3),
        ("a", "b"): ("in", ("a", "b")),
        "equals": ("equals", True),
        "regex": ("regex", "^a"),
        "exists": ("exists", False),
        "contains": ("contains", "ab"),
    }
    raw = {"x": "x", 3: 3, ("a", "b"): ["a", "b"], "equals": {"equals": True}, "regex": {"regex": "^a"}}
    raw |= {"exists": {"exists": False}, "contains": {"contains": "ab"}}
    for key, data in raw.items():
        cond = Condition.model_validate(data)
        assert (cond.op, cond.value) == forms[key]


def test_exists_must_be_a_boolean() -> None:
    with pytest.raises(InvalidExpectation) as caught:
        parse_expectation({"name": "e", "match": {"attributes": {"k": {"exists": "yes"}}}})
    assert caught.value.field == "match.attributes.k"
    assert "true or false" in str(caught.value)


def test_a_files_version_is_not_read_and_the_loader_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """For every reader of files (eval, the pytest plugin, a collector's file registry, apply): the store numbers
    writes, so a `version` copied from `get` neither sets the version reported with scores nor passes unremarked."""
    path = tmp_path / "x.json"
    path.write_text(
        '[{"name": "copied", "version": 7, "match": {"agent": "a"},\n'
        '  "scorers": [{"type": "tool_selection", "expected_tool": "x"}]},\n'
        ' {"name": "written", "match": {"agent": "a"}, "scorers": [{"type": "tool_selection", "expected_tool": "x"}]}]'
    )
    with caplog.at_level(logging.WARNING, logger="toolscore.registry"):
        copied, written = load_file(path)
    assert (copied.version, written.version) == (0, 0)
    assert [r.getMessage() for r in caplog.records] == [
        f"expectation 'copied' ({path}:1) sets `version: 7`, which is ignored: files do not set versions, the store "
        "numbers every write itself (`toolscore expectations get` prints the live one); `toolscore expectations "
        "apply` writes over whatever version is live"
    ]


def test_loading_an_expectation_without_selectors_warns(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("name: everything\nscorers: [{type: tool_selection, expected_tool: x}]\n")
    with caplog.at_level(logging.WARNING, logger="toolscore.registry"):
        (exp,) = load_file(path)
    assert exp.match.empty
    assert f"'everything' ({path}:1) has no selector" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="toolscore.registry"), Registry(MemoryStore()) as registry:
        registry.apply([exp])  # `expectations apply` of the file: said once, with its line, above
    assert "has no selector" not in caplog.text
    with caplog.at_level(logging.WARNING, logger="toolscore.registry"), Registry(MemoryStore()) as registry:
        registry.apply([{"name": "raw", "scorers": [{"type": "tool_selection", "expected_tool": "x"}]}])
    assert "'raw' has no selector" in caplog.text


@pytest.mark.parametrize(
    ("document", "field", "message"),
    [
        ({"labels": {"k" * 300: "v"}}, "labels", "the key 'kkkkkkkkkkkkkkkkkkkkkkkk...' is 300 characters long"),
        ({"match": {"agent": {"regex": "a" * 5000}}}, "match.agent", "`regex` text is 5000 characters long"),
        ({"match": {"service": list(range(1001))}}, "match.service", "`in` has 1001 values, over the limit of 1000"),
        ({"match": {"resource": {f"k{i}": 1 for i in range(65)}}}, "match.resource", "has 65 selectors, over"),
        ({"match": {"attributes": {"k" * 257: 1}}}, "match.attributes", "is 257 characters long, over the limit"),
        ({"scorers": [{"type": "tool_selection", "expected_tool": "x"}] * 65}, "scorers", "has 65 scorers, over"),
    ],
    ids=["label_key", "regex", "in_values", "selectors", "selector_key", "scorers"],
)
def test_oversized_parts_are_refused_naming_the_field_its_size_and_the_limit(
    document: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(InvalidExpectation) as caught:
        parse_expectation({"name": "big", "match": {"agent": "a"}, **document})
    assert caught.value.field == field
    assert message in caught.value.problems[0].message


def test_a_stored_document_over_the_limits_is_still_read_and_matched_but_not_written_again(tmp_path: Path) -> None:
    """A registry written before the limits keeps working; only a write of the oversized document fails."""
    name, path = "n" * 300, tmp_path / "registry.db"
    scorers = [{"type": "tool_selection", "expected_tool": "x"}]
    store_raw(
        path, name, {"name": name, "match": {"agent": "travel"}, "labels": {"owner": "o" * 2000}, "scorers": scorers}
    )
    with Registry(SqliteStore(path)) as registry:
        assert [e.name for e in registry.match(AgentRun(agent_name="travel"))] == [name]
        assert not registry.unreadable
        with pytest.raises(InvalidExpectation) as caught:
            registry.put(registry.get(name).to_dict())
    assert [p.field for p in caught.value.problems] == ["name", "labels.owner"]


def test_a_stored_document_without_scorers_or_with_a_threshold_past_1_is_still_read_but_not_written_again(
    tmp_path: Path,
) -> None:
    """Written before the checks: the registry keeps matching (and scoring) with them; only writing them again is
    refused."""
    path = tmp_path / "registry.db"
    store_raw(path, "none", {"name": "none", "match": {"agent": "travel"}, "scorers": []})
    picky = {"type": "tool_selection", "expected_tool": "book_flight", "threshold": 2}
    store_raw(path, "picky", {"name": "picky", "match": {"agent": "travel"}, "scorers": [picky]})
    with Registry(SqliteStore(path)) as registry:
        assert [e.name for e in registry.match(AgentRun(agent_name="travel"))] == ["none", "picky"]
        assert not registry.unreadable
        assert registry.get("picky").scorers[0].scorer.threshold == 2
        for name, field in (("none", "scorers"), ("picky", "scorers[0].threshold")):
            with pytest.raises(InvalidExpectation) as caught:
                registry.put(registry.get(name).to_dict())
            assert caught.value.field == field


def test_two_scorers_reporting_under_one_name_are_refused_naming_the_expectation_and_both_indexes() -> None:
    named = [{"type": "tool_selection", "expected_tool": t, "name": "pick"} for t in ("a", "b", "c")]
    with Registry(MemoryStore()) as registry, pytest.raises(InvalidExpectation) as caught:
        registry.put({"name": "checkout", "match": {"agent": "a"}, "scorers": named})
    assert str(caught.value) == (
        "scorers: expectation 'checkout' has two scorers reporting their scores as 'pick', scorers[0] and "
        "scorers[1]; give one of them a distinct `name`"
    )


def test_a_stored_document_with_two_scorers_of_one_name_is_still_read_and_matched_but_not_written_again(
    tmp_path: Path,
) -> None:
    """Written before the check: the registry keeps scoring with it; only writing it again is refused."""
    path = tmp_path / "registry.db"
    scorers = [{"type": "tool_selection", "expected_tool": "a"}, {"type": "tool_selection", "expected_tool": "b"}]
    store_raw(path, "twice", {"name": "twice", "match": {"agent": "travel"}, "scorers": scorers})
    with Registry(SqliteStore(path)) as registry:
        assert [e.name for e in registry.match(AgentRun(agent_name="travel"))] == ["twice"]
        assert not registry.unreadable
        assert len(registry.get("twice").scorers) == 2
        with pytest.raises(InvalidExpectation) as caught:
            registry.put(registry.get("twice").to_dict())
    assert caught.value.field == "scorers"
