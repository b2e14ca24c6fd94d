"""Expectations under masking: expected values masked as runs are, and rules needing raw values refused when written.

Also what scorers say when values are masked or not kept, what the judge is told, and what the offline `runs`
command shows of a store written without masking.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from tests.privacy_runs import ARGS, MASKING
from toolscore.collector.cli import main
from toolscore.collector.extract.privacy import PrivacyConfig, mask_run
from toolscore.collector.pipeline.match import plan_scores
from toolscore.collector.registry import InvalidExpectation, Registry, load_paths, parse_expectation
from toolscore.collector.registry._matching import ExpectationIndex
from toolscore.collector.registry.stores import MemoryStore
from toolscore.collector.serve.scores import ScoreStoreConfig
from toolscore.collector.serve.scores._store import ScoreStore
from toolscore.scorers import AgentRun, ArgsValid, Efficiency, LLMJudge, Score, ScoreFailure, ToolCall, ToolSpec
from toolscore.scorers._llm_judge_prompt import build_messages

PRIVACY = PrivacyConfig.model_validate(MASKING)
NAMES_ONLY = PrivacyConfig(content="names_only", hash_key="k")


def _doc(*matchers: tuple[str, dict[str, Any]], expected_args: Any = ARGS) -> dict[str, Any]:
    rule = {"mode": "expected_subset", "matchers": dict(matchers)}
    scorer = {"type": "trajectory", "mode": "strict", "expected": [{"name": "charge", "args": expected_args}]}
    return {"name": "pay", "match": {"agent": {"equals": "payer"}}, "scorers": [{**scorer, "args_match": rule}]}


def _run(args: Any = ARGS, **fields: Any) -> AgentRun:
    call = ToolCall(name="charge", args=args, args_state="value")
    return AgentRun(**{"agent_name": "payer", "calls": (call,), "input": "Charge my card", **fields})


def _scores(run: AgentRun, doc: dict[str, Any], privacy: PrivacyConfig | None) -> list[Any]:
    masked = mask_run(run, privacy) if privacy is not None else run
    plan = plan_scores(masked, ExpectationIndex([parse_expectation(doc)]), privacy)
    return [scorer.scorer.score(masked) for _, scorer in plan.inline]


@pytest.mark.parametrize(
    "actual",
    [
        ARGS,
        {**ARGS, "auth": {"token": "sk-live-another"}},
        {**ARGS, "to": "bob@example.com"},
        {**ARGS, "card": {"number": "5500 0000 0000 0004", "holder": "Augusta"}},
        {**ARGS, "amount": 1},
    ],
)
def test_equality_rules_score_masked_runs_as_unmasked_ones(actual: dict[str, Any]) -> None:
    doc = _doc(("to", {"type": "one_of", "values": ["ada.lovelace@example.com", "x@example.com"]}))
    plain = _scores(_run(actual), doc, None)
    masked = _scores(_run(actual), doc, PRIVACY)
    assert [s.value for s in masked] == [s.value for s in plain]
    assert plain[0].value == (1.0 if actual == ARGS else 0.0)


def test_a_raw_value_rule_on_a_masked_key_is_refused_naming_the_rule_the_key_and_the_mask() -> None:
    doc = _doc(("auth.token", {"type": "regex", "pattern": "sk-.*"}), ("amount", {"type": "number", "value": 1}))
    parse_expectation(doc)  # fine without masking
    with pytest.raises(InvalidExpectation) as caught:
        parse_expectation(doc, privacy=PRIVACY)
    (problem,) = caught.value.problems  # `amount` is not masked: its number rule stands
    assert problem.field == 'scorers[0].args_match.matchers["auth.token"]'
    assert "`regex` rule" in problem.message
    assert "masks 'auth.token' (by '*.token')" in problem.message


def test_the_registry_refuses_such_a_rule_on_put_and_apply_and_stores_nothing() -> None:
    doc = _doc(("auth.token", {"type": "regex", "pattern": "sk-.*"}))
    with Registry(MemoryStore(), privacy=PRIVACY) as registry:
        with pytest.raises(InvalidExpectation, match=r"\*\.token"):
            registry.put(doc)
        with pytest.raises(InvalidExpectation, match=r"\[0\]\.scorers\[0\]\.args_match"):
            registry.apply([doc])
        assert registry.list() == []
        assert registry.put(_doc(("to", {"type": "one_of", "values": ["a@b.co"]}))).version == 1


def test_an_expectation_file_with_such_a_rule_is_refused_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "pay.yaml"
    path.write_text(yaml.safe_dump(_doc(("card.number", {"type": "type", "of": "string"})), sort_keys=False))
    load_paths([path])
    config = PrivacyConfig(mask_keys=("card.number",), hash_key="k")
    with pytest.raises(InvalidExpectation) as caught:
        load_paths([path], privacy=config)
    (problem,) = caught.value.problems
    assert problem.file == str(path)
    assert problem.line == path.read_text().splitlines().index("      card.number:") + 1


def test_eval_refuses_such_a_rule_with_the_privacy_options(tmp_path: Path) -> None:
    path = tmp_path / "pay.yaml"
    path.write_text(yaml.safe_dump(_doc(("auth.token", {"type": "regex", "pattern": "sk-.*"}))))
    traces = tmp_path / "none.json"
    traces.write_text('{"resourceSpans": []}')
    result = CliRunner().invoke(main, ["eval", "-t", str(traces), "-e", str(path), "--mask-key", "*.token"])
    assert result.exit_code == 2
    assert "needs the value of argument 'auth.token'" in result.stderr


def test_names_only_refuses_every_rule_but_any() -> None:
    doc = _doc(("to", {"type": "one_of", "values": ["a"]}), ("amount", {"type": "any"}))
    with pytest.raises(InvalidExpectation) as caught:
        parse_expectation(doc, privacy=NAMES_ONLY)
    assert [p.field for p in caught.value.problems] == ["scorers[0].args_match.matchers.to"]


def test_a_raw_value_rule_meeting_a_value_a_pattern_masked_fails_saying_so() -> None:
    doc = _doc(("to", {"type": "regex", "pattern": ".*@example[.]com"}))
    (plain,) = _scores(_run(), doc, None)
    (masked,) = _scores(_run(), doc, PRIVACY)  # `to` is masked by the email pattern, not a key: not refusable
    assert isinstance(plain, Score)
    assert plain.value == 1.0
    assert isinstance(masked, ScoreFailure)
    assert masked.error_type == "masked_value"
    assert "argument 'to' is masked" in masked.message


def test_names_only_scorers_that_need_values_say_so() -> None:
    run = mask_run(_run(), NAMES_ONLY)
    (trajectory,) = _scores(_run(), _doc(), NAMES_ONLY)
    assert isinstance(trajectory, Score)
    assert trajectory.explanation.startswith("arguments compared by keys only")
    tools = (ToolSpec(name="charge", parameters={"type": "object", "properties": {"amount": {"type": "integer"}}}),)
    valid = ArgsValid().score(run.model_copy(update={"available_tools": tools}))
    assert isinstance(valid, ScoreFailure)
    assert valid.error_type == "values_not_kept"
    judge = LLMJudge(model="openai/none", api_base="http://127.0.0.1:9/v1", api_key="x").score(run)
    assert isinstance(judge, ScoreFailure)
    assert judge.error_type == "values_not_kept"
    twice = mask_run(_run().model_copy(update={"calls": _run().calls * 2}), NAMES_ONLY)
    efficiency = Efficiency(max_repeats=0).score(twice)
    assert isinstance(efficiency, Score)
    assert efficiency.value == 1.0  # two calls that may differ: not counted as repeats
    assert efficiency.explanation.startswith("repeats not checked")


def test_args_valid_does_not_count_a_schema_error_at_a_masked_value() -> None:
    schema = {
        "type": "object",
        "properties": {"auth": {"type": "object", "properties": {"token": {"type": "integer"}}}},
    }
    run = _run({"auth": {"token": 5}}, available_tools=(ToolSpec(name="charge", parameters=schema),))
    masked = mask_run(run, PRIVACY)
    assert ArgsValid().score(run).value == 1.0  # type: ignore[union-attr]
    assert ArgsValid().score(masked).value == 1.0  # type: ignore[union-attr]
    wrong = mask_run(_run({"auth": {"token": 5}, "amount": "x"}, available_tools=run.available_tools), PRIVACY)
    schema["properties"]["amount"] = {"type": "integer"}  # type: ignore[index]
    assert ArgsValid().score(wrong.model_copy(update={"available_tools": run.available_tools})).value == 0.0  # type: ignore[union-attr]


def test_the_judge_is_told_which_values_were_masked_and_never_sees_them() -> None:
    run = mask_run(_run(input="Mail ada.lovelace@example.com"), PRIVACY)
    (_, user) = build_messages(run, ())
    assert "ada.lovelace" not in user["content"]
    assert "sk-live" not in user["content"]
    assert "Masked values:" in user["content"]
    assert (
        "the user request; call 1 argument to; call 1 argument auth.token; call 1 argument card.number"
        in (user["content"])
    )
    (_, plain) = build_messages(_run(), ())
    assert "Masked values" not in plain["content"]


def test_runs_masks_what_a_store_written_without_masking_holds(tmp_path: Path) -> None:
    from toolscore.collector.registry import Expectation

    exp = Expectation.model_validate(_doc())
    store = ScoreStore(ScoreStoreConfig(path=str(tmp_path / "scores.db"), write_interval_ms=10))
    run = _run().model_copy(update={"trace_id": "1" * 32, "span_id": "2" * 16})
    store.record(run, exp, Score(name="trajectory", value=1.0, label="pass", explanation=f"got {json.dumps(ARGS)}"))
    assert store.close()
    runner = CliRunner()
    plain = runner.invoke(main, ["runs", "--db", str(tmp_path / "scores.db"), "-o", "json"]).output
    masked = runner.invoke(
        main, ["runs", "--db", str(tmp_path / "scores.db"), "-o", "json", "--mask-key", "*.token", "--default-patterns"]
    ).output
    assert "sk-live" in plain
    for secret in ("sk-live", "ada.lovelace", "4111"):
        assert secret not in masked
    assert "Augusta" in masked  # what no rule masks is shown


def test_the_registry_api_refuses_such_a_rule_over_grpc() -> None:
    from tests.registry_builders import serve
    from toolscore.collector.registry.api import RegistryClient

    doc = parse_expectation(_doc(("auth.token", {"type": "regex", "pattern": "sk-.*"})))
    with Registry(MemoryStore(), privacy=PRIVACY) as registry:
        for server in serve(registry):
            with RegistryClient(server.target) as client, pytest.raises(InvalidExpectation, match=r"by '\*\.token'"):
                client.put(doc)
        assert registry.list() == []


def test_expectations_apply_refuses_such_a_rule_with_the_privacy_options(tmp_path: Path) -> None:
    path = tmp_path / "pay.yaml"
    path.write_text(yaml.safe_dump(_doc(("auth.token", {"type": "regex", "pattern": "sk-.*"}))))
    db = str(tmp_path / "registry.db")
    refused = CliRunner().invoke(main, ["expectations", "apply", str(path), "--db", db, "--mask-key", "*.token"])
    assert refused.exit_code != 0
    assert "masks 'auth.token' (by '*.token')" in refused.output
    assert CliRunner().invoke(main, ["expectations", "apply", str(path), "--db", db]).exit_code == 0


@pytest.mark.integration
def test_serve_refuses_to_start_on_registry_files_with_such_a_rule_naming_file_line_and_mask(tmp_path: Path) -> None:
    from tests.serve_harness import serve_config
    from toolscore.collector.serve import ServeConfig, ServiceStartError, start_service

    path = tmp_path / "pay.yaml"
    path.write_text(yaml.safe_dump(_doc(("auth.token", {"type": "regex", "pattern": "sk-.*"})), sort_keys=False))
    privacy = {"extract": {"privacy": {"mask_keys": ["*.token"], "hash_key": "k"}}}
    config = serve_config(tmp_path, [path], None, telemetry={"enabled": False}, pipeline=privacy)
    with pytest.raises(ServiceStartError) as caught:
        start_service(ServeConfig.model_validate(yaml.safe_load(config.read_text())))
    line = path.read_text().splitlines().index("      auth.token:") + 1
    assert f"{path}:{line}: " in str(caught.value)
    assert "masks 'auth.token' (by '*.token')" in str(caught.value)
