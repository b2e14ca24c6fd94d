"""`args_valid`: each call's arguments against its tool's JSON Schema, from the run's catalog or the scorer."""

from __future__ import annotations

import time
from typing import Any

import pytest
from jsonschema import validators
from pydantic import ValidationError

from toolscore.scorers import AgentRun, Score, ScoreFailure, ToolCall, ToolSpec, parse_scorer
from toolscore.scorers._json_schema import MAX_SCHEMA_CHARS, compiled_schema
from toolscore.scorers._json_schema_fast import compile_fast

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "units": {"type": "string", "enum": ["metric", "imperial"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
    },
    "required": ["city"],
    "additionalProperties": False,
}
CATALOG = (ToolSpec(name="get_weather", parameters=WEATHER), ToolSpec(name="now", parameters=None))


def call(name: str, args: Any = None, state: str = "value") -> ToolCall:
    return ToolCall(name=name, args=args, args_state=state)  # type: ignore[arg-type]


def score(*calls: ToolCall, catalog: tuple[ToolSpec, ...] = CATALOG, **spec: Any) -> Score | ScoreFailure:
    return parse_scorer({"type": "args_valid", **spec}).score(AgentRun(calls=calls, available_tools=catalog))


def failure(result: Score | ScoreFailure, kind: str) -> ScoreFailure:
    assert isinstance(result, ScoreFailure), result
    assert result.error_type == kind, result
    return result


def violations(result: Score | ScoreFailure) -> list[tuple[int, str, str | None]]:
    assert isinstance(result, Score), result
    return [(v["index"], v["rule"], v.get("pointer")) for v in result.details["violations"]]


def test_valid_arguments_from_the_catalog_score_one() -> None:
    result = score(call("get_weather", {"city": "Rome", "days": 3}), call("get_weather", {"city": "Oslo", "days": 2.0}))
    assert isinstance(result, Score)
    assert (result.value, result.details["checked"]) == (1.0, 2)


def test_each_broken_keyword_is_named_at_its_json_pointer() -> None:
    result = score(call("get_weather", {"units": "kelvin", "days": "3", "extra": 1}))
    assert sorted(violations(result)) == [
        (0, "additionalProperties", "/extra"),
        (0, "enum", "/units"),
        (0, "required", "/city"),
        (0, "type", "/days"),
    ]
    assert isinstance(result, Score)
    assert result.value == 0.0


def test_an_unknown_tool_and_arguments_that_are_not_json_are_invalid() -> None:
    result = score(
        call("launch_rocket", {}), call("get_weather", "{city: Rome", "raw"), call("get_weather", {"city": "x"})
    )
    assert violations(result) == [(0, "unknown_tool", None), (1, "not_json", None)]
    assert isinstance(result, Score)
    assert result.value == pytest.approx(1 / 3)


def test_no_arguments_and_null_are_validated_as_an_empty_object() -> None:
    result = score(call("get_weather", state="absent"), call("get_weather", None))
    assert violations(result) == [(0, "required", "/city"), (1, "required", "/city")]


def test_calls_that_cannot_be_checked_are_left_out_and_listed() -> None:
    result = score(call("now", {}), call("get_weather", state="not_captured"), call("get_weather", {"city": "x"}))
    assert isinstance(result, Score)
    assert result.value == 1.0
    assert [(u["index"], u["reason"]) for u in result.details["unchecked"]] == [(0, "no_schema"), (1, "not_captured")]
    failure(score(call("now", {})), "not_checked")


def test_no_catalog_and_no_schemas_is_a_failure_never_a_silent_one() -> None:
    result = score(call("get_weather", {"city": "x"}), catalog=())
    assert isinstance(result, ScoreFailure)
    assert result.error_type == "no_schema"
    empty = score(catalog=())
    assert isinstance(empty, ScoreFailure)


def test_the_scorers_schemas_win_over_the_catalog_and_name_the_known_tools() -> None:
    loose = {"type": "object"}
    result = score(
        call("get_weather", {"anything": 1}), call("book", {"id": 1}), catalog=(), schemas={"get_weather": loose}
    )
    assert violations(result) == [(1, "unknown_tool", None)]
    assert violations(score(call("get_weather", {"x": 1}), schemas={"get_weather": loose})) == []


def test_a_bad_schema_in_the_scorer_is_refused_when_it_is_built() -> None:
    with pytest.raises(ValidationError, match="get_weather: not a valid JSON Schema"):
        parse_scorer({"type": "args_valid", "schemas": {"get_weather": {"type": "text"}}})


def test_a_bad_schema_in_the_catalog_is_a_failure_naming_the_tool() -> None:
    catalog = (ToolSpec(name="broken", parameters={"type": 12}),)
    assert "'broken'" in failure(score(call("broken", {}), catalog=catalog), "invalid_schema").message


def test_refs_resolve_within_the_schema_and_nothing_is_fetched() -> None:
    pydantic_style = {
        "$defs": {"Point": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]}},
        "type": "object",
        "properties": {"at": {"$ref": "#/$defs/Point"}},
        "required": ["at"],
    }
    catalog = (ToolSpec(name="go", parameters=pydantic_style),)
    assert violations(score(call("go", {"at": {"lat": 1.5}}), catalog=catalog)) == []
    assert violations(score(call("go", {"at": {}}), catalog=catalog)) == [(0, "required", "/at/lat")]
    remote = (ToolSpec(name="go", parameters={"$ref": "http://127.0.0.1:9/schema.json"}),)
    started = time.monotonic()
    failure(score(call("go", {}), catalog=remote), "invalid_schema")
    assert time.monotonic() - started < 5


def test_draft_07_and_draft_04_schemas_are_read_by_their_own_rules() -> None:
    zod = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"n": {"type": "integer"}},
    }
    old = {**zod, "$schema": "http://json-schema.org/draft-04/schema#"}
    assert violations(score(call("t", {"n": 2.0}), catalog=(ToolSpec(name="t", parameters=zod),))) == []
    assert violations(score(call("t", {"n": 2.0}), catalog=(ToolSpec(name="t", parameters=old),))) == [
        (0, "type", "/n")
    ]


def test_a_schema_over_the_size_bound_is_refused() -> None:
    huge = {"type": "object", "description": "x" * MAX_SCHEMA_CHARS}
    failure(score(call("t", {}), catalog=(ToolSpec(name="t", parameters=huge),)), "schema_too_large")


def test_an_exploding_schema_is_left_unchecked_in_bounded_time() -> None:
    """`anyOf` of recursive `$ref`s over a deep value: exponential for a plain validator, bounded here."""
    schema = {
        "$defs": {
            "n": {
                "anyOf": [
                    {"type": "array", "items": {"$ref": "#/$defs/n"}},
                    {"type": "array", "items": {"$ref": "#/$defs/n"}, "minItems": 0},
                ]
            }
        },
        "$ref": "#/$defs/n",
        "not": {"type": "null"},
    }
    deep: Any = 1
    for _ in range(40):
        deep = [deep, deep]
    started = time.monotonic()
    result = score(call("t", deep), catalog=(ToolSpec(name="t", parameters=schema),))
    assert time.monotonic() - started < 10
    assert "too_complex" in failure(result, "not_checked").message


def test_a_backtracking_pattern_is_cut_off() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a|aa)+$"}}}
    started = time.monotonic()
    result = score(call("t", {"s": "a" * 60 + "b"}), catalog=(ToolSpec(name="t", parameters=schema),))
    assert time.monotonic() - started < 5
    assert "too_complex" in failure(result, "not_checked").message


def test_a_pattern_is_checked_when_it_answers_in_time() -> None:
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}}}
    catalog = (ToolSpec(name="t", parameters=schema),)
    assert violations(score(call("t", {"code": "LIS"}), call("t", {"code": "lis"}), catalog=catalog)) == [
        (1, "pattern", "/code")
    ]


_SCHEMAS: list[Any] = [
    WEATHER,
    True,
    False,
    {},
    {"type": ["string", "null"]},
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
    {"type": "string", "minLength": 2, "maxLength": 3},
    {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2},
    {"enum": [1, "a", None, True, [1], {"k": 1}]},
    {"const": 1},
    {"properties": {"a": {"type": "boolean"}}, "required": ["a"]},
    {"type": "object", "additionalProperties": {"type": "string"}},
    {"type": "object", "properties": {"o": {"type": "object", "properties": {"x": {"const": False}}}}},
    {
        "properties": {
            "e": {"enum": ["a", "b"]},
            "n": {"type": "number"},
            "m": {"enum": ["a", 1]},
            "t": {"type": "null"},
        }
    },
    {"properties": {"s": {"type": "string", "enum": ["a"]}, "i": {"type": "integer", "minimum": 0, "maximum": 2}}},
]
_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    1.0,
    2.5,
    -1,
    10,
    "",
    "a",
    "ab",
    "abcd",
    "metric",
    [],
    [1],
    [1, 2],
    [1, 2, 3],
    [1.0],
    ["a"],
    {},
    {"a": True},
    {"a": 1},
    {"city": "x"},
    {"city": "x", "days": 15},
    {"city": "x", "days": 0},
    {"city": 1},
    {"city": "x", "units": "metric", "days": 3.0},
    {"city": "x", "z": 1},
    {"o": {"x": 0}},
    {"o": {"x": False}},
    {"k": 1},
    {"x": "s", "y": 2},
    {"e": "a"},
    {"e": "c"},
    {"e": 1},
    {"n": True},
    {"n": 1.5},
    {"m": 1},
    {"m": True},
    {"m": "a"},
    {"t": None},
    {"t": 0},
    {"s": "a"},
    {"s": "b"},
    {"i": 2.0},
    {"i": 3},
    {"i": True},
    {"i": 1.5},
]


@pytest.mark.parametrize(
    "draft", [validators.Draft202012Validator, validators.Draft7Validator, validators.Draft4Validator]
)
def test_the_fast_check_agrees_with_jsonschema(draft: type[Any]) -> None:
    for schema in _SCHEMAS:
        if isinstance(schema, bool) and draft is validators.Draft4Validator:
            continue
        fast = compile_fast(schema, draft6_or_later=draft is not validators.Draft4Validator)
        if fast is None:  # draft 4: boolean exclusiveMinimum, no const: left to jsonschema
            assert draft is validators.Draft4Validator
            assert "exclusiveMinimum" in str(schema) or "const" in str(schema)
            continue
        reference = draft(schema)
        disagree = [v for v in _VALUES if fast(v) != reference.is_valid(v)]
        assert disagree == [], (schema, disagree)


def test_keywords_the_fast_check_does_not_know_fall_back_to_jsonschema() -> None:
    for schema in (
        {"anyOf": [{"type": "string"}]},
        {"type": "string", "pattern": "x"},
        {"items": [{"type": "string"}]},
    ):
        assert compile_fast(schema, draft6_or_later=True) is None
    assert compiled_schema({"anyOf": [{"type": "string"}]}).is_valid("x")


def test_a_schema_is_compiled_once_and_shared() -> None:
    first = compiled_schema({"type": "object", "properties": {"q": {"type": "string"}}})
    again = compiled_schema({"properties": {"q": {"type": "string"}}, "type": "object"})
    assert first is compiled_schema({"type": "object", "properties": {"q": {"type": "string"}}})
    assert again is not None


def test_openapi_nullable_lets_null_through_as_frameworks_mean_it() -> None:
    """smolagents' tool schemas mark optional parameters `nullable: true` (OpenAPI 3.0), which JSON Schema ignores."""
    schema = {
        "type": "object",
        "properties": {
            "cabin": {"type": "string", "nullable": True, "enum": ["economy", "business"]},
            "max_price": {"type": "number", "nullable": True},
            "city": {"type": "string"},
        },
    }
    catalog = (ToolSpec(name="t", parameters=schema),)
    calls = (call("t", {"cabin": None, "max_price": None}), call("t", {"cabin": "first"}), call("t", {"city": None}))
    assert violations(score(*calls, catalog=catalog)) == [(1, "enum", "/cabin"), (2, "type", "/city")]


def test_schemas_and_arguments_nested_past_the_interpreters_depth_fail_cleanly() -> None:
    deep: Any = {"type": "object"}
    for _ in range(3000):
        deep = {"type": "object", "properties": {"a": deep}}
    failure(score(call("t", {}), catalog=(ToolSpec(name="t", parameters=deep),)), "schema_too_large")
    recursive = {"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}
    nested: Any = []
    for _ in range(5000):
        nested = [nested]
    result = score(call("t", nested), call("t", [[]]), catalog=(ToolSpec(name="t", parameters=recursive),))
    assert isinstance(result, Score)
    assert [(u["index"], u["reason"]) for u in result.details["unchecked"]] == [(0, "too_complex")]
