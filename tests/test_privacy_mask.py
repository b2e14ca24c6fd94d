"""The masking step: keys, dot paths, globs and patterns masked to a keyed hash; names_only drops values."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from toolscore.collector.extract.privacy import Masker, PrivacyConfig
from toolscore.collector.extract.privacy_cards import luhn_valid
from toolscore.scorers._masked import is_masked

ARGS = {
    "to": "ada@example.com",
    "auth": {"token": "sk-live-abc123"},
    "card": {"number": "4111 1111 1111 1111", "holder": "Ada"},
    "order_id": "1234567812345678",
    "password": "hunter2",
}


def _masker(**kwargs: object) -> Masker:
    return Masker(PrivacyConfig(hash_key="test-key", **kwargs))  # type: ignore[arg-type]


def test_keys_dot_paths_and_globs_mask_their_values_and_keep_the_rest() -> None:
    masked = _masker(mask_keys=("password", "*.token", "card.number")).arguments(ARGS)
    assert is_masked(masked["password"])
    assert is_masked(masked["auth"]["token"])
    assert is_masked(masked["card"]["number"])
    assert masked["card"]["holder"] == "Ada"
    assert masked["to"] == "ada@example.com"


def test_default_patterns_mask_emails_and_luhn_valid_cards_but_not_other_digit_runs() -> None:
    masked = _masker(default_patterns=True).arguments(ARGS)
    assert is_masked(masked["to"])
    assert is_masked(masked["card"]["number"])
    assert masked["order_id"] == "1234567812345678"  # 16 digits, fails Luhn
    assert luhn_valid("4111-1111-1111-1111")
    assert not luhn_valid("1234567812345678")


@pytest.mark.parametrize(
    "text",
    [
        "card 4111 1111 1111 1111 12/25 cvv 123",  # the expiry's digits chain on to the card's
        "pay 2 4111-1111-1111-1111",
        "amex 3782 822463 10005 ok",
    ],
)
def test_a_card_number_written_beside_other_digits_is_masked(text: str) -> None:
    assert is_masked(_masker(default_patterns=True).text(text) or "")


def test_digit_groups_that_hold_no_card_number_are_kept() -> None:
    masker = _masker(default_patterns=True)
    for text in ("1234 5678 1234 5678", "call 555 123 4567 ref 12 34", "1 " * 4096):
        assert masker.text(text) == text


def test_equal_values_give_equal_markers_and_the_value_is_not_in_the_marker() -> None:
    masker = _masker(mask_keys=("token",))
    first = masker.arguments({"token": "sk-live-abc123"})["token"]
    again = masker.arguments({"x": {"token": "sk-live-abc123"}})["x"]["token"]
    other = masker.arguments({"token": "sk-live-xyz"})["token"]
    assert first == again != other
    assert "abc123" not in first
    assert _masker(mask_keys=("token",)).marker("v") != Masker(PrivacyConfig(hash_key="k2")).marker("v")


def test_user_patterns_mask_free_text_whole() -> None:
    masker = _masker(mask_patterns=(r"acct-\d+",))
    assert is_masked(masker.text("refund acct-991 today") or "")
    assert masker.text("no account here") == "no account here"


def test_names_only_keeps_keys_and_drops_every_value_and_text() -> None:
    masker = _masker(content="names_only")
    assert masker.arguments(ARGS) == {
        "to": None,
        "auth": {"token": None},
        "card": {"number": None, "holder": None},
        "order_id": None,
        "password": None,
    }
    assert masker.text("Book a flight for ada@example.com") is None


def test_a_pattern_re2_refuses_is_refused_naming_it() -> None:
    with pytest.raises(ValidationError, match=r"\(\?=x\)"):
        PrivacyConfig(mask_patterns=("(?=x)",))


@pytest.mark.parametrize(
    ("rule", "why"),
    [("", "never blank"), ("card..number", "doubled dot"), (".token", "leading"), ("card[number", "no `]` closes")],
)
def test_a_key_rule_that_could_never_mask_what_it_says_is_refused_naming_it(rule: str, why: str) -> None:
    with pytest.raises(ValidationError, match=rf"mask_keys\n.*{re.escape(repr(rule))} is refused: .*{re.escape(why)}"):
        PrivacyConfig(mask_keys=("password", rule))
    PrivacyConfig(mask_keys=("[[]x]", "card[!_]number", "*secret*"))  # sets that close are globs


def test_the_offline_commands_name_the_privacy_key_a_bad_value_is_under(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from toolscore.collector.cli import main

    traces = tmp_path / "none.json"
    traces.write_text('{"resourceSpans": []}')
    for option, value, key in (("--mask-key", "a..b", "mask_keys"), ("--mask-pattern", "(?=x)", "mask_patterns")):
        result = CliRunner().invoke(main, ["extract", str(traces), option, value])
        assert result.exit_code == 2
        assert f"Error: privacy.{key}: {value!r} is refused: " in result.output


def test_the_default_changes_nothing() -> None:
    masker = Masker(PrivacyConfig())
    assert masker.arguments(ARGS) == ARGS
    assert masker.text("ada@example.com") == "ada@example.com"


def test_no_hash_key_warns_and_uses_a_per_process_key(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLSCORE_PRIVACY_HASH_KEY", raising=False)
    with caplog.at_level(logging.WARNING):
        masker = Masker(PrivacyConfig(mask_keys=("a",)))
    assert "random key" in caplog.text
    assert is_masked(masker.arguments({"a": 1})["a"])
    monkeypatch.setenv("TOOLSCORE_PRIVACY_HASH_KEY", "test-key")
    assert Masker(PrivacyConfig(mask_keys=("a",))).marker(1) == _masker(mask_keys=("a",)).marker(1)


def test_without_a_key_every_masker_of_the_process_gives_the_same_markers(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolscore.collector.extract.privacy import masker_for

    monkeypatch.delenv("TOOLSCORE_PRIVACY_HASH_KEY", raising=False)
    config = PrivacyConfig(mask_keys=("a",))
    first = masker_for(config).marker("v")
    for i in range(20):  # more settings than masker_for caches: the first one's masker is built again
        masker_for(PrivacyConfig(mask_keys=(f"k{i}",)))
    assert masker_for(config).marker("v") == first == Masker(PrivacyConfig(mask_keys=("b",))).marker("v")


def _recorded_run_spans() -> list[object]:
    from .test_extract_support import Traces, genai_run, genai_tool

    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=10)
    t.span("execute_tool send", genai_tool("send", "c1", ARGS), parent=run, start=1, end=2)
    return list(t.records())


SECRETS = ("ada@example.com", "sk-live-abc123", "4111 1111 1111 1111")


def test_rebuilt_runs_hold_no_masked_value_and_the_same_calls() -> None:
    from toolscore.collector.extract import ExtractConfig, rebuild_runs

    privacy = PrivacyConfig(mask_keys=("*.token",), default_patterns=True, hash_key="k")
    (plain,) = rebuild_runs(_recorded_run_spans())  # type: ignore[arg-type]
    (masked,) = rebuild_runs(_recorded_run_spans(), ExtractConfig(privacy=privacy))  # type: ignore[arg-type]
    text = masked.model_dump_json()
    assert all(secret in plain.model_dump_json() for secret in SECRETS)
    assert not any(secret in text for secret in SECRETS)
    assert [c.name for c in masked.calls] == [c.name for c in plain.calls] == ["send"]
    assert masked.calls[0].args["card"]["holder"] == "Ada"  # type: ignore[index,call-overload]


def test_names_only_rebuilt_runs_hold_no_argument_value() -> None:
    from toolscore.collector.extract import ExtractConfig, rebuild_runs

    config = ExtractConfig(privacy=PrivacyConfig(content="names_only", hash_key="k"))
    (run,) = rebuild_runs(_recorded_run_spans(), config)  # type: ignore[arg-type]
    text = run.model_dump_json()
    assert not any(value in text for value in (*SECRETS, "hunter2", "Ada", "1234567812345678"))
    assert run.calls[0].args == {
        "to": None,
        "auth": {"token": None},
        "card": {"number": None, "holder": None},
        "order_id": None,
        "password": None,
    }


RUN_ATTRIBUTES = {
    "gen_ai.agent.name": "payer",
    "input.value": '{"auth": {"token": "sk-live-abc123"}, "note": "hi"}',  # OpenInference: JSON of the request
    "ai.response.text": "Paid. Receipt sent.",  # the AI SDK's run span: the response
    "ai.response.toolCalls": '[{"toolName": "charge", "args": {"to": "ada@example.com"}}]',
    "enduser.id": "ada@example.com",
    "tags": ("billing", "ada@example.com"),
    "gen_ai.usage.input_tokens": 42,
}


def _run_with_attributes() -> object:
    from toolscore.scorers import AgentRun

    return AgentRun(attributes=RUN_ATTRIBUTES, resource={"service.name": "pay", "owner": "ada@example.com"})


def test_a_runs_attributes_are_masked_as_serve_forwards_them() -> None:
    from toolscore.collector.extract.privacy import mask_run

    privacy = PrivacyConfig(mask_keys=("*.token",), default_patterns=True, hash_key="k")
    run = mask_run(_run_with_attributes(), privacy)  # type: ignore[arg-type]
    text = run.model_dump_json()
    assert not any(secret in text for secret in ("sk-live-abc123", "ada@example.com")), text
    assert json.loads(run.attributes["input.value"])["note"] == "hi"  # masked inside, at the key the rule names
    assert run.attributes["tags"][0] == "billing"
    assert run.resource["service.name"] == "pay"
    assert run.attributes["gen_ai.usage.input_tokens"] == 42


def test_names_only_keeps_no_content_attribute_of_a_run_and_masks_what_it_keeps() -> None:
    from toolscore.collector.extract.privacy import mask_run

    privacy = PrivacyConfig(content="names_only", default_patterns=True, hash_key="k")
    run = mask_run(_run_with_attributes(), privacy)  # type: ignore[arg-type]
    text = run.model_dump_json()
    for value in ("sk-live-abc123", "ada@example.com", "Receipt sent", '"hi"'):
        assert value not in text, (value, text)
    assert "ai.response.text" not in run.attributes
    assert json.loads(run.attributes["ai.response.toolCalls"]) == [{"toolName": None, "args": {"to": None}}]
    assert run.attributes["gen_ai.agent.name"] == "payer"


def test_masking_what_is_masked_changes_nothing() -> None:
    """Markers stay markers: an expectation made from a masked run (its expected values are the run's markers)
    is masked as runs are and still compares equal, and a run masked twice is the run masked once."""
    masker = _masker(mask_keys=("*.token", "card"), default_patterns=True)
    once = masker.arguments(ARGS)
    assert masker.arguments(once) == once
    assert masker.text(masker.text("mail ada@example.com")) == masker.text("mail ada@example.com")
