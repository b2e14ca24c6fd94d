"""What scorers know of masked content: the marker a masked value becomes, and runs that kept names only.

toolscore's privacy settings (`toolscore.collector.extract.privacy`) replace a value with a marker and a short
keyed hash (`«masked:3f2a9c1b»`) before any scorer sees the run, or drop every value (`names_only`, recorded
on the run as `AgentRun.content`). Equality still works on markers; a rule that needs the value itself (a
regex, a number, a type, a JSON Schema) cannot be checked on one, and a scorer says so rather than scoring
the marker as if it were the value. The marker's spelling lives here so the scorers and the masking step
(which imports it) agree on it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "MARKER_PREFIX",
    "NAMES_ONLY_NOTE",
    "MaskedValueError",
    "is_masked",
    "masked_paths",
    "names_only",
]

MARKER_PREFIX = "«masked:"
"""What every masked value starts with; the rest is 8 hex digits of the keyed hash and `»`."""

NAMES_ONLY_NOTE = "privacy.content=names_only keeps no argument values, results or text"
"""The reason scorers give when a run kept names only."""


class MaskedValueError(ValueError):
    """A rule that needs a raw value met a masked one; the scorer's result is then a failure naming it."""


def is_masked(value: object) -> bool:
    """Whether `value` is a mask marker."""
    return type(value) is str and value.startswith(MARKER_PREFIX) and value.endswith("»")


def names_only(run: Any) -> bool:
    """Whether the run kept tool names and argument keys only (`AgentRun.content == "names_only"`)."""
    return getattr(run, "content", "full") == "names_only"


def masked_paths(value: Any, path: str = "") -> list[str]:
    """Dot paths (`card.number`, `[2]` for list items) of the masked values in `value`, in document order."""
    if is_masked(value):
        return [path or "(whole)"]
    out: list[str] = []
    if type(value) is dict:
        for key, item in value.items():
            out += masked_paths(item, f"{path}.{key}" if path else str(key))
    elif type(value) in (list, tuple):
        for i, item in enumerate(value):
            out += masked_paths(item, f"{path}[{i}]")
    return out
