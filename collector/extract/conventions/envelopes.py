"""Argument envelopes: the wrappers instrumentations put around a tool's real arguments, taken off in one place.

Instrumentations that wrap a Python callable record its *bound arguments*, not the model's arguments, so
a tool defined as `def tool(**kwargs)` or a method `__call__(self, *args, **kwargs)` is recorded with the
real arguments one level down. The shapes, each recognised only when it is exactly that shape:

- `{"kwargs": {...}}`, that key alone: OpenInference for LlamaIndex (`FunctionTool.acall`) and DSPy
  (`Tool.__call__`);
- `{"args": [], "kwargs": {...}, <flag>: bool, ...}`: OpenInference for smolagents (its
  `sanitize_inputs_outputs` flag), OpenLLMetry's SDK decorators;
- `{"args": [{...}], "kwargs": {}}`: OpenLLMetry's SDK decorators, for a tool taking one dict positionally;
- `{"inputs": {...}, "input_str": ..., "kwargs": {"tool_call_id": ...}, ...}`: OpenLLMetry's LangChain
  callback (the call id comes out too).

Anything else is the arguments themselves. Exactness is what keeps a tool whose real parameter is named
`kwargs` intact: its arguments `{"kwargs": {...}, "verbose": true}` are not the first shape (a second key)
nor the second (no `args`), and a convention that knows the tool's declared parameters (OpenInference's
`tool.parameters`) does not unwrap at all when they name `kwargs` (`unwrap_unless_declared`).

Bound arguments also hold what the framework itself passes the tool (LlamaIndex's workflow `ctx:
Context`), which a JSON recorder writes as the object's repr (`"<workflows.context.context.Context object
at 0x7f...>"`). Such a value never came from the model, so a top-level argument that is an object repr is
left out of unwrapped arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from toolscore.collector.extract.conventions.common import load_json

__all__ = ["looks_wrapped", "unwrap_envelope", "unwrap_unless_declared"]

_WRAPPER_KEYS = ("kwargs", "args", "inputs")
"""Parameter names an envelope uses; a tool that declares one of them as its own parameter is not wrapped."""


_OPENINGS = tuple(f'{{"{key}"' for key in (*_WRAPPER_KEYS, "input_str"))


def looks_wrapped(value: Any) -> bool:
    """Whether `value` may be an envelope, from its first key alone: a cheap test, so that the arguments of
    the many tools that are not wrapped are never decoded twice (here, then as arguments)."""
    if isinstance(value, str):
        return value.startswith(_OPENINGS)
    return isinstance(value, Mapping) and any(key in value for key in _WRAPPER_KEYS)


def unwrap_envelope(value: Any) -> tuple[Any, str | None]:
    """The real arguments inside an envelope (see the module docstring), and the call id it carries.

    `value` as given (and no call id) when it is no envelope; JSON text is decoded to be looked at.
    """
    decoded = load_json(value) if isinstance(value, str) and value[:1] == "{" else value
    if not isinstance(decoded, Mapping) or not decoded:
        return value, None
    kwargs = decoded.get("kwargs")
    if not isinstance(kwargs, Mapping):
        return (decoded["inputs"], None) if "inputs" in decoded and "input_str" in decoded else (value, None)
    unwrapped, call_id = _unwrap(decoded, kwargs)
    if unwrapped is decoded or not isinstance(unwrapped, Mapping):
        return (value if unwrapped is decoded else unwrapped), call_id
    return {key: arg for key, arg in unwrapped.items() if not _is_object_repr(arg)}, call_id


def _is_object_repr(value: Any) -> bool:
    """`<module.Class object at 0x7f...>`: what `repr` gives an object without its own, never a model's value."""
    return isinstance(value, str) and value.startswith("<") and value.endswith(">") and " object at 0x" in value


def _unwrap(decoded: Mapping[str, Any], kwargs: Mapping[str, Any]) -> tuple[Any, str | None]:
    """The arguments inside `decoded`, an object with a `kwargs` object (`decoded` itself: no envelope)."""
    call_id = kwargs.get("tool_call_id")
    call_id = call_id if isinstance(call_id, str) and call_id else None
    if "inputs" in decoded:  # the LangChain callback's envelope: `kwargs` holds the callback's own values
        return decoded["inputs"], call_id
    if len(decoded) == 1:
        return kwargs, None
    args = decoded.get("args")
    if isinstance(args, list) and all(isinstance(v, bool) for k, v in decoded.items() if k not in ("args", "kwargs")):
        if not args:
            return kwargs, None
        if len(args) == 1 and isinstance(args[0], Mapping) and not kwargs:
            return args[0], None
    return decoded, call_id


def unwrap_unless_declared(args: Any, declared: Any) -> Callable[[Any], tuple[Any, str | None]] | None:
    """`unwrap_envelope` for `args` that may be wrapped (`looks_wrapped`), or None: for arguments that are
    not, and when the tool's declared parameters (`declared`: its JSON schema or parameter list, as text or
    value) name one of the envelope's keys, so that a real `kwargs` parameter is kept."""
    if not looks_wrapped(args):
        return None
    if declared is None:
        return unwrap_envelope
    text = declared if isinstance(declared, str) else repr(declared)
    return None if any(f"'{key}'" in text or f'"{key}"' in text for key in _WRAPPER_KEYS) else unwrap_envelope
