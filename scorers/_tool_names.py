"""Tool-name patterns: exact names or `fnmatch`-style globs, compiled once when a scorer is built.

Scorers that name tools in rules (`tool_policy`'s `denied: [delete_*]`, `tool_errors`' fallbacks) take
globs, never regular expressions: a glob says what a reader expects (`*`, `?`, `[abc]`, `[!abc]`), cannot
backtrack catastrophically, and is matched case-sensitively, as tool names are (`fnmatch.fnmatchcase`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable

__all__ = ["NamePatterns", "is_glob"]

_GLOB_CHARS = frozenset("*?[")
_MEMO_LIMIT = 4096
"""Distinct tool names whose verdict one pattern list remembers: agents call a few tools, many times."""


def is_glob(pattern: str) -> bool:
    """True when `pattern` has a glob character; otherwise it names one tool exactly."""
    return not _GLOB_CHARS.isdisjoint(pattern)


class NamePatterns:
    """A list of exact names and globs; `first(name)` is the first pattern matching `name`, or None.

    Exact names are a set lookup; globs are translated by `fnmatch.translate` (a fixed, linear-time
    translation) and compiled once. Verdicts are memoized per name (bounded), so a long run of calls
    to the same few tools costs one dictionary lookup per call.
    """

    __slots__ = ("_exact", "_globs", "_memo", "patterns")

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(patterns)
        self._exact = {p: p for p in self.patterns if not is_glob(p)}
        self._globs: tuple[tuple[str, Callable[[str], object]], ...] = tuple(
            (p, re.compile(fnmatch.translate(p)).match) for p in self.patterns if is_glob(p)
        )
        self._memo: dict[str, str | None] = {}

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def first(self, name: str) -> str | None:
        """The first exact name equal to `name`, else the first glob matching it, else None."""
        memo = self._memo
        if name in memo:
            return memo[name]
        found = self._exact.get(name)
        if found is None:
            found = next((p for p, match in self._globs if match(name)), None)
        if len(memo) < _MEMO_LIMIT:
            memo[name] = found
        return found

    def matches(self, name: str) -> bool:
        return self.first(name) is not None
