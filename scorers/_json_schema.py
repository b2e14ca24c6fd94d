"""JSON Schemas of tool arguments: checked, compiled once, cached, and applied in bounded time.

A schema comes from the run's tool catalog (what the model was offered, read from the trace) or from a
scorer's `schemas`. Each distinct schema is checked against its draft's metaschema and compiled once
(`jsonschema`, the draft chosen by `$schema`, Draft 2020-12 when none is named), then cached: by the
schema object itself while it lives (a scorer's own schemas), and by its canonical text (catalogs
rebuilt per run). `$ref` resolves within the schema only: nothing is ever fetched. OpenAPI 3.0's `nullable: true`
(smolagents, Gemini-style schemas) is read as `null` joining the node's `type`.

Bounds, so a huge or hostile schema costs bounded time: a schema longer than `MAX_SCHEMA_CHARS` as compact
JSON is refused (`schema_too_large`); one validation evaluates at most `MAX_STEPS` schema keywords, and a
`pattern` regex search runs at most `PATTERN_TIMEOUT_S`, past which the call is left unchecked (`too_complex`)
rather than judged; at most `MAX_ERRORS` errors are reported per call.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import regex
from jsonschema import ValidationError, validators
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator

from toolscore.scorers._json_schema_fast import Check, compile_fast
from toolscore.scorers._json_text import compact_json

__all__ = [
    "MAX_ERRORS",
    "MAX_SCHEMA_CHARS",
    "MAX_STEPS",
    "PATTERN_TIMEOUT_S",
    "CompiledSchema",
    "SchemaProblem",
    "TooComplex",
    "compiled_schema",
    "openapi_nullable",
]

MAX_SCHEMA_CHARS = 262_144
"""Longest schema accepted, as compact JSON (256 KiB, the default attribute bound of a catalog)."""
MAX_STEPS = 100_000
"""Schema keywords one validation may evaluate (`anyOf` inside recursive `$ref`s can otherwise explode)."""
PATTERN_TIMEOUT_S = 0.05
"""Longest one `pattern` search may run (a backtracking regex otherwise can run for ever)."""
MAX_ERRORS = 10
"""Errors reported per call; the rest are counted."""
_CACHE_SIZE = 1024
"""Distinct schemas kept compiled, least recently used first out."""


class SchemaProblem(ValueError):
    """A schema that cannot be used: not a JSON Schema, or too large. `kind` is the error type."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class TooComplex(Exception):
    """A validation past `MAX_STEPS` keywords or `PATTERN_TIMEOUT_S` in one regex."""


_budget = threading.local()


def _counted(keyword: Any) -> Any:
    def counted(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        _budget.steps -= 1
        if _budget.steps < 0:
            raise TooComplex
        errors = keyword(validator, value, instance, schema)
        if errors is not None:
            yield from errors

    return counted


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    """`pattern` with a time limit (the `regex` module's; Python's `re` has none)."""
    if not validator.is_type(instance, "string"):
        return
    try:
        found = regex.search(pattern, instance, timeout=PATTERN_TIMEOUT_S)
    except TimeoutError:
        raise TooComplex from None
    if found is None:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


_BOUNDED: dict[type[Any], type[Any]] = {}
_lock = threading.Lock()


def _bounded(cls: type[Any]) -> type[Any]:
    """The draft's validator class with every keyword counted against the budget."""
    with _lock:
        found = _BOUNDED.get(cls)
        if found is None:
            keywords = {**cls.VALIDATORS}
            if "pattern" in keywords:
                keywords["pattern"] = _pattern
            extend: Any = validators.extend  # untyped in the stubs
            found = extend(cls, {name: _counted(fn) for name, fn in keywords.items()})
            _BOUNDED[cls] = found
        return found


def pointer(path: Any) -> str:
    """An RFC 6901 JSON pointer (`/items/0/city`; `""` is the whole document)."""
    return "".join("/" + str(step).replace("~", "~0").replace("/", "~1") for step in path)


@dataclass(frozen=True, slots=True)
class CompiledSchema:
    """One checked schema: a fast yes/no (when its keywords allow) and the `jsonschema` validator."""

    validator: Validator
    fast: Check | None

    def is_valid(self, instance: Any) -> bool:
        """The verdict, within the bounds; raises `TooComplex` past them."""
        if self.fast is not None:
            return self.fast(instance)
        return not any(True for _ in self._errors(instance))

    def errors(self, instance: Any) -> tuple[list[dict[str, Any]], int]:
        """Up to `MAX_ERRORS` errors (`pointer`, `keyword`, `message`) and how many there were in all."""
        out: list[dict[str, Any]] = []
        total = 0
        for error in self._errors(instance):
            for item in _described(error):
                total += 1
                if len(out) < MAX_ERRORS:
                    out.append(item)
        return out, total

    def _errors(self, instance: Any) -> Iterator[ValidationError]:
        _budget.steps = MAX_STEPS
        yield from self.validator.iter_errors(instance)


def _described(error: ValidationError) -> list[dict[str, Any]]:
    """One error per offending location: a missing required key and each unexpected key at its own pointer."""
    at = pointer(error.absolute_path)
    keyword = str(error.validator)
    instance, value = error.instance, error.validator_value
    schema = error.schema if isinstance(error.schema, dict) else {}
    if keyword == "required" and isinstance(instance, dict) and isinstance(value, list):
        missing = [p for p in value if p not in instance and error.message.startswith(repr(p))]
        if missing:
            return [{"pointer": f"{at}{pointer([missing[0]])}", "keyword": keyword, "message": error.message}]
    if keyword == "additionalProperties" and isinstance(instance, dict) and "patternProperties" not in schema:
        known = schema.get("properties", {})
        extras = [key for key in instance if key not in known]
        if extras and value is False:
            return [
                {"pointer": f"{at}{pointer([key])}", "keyword": keyword, "message": f"{key!r} is not allowed"}
                for key in extras
            ]
    return [{"pointer": at, "keyword": keyword, "message": error.message}]


_by_text: OrderedDict[str, CompiledSchema] = OrderedDict()
_by_id: dict[int, tuple[Any, CompiledSchema]] = {}


def compiled_schema(schema: Any) -> CompiledSchema:
    """The compiled form of `schema`, from the cache when seen before; raises `SchemaProblem`."""
    held = _by_id.get(id(schema))
    if held is not None and held[0] is schema:
        return held[1]
    if not isinstance(schema, dict | bool):
        raise SchemaProblem("invalid_schema", f"a schema is an object (or a boolean), got {type(schema).__name__}")
    text = compact_json(schema, MAX_SCHEMA_CHARS + 1)
    if len(text) > MAX_SCHEMA_CHARS:
        raise SchemaProblem("schema_too_large", f"the schema is over {MAX_SCHEMA_CHARS} characters as compact JSON")
    with _lock:
        found = _by_text.get(text)
        if found is not None:
            _by_text.move_to_end(text)
    if found is None:
        try:
            found = _compile(schema)
        except RecursionError:
            raise SchemaProblem("schema_too_large", "the schema nests too deep to be checked") from None
        with _lock:
            _by_text[text] = found
            while len(_by_text) > _CACHE_SIZE:
                _by_text.popitem(last=False)
    with _lock:
        if len(_by_id) >= _CACHE_SIZE:
            _by_id.clear()
        _by_id[id(schema)] = (schema, found)
    return found


def openapi_nullable(schema: Any) -> Any:
    """`schema` with OpenAPI 3.0's `nullable: true` read as JSON Schema says it: `null` joins the node's `type`
    (and its `enum`). smolagents and Gemini-style tool schemas use it; `jsonschema` alone ignores the keyword,
    and would call a `null` the model may pass invalid. Copies only the nodes it changes."""
    if isinstance(schema, list):
        items = [openapi_nullable(item) for item in schema]
        return items if any(a is not b for a, b in zip(items, schema, strict=True)) else schema
    if not isinstance(schema, dict):
        return schema
    out = {key: openapi_nullable(value) for key, value in schema.items()}
    changed = any(out[key] is not schema[key] for key in schema)
    if out.get("nullable") is True and isinstance(out.get("type"), str | list):
        kinds = [out["type"]] if isinstance(out["type"], str) else list(out["type"])
        out["type"] = kinds if "null" in kinds else [*kinds, "null"]
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        del out["nullable"]
        changed = True
    return out if changed else schema


def _compile(schema: Any) -> CompiledSchema:
    schema = openapi_nullable(schema)
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        raise SchemaProblem("invalid_schema", f"not a valid JSON Schema: {exc.message}") from None
    d6 = cls not in (validators.Draft3Validator, validators.Draft4Validator)
    fast = compile_fast(schema, draft6_or_later=d6) if cls is not validators.Draft3Validator else None
    return CompiledSchema(_bounded(cls)(schema), fast)
