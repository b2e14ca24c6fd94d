"""Validation errors in the author's words: what was expected, what was written, never a secret repeated."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tests.registry_builders import doc
from toolscore.collector.error_text import error_message
from toolscore.collector.registry import InvalidExpectation, parse_expectation
from toolscore.collector.serve import ServeConfig


def _message(document: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        ServeConfig.model_validate(document)
    (error,) = caught.value.errors()
    return error_message(error, ServeConfig)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"receiver": {"grpc_enabled": "maybe"}}, "expected true or false, got 'maybe'"),
        ({"pipeline": {"queue_size": 1.5}}, "expected a whole number, got the number 1.5"),
        ({"pipeline": {"judge": None}}, "expected a mapping of keys to values, got null"),
        ({"registry": {"files": "expectations/"}}, "expected a list, got 'expectations/'"),
        ({"pipeline": {"settle_ms": -1}}, "must be >= 0, got -1"),
        ({"forward": {"compression": "gzipp"}}, "got 'gzipp'; did you mean `gzip`?"),
        ({"registry": {"store": {"type": "postgress"}}}, "unknown type 'postgress'; did you mean `postgres`?"),
        ({"registry": {"store": {"path": "x.db"}}}, "required key `type` missing; one of: sqlite, postgres, memory"),
    ],
)
def test_message_says_what_was_expected_and_what_was_written(document: dict[str, Any], message: str) -> None:
    assert _message(document).endswith(message)


@pytest.mark.parametrize(
    "document",
    [
        {"receiver": {"bearer_token": 8675309}},
        {"forward": {"headers": {"x-api-key": 8675309}}},
        {"registry": {"store": {"type": "postgres", "dsn": 8675309}}},
    ],
)
def test_a_value_under_a_secret_key_is_named_by_kind_only(document: dict[str, Any]) -> None:
    """Messages go to logs and terminals: a token typed as a bare number must not be echoed there."""
    message = _message(document)
    assert message == "expected a string, got a number"
    assert "8675309" not in message


def test_a_long_wrong_value_is_cut_short() -> None:
    with pytest.raises(InvalidExpectation) as caught:
        parse_expectation({**doc("x"), "enabled": "y" * 500})
    (problem,) = caught.value.problems
    assert problem.field == "enabled"
    assert problem.message == "expected true or false, got '" + "y" * 39 + "…'"
