"""One selector condition: what a single run value (attribute, agent name, input text) must satisfy.

Values are compared as *text*, because the same id reaches toolscore typed differently depending on
the path it took: `tenant.tier: 3` in YAML is an int, the same entry propagated as W3C baggage is the
string `"3"`, and an SDK may record it as an int attribute. So `3` matches `3` and `"3"`, `true`
matches `true` and `"true"`, and `1.0` matches `1`. A list-valued attribute (OTel arrays) satisfies
a condition when any element does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationInfo, model_serializer, model_validator

from toolscore.collector.registry._limits import MAX_CONDITION_CHARS, MAX_IN_VALUES, check_text, is_stored
from toolscore.scorers._regex import Pattern, RegexError, compile_pattern

__all__ = ["OPERATORS", "Condition", "Operator", "as_text"]

Operator = Literal["equals", "in", "regex", "exists", "contains"]
OPERATORS: tuple[Operator, ...] = ("equals", "in", "regex", "exists", "contains")

_SCALARS = (str, int, float, bool)


def as_text(value: Any) -> str:
    """The text form values are compared in: `true`/`false` for booleans, `1` for `1.0`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _check_size(op: str, value: Any) -> None:
    """The limits (`limits.py`) on a condition's values: before a huge regex is compiled."""
    values = value if op == "in" else (value,)
    if len(values) > MAX_IN_VALUES:
        raise ValueError(f"`in` has {len(values)} values, over the limit of {MAX_IN_VALUES}")
    for text in values:
        if isinstance(text, str):
            check_text(text, MAX_CONDITION_CHARS, f"`{op}` text is")


def _check_value(op: str, value: Any, limits: bool = True) -> Any:
    if op == "equals" and not isinstance(value, _SCALARS):
        raise ValueError("`equals` takes a string, number or boolean")
    if op == "in":
        if not isinstance(value, list | tuple) or not value or not all(isinstance(v, _SCALARS) for v in value):
            raise ValueError("`in` takes a non-empty list of strings, numbers or booleans")
        if limits:
            _check_size(op, value)
        return tuple(value)
    if op == "exists" and not isinstance(value, bool):
        raise ValueError("`exists` takes true or false")
    if op in ("regex", "contains") and not isinstance(value, str):
        raise ValueError(f"`{op}` takes a string")
    if limits:
        _check_size(op, value)
    if op == "regex":
        try:
            compile_pattern(value)
        except RegexError as exc:
            raise ValueError(f"bad regex {value!r}: {exc}") from None
    return value


class Condition(BaseModel):
    """`value` (equality), `[a, b]` (in), or one of `{equals|in|regex|exists|contains: ...}`.

    `regex` uses search semantics (anchor with `^...$` for a full match) on RE2, a linear-time engine
    (`toolscore.scorers._regex`: no backreferences or lookaround, refused when written); `contains` is a substring
    test on text and an element test on list-valued attributes. A missing value satisfies only
    `{exists: false}`.
    """

    model_config = ConfigDict(frozen=True)

    op: Operator
    value: Any

    _pattern: Pattern | None = PrivateAttr(default=None)
    _texts: frozenset[str] = PrivateAttr(default=frozenset())

    @model_validator(mode="before")
    @classmethod
    def _parse(cls, data: Any, info: ValidationInfo) -> Any:
        if isinstance(data, Condition):
            return data
        limits = not is_stored(info)
        if isinstance(data, dict) and set(data) == {"op", "value"}:
            return {"op": data["op"], "value": _check_value(data["op"], data["value"], limits)}
        if isinstance(data, _SCALARS):
            return {"op": "equals", "value": _check_value("equals", data, limits)}
        if isinstance(data, list):
            return {"op": "in", "value": _check_value("in", data, limits)}
        if not isinstance(data, dict) or len(data) != 1 or next(iter(data)) not in OPERATORS:
            raise ValueError(f"a condition is a value, a list, or a mapping with one key of {', '.join(OPERATORS)}")
        ((op, value),) = data.items()
        return {"op": op, "value": _check_value(op, value, limits)}

    def model_post_init(self, context: Any) -> None:
        if self.op == "regex":
            self._pattern = compile_pattern(self.value)
        elif self.op in ("equals", "in"):
            self._texts = frozenset(as_text(v) for v in (self.value if self.op == "in" else (self.value,)))

    @model_serializer
    def _serialize(self) -> Any:
        if self.op == "equals":
            return self.value
        return {self.op: list(self.value) if self.op == "in" else self.value}

    @property
    def exact_texts(self) -> frozenset[str]:
        """The texts an `equals`/`in` condition accepts (empty for other operators): index keys."""
        return self._texts

    def compile(self) -> Callable[[Any], bool]:
        """`holds` as one plain closure, for the matching hot path: text values (the common case) take
        a single call with no model attribute lookups; other values go through `holds`."""
        op, value, pattern, texts, slow = self.op, self.value, self._pattern, self._texts, self.holds
        if op == "exists":
            return (lambda actual: actual is not None) if value else (lambda actual: actual is None)
        if op == "contains":
            return lambda actual: value in actual if type(actual) is str else slow(actual)
        if pattern is not None:
            search = pattern.searcher()
            return lambda actual: search(actual) if type(actual) is str else slow(actual)
        return lambda actual: actual in texts if type(actual) is str else slow(actual)

    def holds(self, actual: Any) -> bool:
        if self.op == "exists":
            return (actual is not None) is self.value
        if actual is None:
            return False
        if isinstance(actual, list | tuple):
            if self.op == "contains":
                return self.value in {as_text(v) for v in actual}
            return any(self._holds_scalar(v) for v in actual)
        return self._holds_scalar(actual)

    def _holds_scalar(self, actual: Any) -> bool:
        text = as_text(actual)
        if self.op == "contains":
            return self.value in text
        if self._pattern is not None:
            return self._pattern.search(text)
        return text in self._texts
