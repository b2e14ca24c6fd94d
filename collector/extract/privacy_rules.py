"""Expectations under masking: expected values masked as the runs are, and rules that need raw values refused.

A run's masked arguments hold markers (`«masked:3f2a9c1b»`); an expectation holds the values its author
wrote. Masking the expected values with the same masker (same key rules, patterns and hash key) makes equal
values equal markers again, so equality rules score exactly as without masking (`masked_scorer`). A rule that
reads the value itself (`regex`, `number`, `type`) cannot be checked on a marker: on a key the privacy
settings mask it is refused when the expectation is written (`privacy_problems`), naming the rule, the key
and the mask; under `names_only` every such rule is (no value is kept), `one_of` too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from toolscore.collector.extract.privacy import Masker, PrivacyConfig, key_rule, mask_call
from toolscore.scorers._base import ScorerBase
from toolscore.scorers._key_paths import MISSING, lookup_path
from toolscore.scorers._matching import RAW_VALUE_RULES, ArgsMatch, ExpectedCall, OneOfMatcher

__all__ = ["masked_scorer", "privacy_problems"]

Loc = tuple[str | int, ...]


def _rules(scorer: ScorerBase) -> Iterator[tuple[Loc, ArgsMatch]]:
    """Every argument rule of a scorer, with its location under the scorer's spec."""
    default = getattr(scorer, "args_match", None)
    if isinstance(default, ArgsMatch):
        yield ("args_match",), default
    for name, rule in (getattr(scorer, "tool_args", None) or {}).items():
        if isinstance(rule, ArgsMatch):
            yield ("tool_args", name), rule
    for i, call in enumerate(getattr(scorer, "expected", None) or ()):
        if isinstance(call, ExpectedCall) and call.match is not None:
            yield ("expected", i, "match"), call.match


def privacy_problems(scorer: ScorerBase, config: PrivacyConfig) -> list[tuple[Loc, str]]:
    """(location under the scorer, message) of each argument rule the privacy settings make uncheckable."""
    if not config.active:
        return []
    found: list[tuple[Loc, str]] = []
    names_only = config.content == "names_only"
    for loc, rule in _rules(scorer):
        for key, matcher in rule.matchers.items():
            kind = matcher.type
            if names_only and kind != "any":
                why = (
                    "privacy.content is names_only, which keeps no argument value: drop the rule (argument keys "
                    "are still compared), or keep content (`full`) and mask the key instead"
                )
            elif kind in RAW_VALUE_RULES and (mask := key_rule(config.mask_keys, key)) is not None:
                why = (
                    f"privacy.mask_keys masks {key!r} (by {mask!r}): compare it by equality (the expected args, or "
                    "`one_of`), which works on masked values, or leave the key unmasked"
                )
            else:
                continue
            message = f"a `{kind}` rule needs the value of argument {key!r}, but {why}"
            found.append(((*loc, "matchers", key), message))
    return found


def masked_scorer(scorer: ScorerBase, masker: Masker) -> ScorerBase:
    """The scorer with its expected values masked as runs are (the same scorer when it holds none)."""
    expected = getattr(scorer, "expected", None)
    rules = list(_rules(scorer))
    if not rules and not (isinstance(expected, list) and any(isinstance(c, ExpectedCall) for c in expected)):
        return scorer
    update: dict[str, Any] = {}
    if isinstance(expected, list):
        update["expected"] = [
            _masked_call(call, masker) if isinstance(call, ExpectedCall) else call for call in expected
        ]
    default = getattr(scorer, "args_match", None)
    if isinstance(default, ArgsMatch):
        update["args_match"] = _masked_rule(default, masker)
    tool_args = getattr(scorer, "tool_args", None)
    if tool_args:
        update["tool_args"] = {name: _masked_rule(rule, masker) for name, rule in tool_args.items()}
    copy = scorer.model_copy(update=update)
    copy.model_post_init(None)  # parameters are digested once, at construction: digest the masked ones
    return copy


def _masked_call(call: ExpectedCall, masker: Masker) -> ExpectedCall:
    update: dict[str, Any] = {}
    if call.match is not None:
        update["match"] = _masked_rule(call.match, masker)
    masked = mask_call(call, masker)
    update.update(args=masked.args, result=masked.result)
    return call.model_copy(update=update)


def _masked_rule(rule: ArgsMatch, masker: Masker) -> ArgsMatch:
    """`one_of` values masked at their key, as the actual value there is."""
    matchers = {
        key: OneOfMatcher(values=[_masked_at(masker, key, value) for value in m.values])
        if isinstance(m, OneOfMatcher)
        else m
        for key, m in rule.matchers.items()
    }
    if matchers == rule.matchers:
        return rule
    copy = rule.model_copy(update={"matchers": matchers})
    copy.model_post_init(None)
    return copy


def _masked_at(masker: Masker, path: str, value: Any) -> Any:
    """`value` masked as it would be found at the argument dot path `path`."""
    nested: Any = value
    for key in reversed(path.split(".")):
        nested = {key: nested}
    found = lookup_path(masker.arguments(nested), path)
    return None if found is MISSING else found
