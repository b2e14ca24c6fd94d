"""Regular expressions that meet sender-controlled text, on a linear-time engine (RE2).

Every pattern an expectation holds (a `regex` condition under `match`, a `regex` argument matcher in a
scorer) is run against values any sender of spans controls, up to `max_attribute_bytes` long. Python's
`re` backtracks: `^(a+)+$` against `"a"*27 + "!"` takes seconds, and each extra character doubles it,
while the pipeline thread that runs it stalls every trace behind it. RE2 (the `google-re2` wheel)
matches in time linear in the text for every pattern it accepts, which it buys by refusing the
features that need backtracking. So a pattern is compiled by RE2 alone, when it is written (file, CLI,
gRPC API), and one RE2 refuses is refused there, with the feature named.

This is the one place `scorers/` imports a package beyond the standard library, pydantic and litellm:
the engine is the point (no standard-library engine is linear-time), and one module keeps the
exception visible and the dialect in one place for both the scorers and the collector's selectors.

The dialect is RE2's (https://github.com/google/re2/wiki/Syntax), which is Python's `re` without:
backreferences (`\\1`, `(?P=name)`), lookaround (`(?=`, `(?!`, `(?<=`, `(?<!`), possessive and atomic
forms (`a++`, `(?>...)`), conditionals and `\\Z` (write `\\z`). Everything else an expectation uses
(classes, `(?i)`, `(?P<name>...)`, `{m,n}`, non-greedy `*?`, Unicode text) reads the same, but for two things
a pattern compiles with yet reads differently: `\\d \\w \\s \\b` are ASCII (`\\pN`, `\\pL` are Unicode's), and
`$` matches only at the end of the text, not before a final newline.
"""

from __future__ import annotations

from collections.abc import Callable

import re2
from re2 import _re2

__all__ = ["DIALECT", "Pattern", "RegexError", "compile_pattern"]

DIALECT = "RE2 (linear-time; no backreferences, lookaround or possessive quantifiers)"
"""The dialect's name, as error messages and docs give it."""

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is the caller's error to report, not RE2's to print on stderr
_OPTIONS.never_capture = True  # a match is a yes or no: no group spans to compute
_UNANCHORED = re2._Anchor.UNANCHORED
_BOTH = re2._Anchor.ANCHOR_BOTH

# RE2's own error text → the feature a reader knows by name. First match wins.
_FEATURES: tuple[tuple[Callable[[str], bool], str], ...] = (
    (lambda m: m.startswith("invalid escape sequence: \\") and m[-1:].isdigit(), "backreferences (`\\1`)"),
    (lambda m: m.endswith("(?P") or "(?P=" in m, "named backreferences (`(?P=name)`)"),
    (lambda m: m.endswith(("(?=", "(?!")), "lookahead (`(?=...)`, `(?!...)`)"),
    (lambda m: m.endswith(("(?<=", "(?<!")), "lookbehind (`(?<=...)`, `(?<!...)`)"),
    (lambda m: m.endswith("(?>"), "atomic groups (`(?>...)`)"),
    (lambda m: m.startswith("bad repetition operator") and m.endswith("+"), "possessive quantifiers (`a++`)"),
    (lambda m: m.endswith("\\Z"), "`\\Z` (write `\\z`)"),
)


class RegexError(ValueError):
    """A pattern RE2 does not compile; the message names the feature when it is a known one."""


def _utf8(text: str) -> bytes:
    """RE2 reads UTF-8; a lone surrogate (decoded JSON may hold one) goes as its own bytes, never an error."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


class Pattern:
    """A compiled pattern whose tests answer yes or no, in time linear in the text.

    It calls the wheel's compiled `RE2` object directly (`re2._re2`), as `re2.compile(...).search` does
    underneath: that wrapper also maps every group's byte offsets back to `str` offsets and builds a match
    object, ~7 µs a call where the test alone is ~1.5 µs, on a path run for every run and every pattern.
    """

    __slots__ = ("_regexp", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._regexp = _re2.RE2(_utf8(pattern), _OPTIONS)
        if not self._regexp.ok():
            raise RegexError(_reason(self._regexp.error()))

    def search(self, text: str) -> bool:
        """The pattern matches somewhere in `text` (`re.search`; anchor with `^...$` for all of it)."""
        data = _utf8(text)
        return bool(self._regexp.Match(_UNANCHORED, data, 0, len(data))[0][0] >= 0)

    def searcher(self) -> Callable[[str], bool]:
        """`search` as a closure over its locals, for hot paths (one attribute lookup fewer per call)."""
        match, anchor = self._regexp.Match, _UNANCHORED

        def search(text: str) -> bool:
            try:
                data = text.encode()
            except UnicodeEncodeError:
                data = _utf8(text)
            return bool(match(anchor, data, 0, len(data))[0][0] >= 0)

        return search

    def fullmatch(self, text: str) -> bool:
        """The pattern matches all of `text` (`re.fullmatch`)."""
        data = _utf8(text)
        return bool(self._regexp.Match(_BOTH, data, 0, len(data))[0][0] >= 0)

    def __eq__(self, other: object) -> bool:
        """Equal when the pattern text is: rules holding the same patterns are equal rules."""
        return isinstance(other, Pattern) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)

    def __reduce__(self) -> tuple[type[Pattern], tuple[str]]:
        """Pickled as its text (the compiled program is not picklable), compiled again when loaded."""
        return Pattern, (self.pattern,)

    def __repr__(self) -> str:
        return f"Pattern({self.pattern!r})"


def _reason(raw: bytes | str) -> str:
    message = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    for test, feature in _FEATURES:
        if test(message):
            return f"{feature} not supported by RE2, the linear-time engine patterns run on"
    return message


def compile_pattern(pattern: str) -> Pattern:
    """`pattern` compiled by RE2; raises `RegexError` saying why it is refused (not quoting the pattern:
    callers quote it with the field it came from)."""
    return Pattern(pattern)
