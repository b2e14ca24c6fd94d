"""How large an expectation may be, checked wherever one is validated: files, the API, `Registry.put`.

Names end up in metric attributes, URLs and log lines; labels travel with every score (`severity` is a
metric attribute); selectors are compiled and indexed in every replica's memory and checked against
every run; and a document travels whole in gRPC messages a client receives up to 4 MiB of. Unbounded,
one careless or hostile write could make each of those as large as it liked. The limits are far above
what a hand-written expectation needs.

The whole document is bounded too, before anything else reads it: at most `MAX_DOCUMENT_DEPTH` levels of
nesting (a reply carries scorer params as a `google.protobuf.Struct`, three message levels per JSON level,
and protobuf readers stop at 100; and every reader of it recurses) and `MAX_DOCUMENT_BYTES` as JSON (a reply
carries the params twice, Struct and `params_json`, and must stay far below a client's 4 MiB).

A document read back from a store is not held to them (`STORED` in the validation context): a registry
written before the limits existed keeps matching, and only a write of the oversized document fails.
An error names the field, its size and the limit: `name: is 300 characters long, over the limit of 256`.
"""

from __future__ import annotations

import json
from collections.abc import Sized
from typing import Any, TypeVar

from pydantic import AfterValidator, ValidationInfo

__all__ = [
    "MAX_CONDITION_CHARS",
    "MAX_DOCUMENT_BYTES",
    "MAX_DOCUMENT_DEPTH",
    "MAX_DOCUMENT_VALUES",
    "MAX_IN_VALUES",
    "MAX_LABELS",
    "MAX_LABEL_KEY_CHARS",
    "MAX_LABEL_VALUE_CHARS",
    "MAX_NAME_CHARS",
    "MAX_SCORERS",
    "MAX_SELECTORS",
    "MAX_SELECTOR_KEY_CHARS",
    "STORED",
    "at_most",
    "chars",
    "check_text",
    "document_problem",
    "is_stored",
    "key_chars",
    "too_deep",
]

MAX_NAME_CHARS = 256
MAX_LABELS = 64
MAX_LABEL_KEY_CHARS = 256
MAX_LABEL_VALUE_CHARS = 1024
MAX_SELECTORS = 64
"""Keys of `match.resource`, and of `match.attributes`, each."""
MAX_SELECTOR_KEY_CHARS = 256
MAX_CONDITION_CHARS = 4096
"""The text of an `equals`, `regex` or `contains` condition, or of one `in` value."""
MAX_IN_VALUES = 1000
MAX_SCORERS = 64
MAX_DOCUMENT_DEPTH = 24
"""Levels of nesting of a whole document (the document itself is level 1; `scorers[0].expected[0].args` is 5)."""
MAX_DOCUMENT_BYTES = 512 * 1024
"""A whole document as compact JSON (UTF-8)."""

STORED = "toolscore.stored"
"""Validation context key: the document was read back from a store, so the limits do not apply."""

_T = TypeVar("_T")
_PREVIEW_CHARS = 24


def is_stored(info: ValidationInfo | None) -> bool:
    return bool(info is not None and isinstance(info.context, dict) and info.context.get(STORED))


def check_text(value: str, limit: int, what: str = "is") -> None:
    """Raise the limit's error when `value` is longer than `limit` characters (`what` starts the message)."""
    if len(value) > limit:
        raise ValueError(f"{what} {len(value)} characters long, over the limit of {limit}")


def chars(limit: int) -> AfterValidator:
    """A text field of at most `limit` characters."""

    def check(value: str, info: ValidationInfo) -> str:
        if not is_stored(info):
            check_text(value, limit)
        return value

    return AfterValidator(check)


def key_chars(limit: int) -> AfterValidator:
    """A mapping key of at most `limit` characters; the error (at the mapping) quotes the key's start."""

    def check(value: str, info: ValidationInfo) -> str:
        if not is_stored(info) and len(value) > limit:
            preview = value[:_PREVIEW_CHARS] + "..."
            check_text(value, limit, f"the key {preview!r} is")
        return value

    return AfterValidator(check)


def at_most(limit: int, noun: str) -> AfterValidator:
    """A list or mapping of at most `limit` `noun`s."""

    def check(value: _T, info: ValidationInfo) -> _T:
        size = len(value) if isinstance(value, Sized) else 0
        if size > limit and not is_stored(info):
            raise ValueError(f"has {size} {noun}, over the limit of {limit}")
        return value

    return AfterValidator(check)


MAX_DOCUMENT_VALUES = MAX_DOCUMENT_BYTES // 2
"""Values (scalars and containers) a document may hold: each takes at least two bytes as JSON (`0,`), so a
document of more is past `MAX_DOCUMENT_BYTES` too. Counted as the document is walked, so that YAML aliases
(`b: [*a, *a, ...]`, nine levels of nine: a 400-byte file of 387 million values) are refused before anything
expands them."""


def too_deep(data: Any, limit: int = MAX_DOCUMENT_DEPTH) -> tuple[str | int, ...] | None:
    """Where `data` first nests deeper than `limit` levels (a container's location), or None."""
    return _walk(data, limit, None)[0]


def _walk(data: Any, depth: int, values: int | None) -> tuple[tuple[str | int, ...] | None, bool]:
    """(where `data` first nests deeper than `depth`, whether it holds more than `values` values).

    With a stack, not recursion: the documents it guards are the ones deep enough to exhaust it; and it stops
    at the first value past either limit, so its cost is bounded whatever aliases share.
    """
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    seen = 0
    while stack:
        value, loc = stack.pop()
        seen += 1
        if values is not None and seen > values:
            return None, True
        if isinstance(value, dict):
            children: Any = value.items()
        elif isinstance(value, list | tuple):
            children = enumerate(value)
        else:
            continue
        if len(loc) >= depth:
            return loc, False
        stack.extend((child, (*loc, key if isinstance(key, int) else str(key))) for key, child in children)
    return None, False


def document_problem(data: Any) -> tuple[tuple[str | int, ...], str] | None:
    """(location, message) of a document past `MAX_DOCUMENT_DEPTH`, `MAX_DOCUMENT_VALUES` or
    `MAX_DOCUMENT_BYTES`, or None."""
    deep, many = _walk(data, MAX_DOCUMENT_DEPTH, MAX_DOCUMENT_VALUES)
    if deep is not None:
        return deep[:2], f"nests deeper than {MAX_DOCUMENT_DEPTH} levels, the limit of a document"
    if many:
        return (), f"holds more than {MAX_DOCUMENT_VALUES} values, over the limit of a document"
    size = len(json.dumps(data, separators=(",", ":"), ensure_ascii=False, default=str).encode("utf-8", "replace"))
    if size > MAX_DOCUMENT_BYTES:
        return (), f"the document is {size} bytes as JSON, over the limit of {MAX_DOCUMENT_BYTES}"
    return None
