"""A pydantic validation error as its author should read it: what is wrong, in the words of the file.

Pydantic's messages are written for Python callers: "Extra inputs are not permitted" for `setle_ms`,
"Field required", "Input should be a valid dictionary or instance of JudgeBudgetConfig", "Input tag
'trajectry' found using 'type' does not match any of the expected tags". An author of a YAML file or an
environment variable needs what was expected and what they wrote instead. The keys, types and values
that would be accepted are known from the models, so the message names the closest key or value
("unknown key; did you mean `settle_ms`?"), the kind of value expected ("expected true or false, got
'maybe'"), the bound ("must be >= 1, got -5"). Shared by the expectation files, `toolscore score` and the collector's
configuration; the caller puts the file, line and field in front. Values under keys that may hold a
secret are named by their kind only, since these messages end up in logs.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails

__all__ = ["error_message", "fold_misspelt_keys"]

_MAX_LISTED = 12
"""Keys listed when none is close; more than this and the message says how many there are instead."""

_MAX_ECHO = 40
"""Characters of a wrong value repeated in the message; longer values are cut."""

_SECRET = re.compile(r"token|password|secret|dsn|api_key|headers|credential", re.IGNORECASE)
"""Keys whose values are not repeated in messages (they go to logs): only their kind is named."""

_EXPECTED = {
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "string_type": "a string",
    "list_type": "a list",
    "tuple_type": "a list",
    "set_type": "a list",
    "frozen_set_type": "a list",
    "dict_type": "a mapping of keys to values",
    "model_type": "a mapping of keys to values",
    "model_attributes_type": "a mapping of keys to values",
}
"""What a type error expected, by pydantic error type, in the words of YAML and JSON."""

_BOUNDS = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}
_BOUND_KEYS = {"greater_than": "gt", "greater_than_equal": "ge", "less_than": "lt", "less_than_equal": "le"}


def error_message(error: ErrorDetails, root: Any, skip: int = 0) -> str:
    """The error's message: what was expected there and what was found instead.

    `root` is what was validated (a model, or a union of them) at the error location's `skip`th part:
    a model that parses a nested document itself passes the type it parses with and how deep it sits.
    """
    kind = error["type"]
    loc = tuple(error["loc"])[skip:]
    ctx = error.get("ctx") or {}
    got = _describe(error.get("input"), tuple(error["loc"]))
    if kind == "extra_forbidden":
        if ctx.get("required"):  # `fold_misspelt_keys` found the required key it stands for
            return f"unknown key; did you mean `{ctx['required']}`? (a required key, missing)"
        return _unknown_key(loc, root)
    if kind == "missing":
        return "required key missing"
    if kind == "union_tag_invalid":
        return _unknown_tag(ctx)
    if kind == "union_tag_not_found":
        return _missing_tag(ctx, loc, root)
    if kind in ("literal_error", "enum"):
        return _not_one_of(ctx, error.get("input"), got)
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {got}"
    if kind in _BOUNDS:  # the number as written: a variable's `-3` is text until validated
        got = got.removeprefix("the number ").strip("'")
        return f"must be {_BOUNDS[kind]} {_number(ctx.get(_BOUND_KEYS[kind]))}, got {got}"
    if kind == "string_pattern_mismatch":
        return f"must match the pattern `{ctx.get('pattern')}`, got {got}"
    if kind in ("string_too_short", "too_short"):
        return _length("at least", ctx.get("min_length"), kind, got)
    if kind in ("string_too_long", "too_long"):
        return _length("at most", ctx.get("max_length"), kind, got)
    return error["msg"].removeprefix("Value error, ")


def fold_misspelt_keys(errors: Sequence[ErrorDetails]) -> list[ErrorDetails]:
    """`nme: x` in place of `name: x` is one mistake, which pydantic reports as two: `name` missing, and `nme`
    unknown. Report the misspelling, where the author's eye is, and say there which required key it stands for:
    a missing key is dropped when an unknown key beside it (same mapping) is close to it, and that key's error
    names it. Other errors are kept as they are, in their order."""
    out = list(errors)
    unknown = [i for i, err in enumerate(errors) if err["type"] == "extra_forbidden" and err["loc"]]
    dropped: set[int] = set()
    for i, err in enumerate(errors):
        if err["type"] != "missing" or not err["loc"]:
            continue
        parent, key = tuple(err["loc"][:-1]), str(err["loc"][-1])
        beside = {str(errors[j]["loc"][-1]): j for j in unknown if tuple(errors[j]["loc"][:-1]) == parent}
        close = difflib.get_close_matches(key, list(beside), n=1, cutoff=0.6)
        if close:
            j = beside[close[0]]
            out[j] = {**errors[j], "ctx": {**(errors[j].get("ctx") or {}), "required": key}}
            unknown.remove(j)
            dropped.add(i)
    return [err for i, err in enumerate(out) if i not in dropped]


def _describe(value: Any, loc: Sequence[str | int]) -> str:
    """A wrong value as the author wrote it, cut short; only its kind when the key may hold a secret."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    secret = any(isinstance(part, str) and _SECRET.search(part) for part in loc)
    if isinstance(value, (int, float)):
        return "a number" if secret else f"the number {value}"
    if secret:
        return "a string" if isinstance(value, str) else "a value"
    text = value if isinstance(value, str) else str(value)
    if len(text) > _MAX_ECHO:
        text = text[: _MAX_ECHO - 1] + "…"
    return repr(text)


def _number(value: Any) -> Any:
    """A bound as a reader writes it: `0`, not pydantic's `0.0` for a float field."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _close(word: Any, choices: Sequence[str]) -> str | None:
    if not isinstance(word, str):
        return None
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return close[0] if close else None


def _quoted(text: str) -> list[str]:
    """The values pydantic lists in `'a', 'b' or 'c'`."""
    return re.findall(r"'([^']*)'", text)


def _not_one_of(ctx: dict[str, Any], value: Any, got: str) -> str:
    expected = str(ctx.get("expected", ""))
    message = f"expected {expected}, got {got}"
    close = _close(value, _quoted(expected))
    return f"{message}; did you mean `{close}`?" if close else message


def _unknown_tag(ctx: dict[str, Any]) -> str:
    key = str(ctx.get("discriminator", "type")).strip("'")
    tags = _quoted(str(ctx.get("expected_tags", "")))
    tag = ctx.get("tag")
    close = _close(tag, tags)
    if close:
        return f"unknown {key} {tag!r}; did you mean `{close}`?"
    return f"unknown {key} {tag!r}; known {key}s: {', '.join(tags)}"


def _missing_tag(ctx: dict[str, Any], loc: Sequence[str | int], root: Any) -> str:
    key = str(ctx.get("discriminator", "type")).strip("'")
    tags = [str(tag) for model in _models_at(_models_in(root), loc) for tag in _literals(model, key)]
    return f"required key `{key}` missing; one of: {', '.join(tags)}" if tags else f"required key `{key}` missing"


def _length(bound: str, size: Any, kind: str, got: str) -> str:
    if kind.startswith("string"):
        return "must not be empty" if bound == "at least" and size == 1 else f"must have {bound} {size} characters"
    return f"must have {bound} {size} item{'' if size == 1 else 's'}, got {got}"


def _unknown_key(loc: Sequence[str | int], root: Any) -> str:
    known = sorted({name for model in _models_at(_models_in(root), loc[:-1]) for name in _keys(model)})
    if not known or not loc:
        return "unknown key"
    close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
    if close:
        return f"unknown key; did you mean `{close[0]}`?"
    if len(known) > _MAX_LISTED:
        return f"unknown key (none of the {len(known)} known here is close)"
    return "unknown key; known keys here: " + ", ".join(known)


def _keys(model: type[BaseModel]) -> Iterator[str]:
    for name, field in model.model_fields.items():
        yield field.alias if isinstance(field.alias, str) else name


def _literals(model: type[BaseModel], key: str) -> tuple[Any, ...]:
    field = model.model_fields.get(key)
    return typing.get_args(field.annotation) if field is not None and _is_literal(field) else ()


def _models_at(models: list[type[BaseModel]], path: Sequence[str | int]) -> list[type[BaseModel]]:
    """The models a value at `path` may be validated by (several under a union)."""
    for part in path:
        fields = [model.model_fields[part] for model in models if isinstance(part, str) and part in model.model_fields]
        if fields:
            models = [found for field in fields for found in _models_in(field.annotation)]
            continue
        tagged = [model for model in models if isinstance(part, str) and _tagged(model, part)]
        if tagged:  # a tagged union's tag in the location: the member it names
            models = tagged
        # otherwise a list index or a dict key: the models already unwrapped from the container
    return models


def _tagged(model: type[BaseModel], tag: str) -> bool:
    return any(tag in typing.get_args(field.annotation) for field in model.model_fields.values() if _is_literal(field))


def _is_literal(field: Any) -> bool:
    return typing.get_origin(field.annotation) is typing.Literal


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The models inside an annotation: through Optional, unions, lists, dicts and `Annotated`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin is None and not isinstance(annotation, types.UnionType):
        return []
    return [model for arg in typing.get_args(annotation) for model in _models_in(arg)]
