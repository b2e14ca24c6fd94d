"""JSON schemas for the kit's tools, as a hand-written loop sends them in `tools=[...]`.

A hand-written loop has no framework to build tool schemas, so it builds them from the function's
signature and Google-style docstring, as a user would. Only the types the kit's tools use are mapped.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Any

__all__ = ["tool_schema"]

_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}


def _json_type(annotation: Any) -> dict[str, Any]:
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        kinds = [_json_type(a)["type"] for a in typing.get_args(annotation) if a is not type(None)]
        return {"type": [*kinds, "null"]}
    return {"type": _JSON_TYPES[typing.get_origin(annotation) or annotation]}


def _arg_docs(doc: str) -> dict[str, str]:
    """`name: text` lines of the docstring's Args section."""
    found, inside = {}, False
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped == "Args:":
            inside = True
        elif inside and ":" in stripped:
            name, text = stripped.split(":", 1)
            found[name.strip()] = text.strip()
    return found


def tool_schema(fn: Callable[..., Any], name: str) -> dict[str, Any]:
    """The Chat Completions `tools` entry for `fn`: name, first docstring line, parameters."""
    doc = inspect.getdoc(fn) or ""
    hints = typing.get_type_hints(fn)
    docs = _arg_docs(doc)
    properties, required = {}, []
    for param in inspect.signature(fn).parameters.values():
        properties[param.name] = {**_json_type(hints[param.name]), "description": docs.get(param.name, "")}
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
    parameters = {"type": "object", "properties": properties, "required": required}
    return {
        "type": "function",
        "function": {"name": name, "description": doc.splitlines()[0], "parameters": parameters},
    }
