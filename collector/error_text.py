"""A pydantic validation error as its author should read it: a misspelt key names the key they meant.

Pydantic says "Extra inputs are not permitted" for `setle_ms` or `expectd`, which tells the author
that something is wrong but not what: the keys that would be accepted at that place are known from
the model, so the message names the closest one ("unknown key; did you mean `settle_ms`?") or, with
no close one, lists them. Shared by the expectation files and the collector's configuration.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails

__all__ = ["error_message"]

_MAX_LISTED = 12
"""Keys listed when none is close; more than this and the message says how many there are instead."""


def error_message(error: ErrorDetails, root: Any, skip: int = 0) -> str:
    """The error's message, with "did you mean" for an unknown key.

    `root` is what was validated (a model, or a union of them) at the error location's `skip`th part:
    a model that parses a nested document itself passes the type it parses with and how deep it sits.
    """
    if error["type"] != "extra_forbidden":
        return error["msg"].removeprefix("Value error, ")
    loc = tuple(error["loc"])[skip:]
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
