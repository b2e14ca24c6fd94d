"""Keys of tool arguments named by a dotted path (`time.start`), for argument rules that reach into nested objects.

A key that itself holds a dot (`"a.b": 1`) is found as that key first, so rules written before paths existed
keep their meaning.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MISSING", "drop_path", "lookup_path"]

MISSING: Any = object()
"""What `lookup_path` returns for a key or path that is not there (`None` is a value)."""


def lookup_path(value: Any, path: str) -> Any:
    """`value[path]`, or the value at a dotted path (`time.start`: `value["time"]["start"]`); `MISSING` if none.

    A key that itself holds a dot is found first, so a literal `"time.start"` key is never read as a path."""
    if type(value) is not dict:
        return MISSING
    if path in value:
        return value[path]
    head, dot, rest = path.partition(".")
    if not dot or head not in value:
        return MISSING
    return lookup_path(value[head], rest)


def drop_path(value: Any, path: str) -> Any:
    """`value` without the key at `path` (literal key first, then the dotted path); copies only along the path."""
    if type(value) is not dict:
        return value
    if path in value:
        return {k: v for k, v in value.items() if k != path}
    head, dot, rest = path.partition(".")
    if not dot or head not in value or type(value[head]) is not dict:
        return value
    return {**value, head: drop_path(value[head], rest)}
