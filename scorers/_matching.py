"""Argument matching: when does an actual call's arguments satisfy an expected call's?

Peer-compatible scorers compare arguments the way their peer does; this module is the opt-in
alternative, shared by the `trajectory` and `f1` scorers, for arguments that are volatile (ids,
timestamps), approximate (floats) or only partly specified. Rules are data (`ArgsMatch`) so they
can be written in a spec file, and resolve per call, then per tool, then from a scorer default.

Equality is JSON equality (`json_equal`): what a JSON reader would call the same document, not
what Python's `==` says (`True == 1` in Python, not in JSON).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from toolscore.scorers._json_equality import ArgsTest, equality_test, json_equal
from toolscore.scorers._key_paths import MISSING, drop_path, lookup_path
from toolscore.scorers._masked import MaskedValueError, is_masked
from toolscore.scorers._model import JsonValue, ToolCall
from toolscore.scorers._regex import Pattern, RegexError, compile_pattern

__all__ = [
    "RAW_VALUE_RULES",
    "AnyMatcher",
    "ArgMatcher",
    "ArgsMatch",
    "ArgsMode",
    "ArgsTest",
    "ExpectedCall",
    "NumberMatcher",
    "OneOfMatcher",
    "RegexMatcher",
    "TypeMatcher",
    "equality_test",
    "json_equal",
    "resolve_args_match",
]


_NUMBER = (int, float)


class AnyMatcher(BaseModel):
    """Any value, `null` included; the key must still be present."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    type: Literal["any"] = "any"

    def test(self, value: JsonValue) -> bool:
        return True


class RegexMatcher(BaseModel):
    """A string that the pattern matches in full (`re.fullmatch`); non-strings never match.

    The pattern runs on RE2 (`toolscore.scorers._regex`), linear in the argument's length: arguments are
    whatever the agent sent, and a backtracking pattern on them could stall scoring."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    type: Literal["regex"] = "regex"
    pattern: str = Field(
        description="An RE2 regular expression (Python syntax without backreferences or lookaround), matched "
        "against the whole string."
    )
    _compiled: Pattern = PrivateAttr()

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            compile_pattern(value)
        except RegexError as exc:
            raise ValueError(f"invalid regular expression {value!r}: {exc}") from None
        return value

    def model_post_init(self, context: Any) -> None:
        self._compiled = compile_pattern(self.pattern)

    def test(self, value: JsonValue) -> bool:
        return type(value) is str and self._compiled.fullmatch(value)


class NumberMatcher(BaseModel):
    """A number within `tolerance` of `value` (absolute); booleans are not numbers, NaN never matches."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    type: Literal["number"] = "number"
    value: float = Field(description="The expected number.")
    tolerance: float = Field(default=0.0, ge=0, description="Largest absolute difference accepted. Default: 0.")

    def test(self, value: JsonValue) -> bool:
        return type(value) in _NUMBER and abs(value - self.value) <= self.tolerance


class OneOfMatcher(BaseModel):
    """Any one of the listed values, compared with `json_equal`."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    type: Literal["one_of"] = "one_of"
    values: list[JsonValue] = Field(description="The accepted values.")

    def test(self, value: JsonValue) -> bool:
        return any(json_equal(value, accepted) for accepted in self.values)


def _is_integer(value: JsonValue) -> bool:
    return type(value) is int or (type(value) is float and value.is_integer())


_TYPE_TESTS: dict[str, Callable[[JsonValue], bool]] = {
    "string": lambda v: type(v) is str,
    "number": lambda v: type(v) in _NUMBER and not (type(v) is float and math.isnan(v)),
    "integer": _is_integer,
    "boolean": lambda v: type(v) is bool,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) in (list, tuple),
    "null": lambda v: v is None,
}


class TypeMatcher(BaseModel):
    """A value of a JSON Schema type; `integer` accepts `3.0` (JSON has one number type)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    type: Literal["type"] = "type"
    of: Literal["string", "number", "integer", "boolean", "object", "array", "null"] = Field(
        description="The JSON type the value must have."
    )

    def test(self, value: JsonValue) -> bool:
        return _TYPE_TESTS[self.of](value)


ArgMatcher = Annotated[
    AnyMatcher | RegexMatcher | NumberMatcher | OneOfMatcher | TypeMatcher, Field(discriminator="type")
]
"""A rule for one top-level argument, chosen by `type`."""

RAW_VALUE_RULES = frozenset(("regex", "number", "type"))
"""Matcher types that read the value itself, which a masked value (a marker) no longer is: refused on a masked
key when an expectation is written, and a `masked_value` failure when they meet a value a pattern masked."""

_NO_ARGS: dict[str, Any] = {}
_UNSTATED = ("absent", "not_captured")


def _always(actual: ToolCall) -> bool:
    return True


ArgsMode = Literal["exact", "subset", "expected_subset", "actual_subset", "ignore"]
"""`expected_subset`: the expected args are contained in the actual ones (the actual call may pass more).
`actual_subset`: the actual args are contained in the expected ones (the call may pass fewer, none other).
`subset` is the older name of `expected_subset`."""

_EXPECTED_IN_ACTUAL = ("subset", "expected_subset")


class ArgsMatch(BaseModel):
    """How an actual call's arguments are compared with an expected call's.

    Modes, named by which side must be contained in the other:
    - `exact`: the same key set, every value `json_equal` (or accepted by that key's matcher).
    - `expected_subset` (also spelled `subset`): every key of the expected args and every matcher key must be
      present in the actual call and match; the actual call may pass more keys. agentevals calls this
      direction `superset` (`tool_args_match_mode`), naming the actual side, except in trajectory mode
      `subset`, which compares with the sides swapped and calls it `subset`.
    - `actual_subset`: every key the actual call passes must be in the expected args with an equal value (or
      pass its matcher); expected keys may be left out. agentevals' `tool_args_match_mode="subset"`
      (`"superset"` in trajectory mode `subset`).
    - `ignore`: arguments are never compared; any call of the right name matches.

    `ignore_keys` are dropped from both sides first, so volatile values such as request ids or timestamps
    never decide a match. Keys in `ignore_keys` and `matchers` may be dotted paths into nested objects
    (`time.start`); a key that itself holds a dot is matched as that key first.

    How argument states read (`ToolCall.args_state`), chosen so a written expectation means what a
    person writing it would mean:
    - expected **absent** (no `args` written) or **not_captured** (a recorded run used as the
      expectation): no constraint on the values. Only the matchers apply (each matcher key must be
      present and match; under `actual_subset`, match when present). Write `args: {}` to require "no arguments".
    - **absent** or **null** (either side): "no arguments", read as `{}`. So `args: {}` matches a call
      made with no arguments, with `null` and with `{}`; it never matches `{"q": 1}` under `exact`.
    - actual **raw** (text that is not JSON, e.g. truncated by a size limit): the text itself. It
      equals only the identical text and never matches an object expectation or any matcher.
    - actual **not_captured** (the instrumentation did not record arguments): unknown, so it matches
      only when nothing is asked of the arguments (mode `ignore`, or expected absent with no
      matchers). Enable content capture to check arguments.
    - Expected args that are not an object (a list, a number) compare by `json_equal` in every mode
      but `ignore`; matchers then never match.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: ArgsMode = Field(
        default="exact",
        description="`exact`, `expected_subset` (alias `subset`), `actual_subset` or `ignore`, see the class "
        "docstring. Default: exact.",
    )
    matchers: dict[str, ArgMatcher] = Field(
        default_factory=dict, description="Per argument key or dotted path, a rule that replaces equality."
    )
    ignore_keys: list[str] = Field(
        default_factory=list, description="Keys or dotted paths dropped from both sides before comparing."
    )
    _ignored: frozenset[str] = PrivateAttr(default=frozenset())
    _ignored_paths: tuple[str, ...] = PrivateAttr(default=())
    _tests: dict[str, ArgMatcher] = PrivateAttr(default_factory=dict)  # matchers of keys not ignored
    _nested: tuple[str, ...] = PrivateAttr(default=())  # dotted matcher keys: dropped from both sides once tested

    def model_post_init(self, context: Any) -> None:
        self._ignored = frozenset(key for key in self.ignore_keys if "." not in key)
        self._ignored_paths = tuple(key for key in self.ignore_keys if "." in key)
        ignored = frozenset(self.ignore_keys)
        self._tests = {key: m for key, m in self.matchers.items() if key not in ignored}
        self._nested = tuple(key for key in self._tests if "." in key)

    def matches(self, expected: ToolCall, actual: ToolCall) -> bool:
        """True when `actual`'s arguments satisfy `expected`'s under this rule; names are not compared."""
        mode = self.mode
        if mode == "ignore":
            return True
        exp_state = expected.args_state
        if exp_state in _UNSTATED and not self._tests:
            return True
        act_state = actual.args_state
        if act_state == "not_captured":
            return False
        got = actual.args if act_state in ("value", "raw") and actual.args is not None else _NO_ARGS
        if exp_state in _UNSTATED:
            return type(got) is dict and self._matchers_pass(got)
        want = _NO_ARGS if expected.args is None else expected.args
        if act_state == "raw" or type(want) is not dict:
            return not self._tests and json_equal(want, got)
        if type(got) is not dict:
            return False
        want, got = self.comparable(want, got)
        if not self._matchers_pass(got):
            return False
        for path in self._nested:
            want, got = drop_path(want, path), drop_path(got, path)
        tests = self._tests
        if mode == "exact" and (want.keys() | (tests.keys() - self._nested)) != got.keys():
            return False
        if mode == "actual_subset":
            return all(key in tests or (key in want and json_equal(want[key], value)) for key, value in got.items())
        for key, value in want.items():
            if key not in tests and (key not in got or not json_equal(value, got[key])):
                return False
        return True

    def comparable(self, want: dict[str, Any], got: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Both sides without `ignore_keys` (top-level keys, then dotted paths)."""
        if self._ignored:
            want = {k: v for k, v in want.items() if k not in self._ignored}
            got = {k: v for k, v in got.items() if k not in self._ignored}
        for path in self._ignored_paths:
            want, got = drop_path(want, path), drop_path(got, path)
        return want, got

    def compile(self, expected: ToolCall) -> Callable[[ToolCall], bool]:
        """`lambda actual: self.matches(expected, actual)`, with the common case (`exact`, no
        matchers, no ignored keys, expected args written) precompiled for scoring hot paths."""
        if self.mode == "ignore" or (expected.args_state in _UNSTATED and not self._tests):
            return _always
        if self._tests or self.ignore_keys or expected.args_state != "value":
            return lambda actual: self.matches(expected, actual)
        same = equality_test(_NO_ARGS if expected.args is None else expected.args)

        def test(actual: ToolCall) -> bool:
            state = actual.args_state
            if state == "value":
                return same(_NO_ARGS if actual.args is None else actual.args)
            if state == "absent":
                return same(_NO_ARGS)
            return state == "raw" and same(actual.args)

        return test if self.mode == "exact" else lambda actual: self.matches(expected, actual)

    def _matchers_pass(self, got: dict[str, Any]) -> bool:
        """Each matcher's key is present and passes; under `actual_subset`, passes where present."""
        optional = self.mode == "actual_subset"
        for key, matcher in self._tests.items():
            value = lookup_path(got, key)
            if value is MISSING:
                if not optional:
                    return False
            elif not matcher.test(value):
                if matcher.type in RAW_VALUE_RULES and is_masked(value):
                    raise MaskedValueError(
                        f"argument {key!r} is masked ({value}) by the privacy settings: its `{matcher.type}` rule "
                        "needs the raw value; compare it by equality, or leave it unmasked"
                    )
                return False
        return True


class ExpectedCall(ToolCall):
    """An expected call, optionally with its own argument rule (every `ToolCall` spelling is accepted)."""

    match: ArgsMatch | None = Field(
        default=None, description="Argument rule for this call only; overrides per-tool and scorer rules."
    )

    @model_validator(mode="before")
    @classmethod
    def _from_tool_call(cls, data: Any) -> Any:
        """A plain `ToolCall` (a recorded run's call, say) is an expected call with no rule of its own."""
        if isinstance(data, ToolCall) and not isinstance(data, ExpectedCall):
            return data.model_dump(exclude_unset=True)  # a default message index stays a default (strict mode)
        return data


def resolve_args_match(
    call: ToolCall, tool_args: Mapping[str, ArgsMatch], default: ArgsMatch | None
) -> ArgsMatch | None:
    """The rule for one expected call: its own `match`, else its tool's, else `default`.

    None means "no rule": the scorer falls back to its peer's own argument comparison.
    """
    if isinstance(call, ExpectedCall) and call.match is not None:
        return call.match
    return tool_args.get(call.name, default)
