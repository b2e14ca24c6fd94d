"""The run model: spellings accepted on input, and scores built without validation equal validated ones."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from toolscore.scorers import Score, ToolCall


def test_trusted_score_equals_the_validated_one() -> None:
    details = {"exact_matches": 1, "totals": {"reference": 2}}
    trusted = Score.trusted("trajectory", 0.75, "fail", "1 exact of 2", details)
    validated = Score(name="trajectory", value=0.75, label="fail", explanation="1 exact of 2", details=details)
    assert trusted == validated
    assert trusted.model_dump() == validated.model_dump()
    assert json.loads(trusted.model_dump_json()) == json.loads(validated.model_dump_json())
    assert trusted.model_fields_set == validated.model_fields_set
    assert trusted.details is details  # no copy: the scorer built it for this score alone
    with pytest.raises(ValidationError):
        trusted.value = 1.0  # type: ignore[misc]  # frozen like any Score


def test_trusted_scores_copy_with_updates_like_validated_ones() -> None:
    trusted = Score.trusted("trajectory", 0.75, "fail", "1 exact of 2", {})

    copy = trusted.model_copy(update={"value": 1.0, "label": "pass"})

    assert (copy.value, copy.label, trusted.value) == (1.0, "pass", 0.75)
    assert copy.model_fields_set == trusted.model_fields_set
    assert trusted.model_fields_set is not Score.trusted("t", 0.0, "fail", "", {}).model_fields_set


@pytest.mark.parametrize(
    ("data", "name", "args", "state", "call_id"),
    [
        ({"toolName": "a", "input": {"x": 1}, "toolCallId": "c1"}, "a", {"x": 1}, "value", "c1"),
        ({"tool": "a", "args": '{"x": 1}'}, "a", {"x": 1}, "value", None),
        ({"name": "a", "arguments": "not json", "id": "c2"}, "a", "not json", "raw", "c2"),
        ({"name": "a", "args": None}, "a", None, "value", None),
        ({"name": "a"}, "a", None, "absent", None),
        ({"name": "a", "args": {}}, "a", {}, "value", None),
    ],
)
def test_calls_accept_the_ecosystems_spellings(
    data: dict[str, object], name: str, args: object, state: str, call_id: str | None
) -> None:
    call = ToolCall.model_validate(data)
    assert (call.name, call.args, call.args_state, call.call_id) == (name, args, state, call_id)


def test_absent_null_and_empty_args_stay_apart() -> None:
    absent, null, empty = (
        ToolCall.model_validate(d) for d in ({"name": "a"}, {"name": "a", "args": None}, {"name": "a", "args": {}})
    )
    assert [c.has_args for c in (absent, null, empty)] == [False, True, True]
    assert "args" not in absent.to_json()
    assert null.to_json()["args"] is None
    assert empty.to_json()["args"] == {}
