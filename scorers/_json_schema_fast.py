"""A fast check of the JSON Schema subset tool schemas are made of, that answers only "valid or not".

Tool schemas are mostly flat objects of typed properties (`type`, `properties`, `required`,
`additionalProperties`, `enum`, bounds). `jsonschema` walks any schema correctly but at tens of
microseconds a call; production scores every call. So a schema made only of the keywords below is
compiled into nested closures that give the same verdict; any other keyword (`$ref`, `anyOf`,
`pattern`, ...) makes `compile_fast` return None and the caller uses `jsonschema` alone. Invalid
arguments are always explained by `jsonschema` itself, so only the yes/no verdict ever comes from here.
`tests/test_args_valid.py` checks the two agree over a table of schemas and values, draft by draft.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from toolscore.scorers._json_equality import json_equal

__all__ = ["Check", "compile_fast"]

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "format", "deprecated", "readOnly", "writeOnly"}
)
"""Keywords that never change a verdict (`format` is an annotation unless a format checker is asked for)."""

_ROOT_ONLY = frozenset({"$schema"})

_TYPES: dict[str, Check] = {
    "string": lambda v: type(v) is str,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "number": lambda v: type(v) is int or type(v) is float,
}


def _integer(whole_floats: bool) -> Check:
    if whole_floats:  # draft 6 and later: 1.0 is an integer
        return lambda v: type(v) is int or (type(v) is float and v.is_integer())
    return lambda v: type(v) is int


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


class _Unsupported(Exception):
    """The schema uses a keyword this module does not compile."""


def compile_fast(schema: Any, *, draft6_or_later: bool) -> Check | None:
    """A yes/no check equal to `jsonschema`'s for this (already checked) schema, or None if unsupported."""
    try:
        return _node(schema, draft6_or_later, root=True)
    except _Unsupported:
        return None


def _node(schema: Any, d6: bool, root: bool = False) -> Check:
    if schema is True or schema is False:
        if not d6:
            raise _Unsupported
        return _always if schema else _never
    if type(schema) is not dict:
        raise _Unsupported
    keys = set(schema) - _ANNOTATIONS - (_ROOT_ONLY if root else frozenset())
    if schema.get("type") in ("integer", "number") and {"type"} < keys <= {"type", "minimum", "maximum"}:
        return _ranged(schema, d6)
    checks: list[Check] = []
    is_object = keys & {"properties", "required", "additionalProperties"}
    if "type" in keys and not (is_object and schema["type"] == "object"):  # else the object check tests the type
        checks.append(_type(schema["type"], d6))
    if is_object:
        checks.append(_object(schema, d6, strict=schema.get("type") == "object"))
    if "items" in keys:
        checks.append(_items(schema["items"], d6))
    if "enum" in keys:
        checks.append(_enum(list(schema["enum"])))
    if "const" in keys:
        if not d6:  # draft 4 has no `const`: jsonschema ignores it there
            raise _Unsupported
        const = schema["const"]
        checks.append(lambda v: json_equal(v, const))
    checks += _bounds(schema, keys, d6)
    handled = {"type", "properties", "required", "additionalProperties", "items", "enum", "const"} | _BOUND_KEYS
    if keys - handled:
        raise _Unsupported
    return _all(checks)


def _ranged(schema: dict[str, Any], d6: bool) -> Check:
    """`{type: integer|number, minimum?, maximum?}`, the usual numeric parameter, as one test."""
    low, high = schema.get("minimum", -math.inf), schema.get("maximum", math.inf)
    if type(low) not in (int, float) or type(high) not in (int, float):
        raise _Unsupported
    if schema["type"] == "number":
        return lambda v: (type(v) is int or type(v) is float) and low <= v <= high
    if d6:
        return lambda v: (type(v) is int or (type(v) is float and v.is_integer())) and low <= v <= high
    return lambda v: type(v) is int and low <= v <= high


def _all(checks: list[Check]) -> Check:
    """Every check passes; spelled out for one and two checks, the common cases, to spare a loop."""
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda v: first(v) and second(v)

    def check(v: Any) -> bool:  # a loop, not all(...) over a generator: this runs per value
        for each in checks:  # noqa: SIM110
            if not each(v):
                return False
        return True

    return check


def _enum(allowed: list[Any]) -> Check:
    if allowed and all(type(a) is str for a in allowed):  # the usual enum: a set lookup
        names = frozenset(allowed)
        return lambda v: type(v) is str and v in names
    return lambda v: any(json_equal(v, a) for a in allowed)


def _type(kind: Any, d6: bool) -> Check:
    kinds = [kind] if isinstance(kind, str) else kind
    if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
        raise _Unsupported
    tests = [_integer(d6) if k == "integer" else _TYPES.get(k) for k in kinds]
    if any(t is None for t in tests):
        raise _Unsupported
    found = [t for t in tests if t is not None]
    return found[0] if len(found) == 1 else lambda v: any(t(v) for t in found)


_PY_TYPES: dict[str, frozenset[type]] = {
    "string": frozenset({str}),
    "boolean": frozenset({bool}),
    "null": frozenset({type(None)}),
    "object": frozenset({dict}),
    "array": frozenset({list}),
    "number": frozenset({int, float}),
}

_Property = tuple[frozenset[type] | None, frozenset[str] | None, Check | None]
"""How an object check tests one property: the value's Python type among these, or a string among these
names, or its whole schema's check (all None: any value)."""


def _property(schema: Any, d6: bool) -> _Property:
    if type(schema) is dict:
        keys = set(schema) - _ANNOTATIONS
        kind = schema.get("type")
        types = _PY_TYPES.get(kind) if isinstance(kind, str) else None
        enum = schema.get("enum")
        names = frozenset(enum) if isinstance(enum, list) and enum and all(type(e) is str for e in enum) else None
        simple_type = "type" not in keys or types is not None
        simple_enum = "enum" not in keys or (names is not None and (types is None or str in types))
        if keys <= {"type", "enum"} and simple_type and simple_enum:
            return (frozenset({str}) if names is not None else types), names, None
    test = _node(schema, d6)
    return None, None, None if test is _always else test


def _object(schema: dict[str, Any], d6: bool, strict: bool) -> Check:
    """`properties`, `required` and `additionalProperties`; with `strict`, `type: object` too.

    Each property is looked up once, in one dict, with how it is tested: the usual parameter (just a type, or
    an enum of strings) costs that lookup and a set test, no call; required keys are one C-level set test."""
    props: dict[str, tuple[int, Any]] = {}
    for key, sub in (schema.get("properties") or {}).items():
        types, names, rest = _property(sub, d6)
        if rest is not None:
            props[key] = (_TESTED, rest)
        elif names is not None:
            props[key] = (_NAMED, names)
        elif types is not None:
            props[key] = (_TYPED, types)
        else:
            props[key] = (_ANY, None)
    required = frozenset(schema.get("required") or ())
    extra_schema = schema.get("additionalProperties", True)
    closed = extra_schema is False
    extra = None if extra_schema is True or closed else _node(extra_schema, d6)

    def check(v: Any) -> bool:
        if type(v) is not dict:
            return not strict
        if not v.keys() >= required:
            return False
        get = props.get
        for key, value in v.items():
            prop = get(key)
            if prop is None:
                if closed or (extra is not None and not extra(value)):
                    return False
                continue
            kind, test = prop
            if kind == _TYPED:
                if type(value) not in test:
                    return False
            elif kind == _NAMED:
                if type(value) is not str or value not in test:
                    return False
            elif kind == _TESTED and not test(value):
                return False
        return True

    return check


_TYPED, _NAMED, _TESTED, _ANY = range(4)
"""How an object check tests a property (see `_property`): by type, by name among an enum's, by its schema's
check, or not at all."""


def _items(items: Any, d6: bool) -> Check:
    if isinstance(items, list):  # tuple validation (drafts before 2020-12)
        raise _Unsupported
    test = _node(items, d6)

    def check(v: Any) -> bool:  # a loop, not all(...) over a generator: this runs per value
        if type(v) is not list:
            return True
        for item in v:  # noqa: SIM110
            if not test(item):
                return False
        return True

    return check


_BOUND_KEYS = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems"}
)


def _number(v: Any) -> bool:
    return type(v) is int or type(v) is float  # never a bool: `type(True) is bool`


def _bounds(schema: dict[str, Any], keys: set[str], d6: bool) -> list[Check]:
    out: list[Check] = []
    for key in keys & _BOUND_KEYS:
        limit = schema[key]
        if type(limit) not in (int, float) or (not d6 and key.startswith("exclusive")):  # draft 4: a boolean
            raise _Unsupported
    low, high = schema.get("minimum"), schema.get("maximum")
    if "minimum" in keys and "maximum" in keys:  # the usual pair: one test
        out.append(lambda v: not _number(v) or low <= v <= high)
        keys = keys - {"minimum", "maximum"}
    out += [_bound(key, schema[key]) for key in sorted(keys & _BOUND_KEYS)]
    return out


def _bound(key: str, limit: float) -> Check:
    if key == "minimum":
        return lambda v: not _number(v) or v >= limit
    if key == "maximum":
        return lambda v: not _number(v) or v <= limit
    if key == "exclusiveMinimum":
        return lambda v: not _number(v) or v > limit
    if key == "exclusiveMaximum":
        return lambda v: not _number(v) or v < limit
    if key == "minLength":
        return lambda v: type(v) is not str or len(v) >= limit
    if key == "maxLength":
        return lambda v: type(v) is not str or len(v) <= limit
    if key == "minItems":
        return lambda v: type(v) is not list or len(v) >= limit
    return lambda v: type(v) is not list or len(v) <= limit
