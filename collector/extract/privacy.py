"""What toolscore keeps of a trace's content: one settings model and the one masking step it drives.

Tool arguments and the user's request often hold personal or secret data. toolscore copies content into
new places (span attributes, evaluation log records, the score store, `eval` reports, the judge's
requests), so the content is masked once, where a run is built, before any of those sees it. A masked
value becomes a fixed marker and a short keyed hash (`«masked:3f2a9c1b»`, HMAC-SHA256 truncated to 8
hex digits): equal values still compare equal in scoring, while the value cannot be read back, and a
guess cannot be checked without the key.

Patterns run on RE2 (`toolscore.scorers._regex`) because they meet sender-controlled text, as an
expectation's patterns do. A string value any pattern finds a match in is masked whole: masking only the
matched part would keep the rest of a secret readable when the pattern catches a prefix.
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import json
import logging
import os
import secrets
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolscore.collector.env import TOOLSCORE_PRIVACY_HASH_KEY
from toolscore.collector.extract.privacy_cards import has_card
from toolscore.collector.extract.privacy_text import mask_attributes
from toolscore.scorers._masked import MARKER_PREFIX, is_masked
from toolscore.scorers._regex import Pattern, RegexError, compile_pattern

if TYPE_CHECKING:
    from toolscore.scorers._model import AgentRun, ToolCall

    _Call = TypeVar("_Call", bound=ToolCall)

__all__ = [
    "DEFAULT_PATTERNS",
    "HASH_KEY_ENV",
    "Masker",
    "PrivacyConfig",
    "key_rule",
    "mask_call",
    "mask_run",
    "masker_for",
]

_log = logging.getLogger(__name__)

HASH_KEY_ENV = TOOLSCORE_PRIVACY_HASH_KEY
"""The environment variable read for the hash key when the configuration sets none (`toolscore.collector.env`)."""

DEFAULT_PATTERNS: dict[str, str] = {
    "email": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}",
    "card_number": r"\b(?:\d[ -]?){12,18}\d\b",
}
"""The default set `default_patterns: true` adds: emails, and card numbers (13 to 19 digits, spaces or
dashes between, masked only when the digits pass the Luhn check, so an order id of 16 digits that is
not a card number is kept; the check tries each run of whole digit groups, so a card written beside other
digits, `4111 1111 1111 1111 12/25`, is found)."""


class PrivacyConfig(BaseModel):
    """Which content toolscore keeps of a run, and how it masks the rest."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mask_keys: tuple[str, ...] = Field(
        default=(),
        description="Argument keys whose values are masked, at any depth: a key (`password`), a dot path "
        "from the arguments' top (`card.number`) or a glob on the dot path (`*.token`, `*secret*`). "
        "Default: [].",
    )
    mask_patterns: tuple[str, ...] = Field(
        default=(),
        description="RE2 patterns; a string value (argument, tool result, request or response text) in which "
        "one finds a match is masked whole. Default: [].",
    )
    default_patterns: bool = Field(
        default=False,
        description="Add the documented default patterns (emails; Luhn-checked card numbers). Off by default: "
        "a pattern masks values the user did not name, which changes what equality scorers compare and hides "
        "ids that look like them. Default: false.",
    )
    content: Literal["full", "names_only"] = Field(
        default="full",
        description="`full` keeps content (masked as above); `names_only` keeps tool names and argument keys "
        "only: no argument value, result, request or response text anywhere toolscore writes. Default: full.",
    )
    hash_key: str | None = Field(
        default=None,
        description=f"Key of the masks' HMAC. Unset: `{HASH_KEY_ENV}`, else a random key per process (hashes "
        "then compare within one process only; a WARNING says so). Default: unset.",
    )

    @field_validator("mask_keys")
    @classmethod
    def _key_rules(cls, rules: tuple[str, ...]) -> tuple[str, ...]:
        for rule in rules:
            if problem := _key_rule_problem(rule):
                raise ValueError(f"{rule!r} is refused: {problem}")
        return rules

    @field_validator("mask_patterns")
    @classmethod
    def _compiles(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in patterns:
            try:
                compile_pattern(pattern)
            except RegexError as exc:
                raise ValueError(f"{pattern!r} is refused: {exc}") from exc
        return patterns

    @property
    def active(self) -> bool:
        """Whether any content is changed at all (the step is skipped otherwise)."""
        return bool(self.mask_keys or self.mask_patterns or self.default_patterns or self.content != "full")


def _key_rule_problem(rule: str) -> str | None:
    """Why a `mask_keys` rule could never mask what it says (None: it is fine)."""
    if not rule.strip():
        return "a key rule is a key, a dot path or a glob, never blank"
    if "" in rule.split("."):
        return "a dot path has a key between each two dots (no leading, trailing or doubled dot)"
    if _unclosed_set(rule):
        return "a glob's `[` opens a set of characters that no `]` closes (write `[[]` for a literal `[`)"
    return None


def _unclosed_set(glob: str) -> bool:
    """Whether a `[` of `glob` has no `]` closing its set, read as `fnmatch` reads sets (which would take the
    `[` as a literal, silently: `card[number` meant something else)."""
    i = 0
    while i < len(glob):
        if glob[i] == "[":
            j = i + 1
            j += glob[j : j + 1] == "!"
            j += glob[j : j + 1] == "]"  # a `]` first in a set is one of its characters
            end = glob.find("]", j)
            if end < 0:
                return True
            i = end
        i += 1
    return False


def key_rule(rules: tuple[str, ...], path: str) -> str | None:
    """The first of `mask_keys` that masks the argument at dot path `path`: its last key, the path, or a glob."""
    leaf = path.rsplit(".", 1)[-1]
    for rule in rules:
        if rule in (leaf, path) or fnmatch.fnmatchcase(path, rule):
            return rule
    return None


_PROCESS_KEY: list[bytes] = []
"""The random key of this process, drawn once: every masker without a configured key uses it, so a masker
built again (`masker_for`'s cache holds a few) gives the same markers as the one before it."""


def _key_bytes(config: PrivacyConfig) -> bytes:
    key = config.hash_key or os.environ.get(HASH_KEY_ENV)
    if key:
        return key.encode("utf-8")
    _log.warning(
        "privacy: no hash key set (privacy.hash_key or %s): masks use a random key of this process, so "
        "masked values compare equal within this process only",
        HASH_KEY_ENV,
    )
    if not _PROCESS_KEY:
        _PROCESS_KEY.append(secrets.token_bytes(32))  # a race draws two: the list keeps the first
    return _PROCESS_KEY[0]


class Masker:
    """The masking step: built once from a `PrivacyConfig`, applied to every value a run holds."""

    def __init__(self, config: PrivacyConfig) -> None:
        self.config = config
        self._key = _key_bytes(config) if config.active else b""
        self._patterns: list[Pattern] = [compile_pattern(p) for p in config.mask_patterns]
        self._email = compile_pattern(DEFAULT_PATTERNS["email"]) if config.default_patterns else None
        self._card = compile_pattern(DEFAULT_PATTERNS["card_number"]) if config.default_patterns else None
        self._keys = config.mask_keys

    @property
    def names_only(self) -> bool:
        return self.config.content == "names_only"

    def marker(self, value: object) -> str:
        """The marker of `value`: equal values (by their canonical text) give equal markers."""
        text = _canonical(value)
        digest = hmac.new(self._key, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
        return f"{MARKER_PREFIX}{digest[:8]}»"

    def key_masked(self, path: str) -> bool:
        """Whether the argument at dot path `path` is masked by a key rule (its last key or a glob on the path)."""
        return key_rule(self._keys, path) is not None

    def _pattern_hit(self, text: str) -> bool:
        if is_masked(text):
            return False
        if any(p.search(text) for p in self._patterns):
            return True
        if self._email is not None and self._email.search(text):
            return True
        if self._card is not None and self._card.search(text):
            return has_card(text)
        return False

    def text(self, value: str | None) -> str | None:
        """A free text (request, response, tool result): dropped under `names_only`, masked on a pattern hit."""
        if value is None or not self.config.active:
            return value
        if self.names_only:
            return None
        return self.marker(value) if self._pattern_hit(value) else value

    def scan(self, value: str) -> str:
        """A text kept under every setting (a name, an id): masked whole on a pattern hit, else as it is."""
        return self.marker(value) if self.config.active and self._pattern_hit(value) else value

    def arguments(self, arguments: Any, path: str = "") -> Any:
        """Tool arguments with masked values; under `names_only` every leaf value is None (keys kept)."""
        if not self.config.active:
            return arguments
        if isinstance(arguments, Mapping):
            out: dict[str, Any] = {}
            for key, value in arguments.items():
                sub = f"{path}.{key}" if path else str(key)
                if self.names_only:
                    out[key] = self.arguments(value, sub) if isinstance(value, (Mapping, list)) else None
                elif self.key_masked(sub) and not is_masked(value):
                    out[key] = self.marker(value)
                else:
                    out[key] = self.arguments(value, sub)
            return out
        if isinstance(arguments, list):
            return [self.arguments(item, path) for item in arguments]
        if self.names_only:
            return None
        if isinstance(arguments, str) and self._pattern_hit(arguments):
            return self.marker(arguments)
        return arguments


@lru_cache(maxsize=16)
def masker_for(config: PrivacyConfig) -> Masker:
    """The masker of a configuration, built once per process (one random key when none is configured)."""
    return Masker(config)


def mask_run(run: AgentRun, config: PrivacyConfig) -> AgentRun:
    """The run as toolscore keeps it: arguments, results, request, response and the text of its span's and
    resource's attributes masked."""
    if not config.active:
        return run
    masker = masker_for(config)
    calls = tuple(mask_call(call, masker) for call in run.calls)
    return run.model_copy(
        update={
            "content": masker.config.content,
            "input": masker.text(run.input),
            "output": masker.text(run.output),
            "calls": calls,
            "attributes": mask_attributes(run.attributes, masker),
            "resource": mask_attributes(run.resource, masker),
        }
    )


def mask_call(call: _Call, masker: Masker) -> _Call:
    """A tool call (recorded or expected) with its arguments and result masked."""
    args = masker.arguments(call.args) if call.args_state == "value" else _raw(masker, call.args)
    result = None if masker.names_only else masker.arguments(call.result)
    return call.model_copy(update={"args": args, "result": result})


def _raw(masker: Masker, args: Any) -> Any:
    """Arguments kept as raw text (unparsed, cut): masked whole when any key rule or pattern could apply."""
    if args is None or not isinstance(args, str):
        return masker.arguments(args)
    if masker.names_only:
        return None
    if masker.config.mask_keys:
        return masker.marker(args)
    return masker.text(args)


def _canonical(value: Any) -> str:
    """The text a value is hashed as: strings as they are, anything else as compact sorted JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
