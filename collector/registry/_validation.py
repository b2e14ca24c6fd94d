"""From an untrusted document to an `Expectation`, or an `InvalidExpectation` that says where.

Pydantic reports locations as tuples (`("scorers", 0, "trajectory", "expected")`); authors read
`scorers[0].expected`. The scorer union's discriminator tag is dropped from the path because it is a
value the author wrote, not a field. `locate` maps a location back to a line (files pass one built from
the YAML node tree).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from toolscore.collector.error_text import error_message, fold_misspelt_keys
from toolscore.collector.registry._errors import InvalidExpectation, Problem
from toolscore.collector.registry._limits import STORED, document_problem
from toolscore.collector.registry._model import Expectation, MatchSpec

if TYPE_CHECKING:
    from toolscore.collector.extract.privacy import PrivacyConfig

__all__ = [
    "UNREADABLE_LABEL",
    "Locate",
    "check_privacy",
    "drop_tags",
    "field_path",
    "parse_expectation",
    "parse_stored",
    "problems_from",
    "unreadable_problem",
    "warn_if_unmatchable",
]

UNREADABLE_LABEL = "toolscore.unreadable"
"""Label of the stand-in for a stored document this version cannot read; its value says why."""
_MAX_PROBLEM_CHARS = 500

Locate = Callable[[Sequence[str | int]], int | None]
"""Maps a field location (relative to one expectation's document) to a 1-based line, when known."""

_log = logging.getLogger("toolscore.registry")


def field_path(loc: Sequence[str | int]) -> str:
    """`("match", "attributes", "session.id")` → `match.attributes["session.id"]`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif "." in part or not part or " " in part:
            out += f'["{part}"]'
        else:
            out += f".{part}" if out else part
    return out


def drop_tags(loc: Sequence[str | int], data: Any) -> tuple[str | int, ...]:
    """Drop the tagged unions' tags: `scorers.0.trajectory.expected` → `scorers.0.expected`, and so for
    argument matchers (`matchers.units.regex.pattern` → `matchers.units.pattern`); and a bad mapping key's
    location (`labels.<key>.[key]` → `labels`: the message quotes the key).

    A part is a tag when the document at that point is a mapping without that key whose `type` is it.
    """
    parts = tuple(loc)
    if len(parts) >= 2 and parts[-1] == "[key]":
        parts = parts[:-2]
    out: list[str | int] = []
    for part in parts:
        if isinstance(data, dict) and part not in data and data.get("type") == part:
            continue
        out.append(part)
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            data = None
    return tuple(out)


def problems_from(
    exc: ValidationError, data: Any, *, file: str | None = None, locate: Locate | None = None
) -> list[Problem]:
    """Every error of `exc` as the author reads it, in the order of the lines they are on, then those about keys
    missing (which have no line of their own: their mapping's is given); a misspelt required key is reported as the
    misspelling (`fold_misspelt_keys`)."""
    located: list[tuple[bool, int, Problem]] = []
    for err in fold_misspelt_keys(exc.errors(include_url=False)):
        loc = drop_tags(err["loc"], data)
        line = locate(loc) if locate else None
        problem = Problem(field_path(loc), _message(err), file, line)
        located.append((line is None or not _present(data, loc), line or 0, problem))
    return [problem for *_, problem in sorted(located, key=lambda entry: entry[:2])]


def _present(data: Any, loc: Sequence[str | int]) -> bool:
    """Whether the document holds a value at `loc` (an error about a key it lacks is located at its mapping)."""
    for part in loc:
        in_list = isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data)
        if not in_list and not (isinstance(data, dict) and part in data):
            return False
        data = data[part]
    return True


def _message(err: ErrorDetails) -> str:
    loc = err["loc"]
    if len(loc) >= 2 and loc[0] == "scorers" and isinstance(loc[1], int):  # a scorer spec parses itself
        from toolscore.scorers._spec import ScorerSpec  # the scorer union pulls in litellm: import on first use

        return error_message(err, ScorerSpec, skip=2)
    return error_message(err, Expectation)


def parse_expectation(
    data: Any,
    *,
    file: str | None = None,
    locate: Locate | None = None,
    stored: bool = False,
    privacy: PrivacyConfig | None = None,
) -> Expectation:
    """Validate one expectation document; raises `InvalidExpectation` listing every problem.

    `stored`: the document was read back from a store, and is not held to the size limits (`limits.py`).
    `privacy`: the settings runs are masked with; an argument rule they make uncheckable is refused
    (`check_privacy`).
    """
    if isinstance(data, Expectation):
        check_privacy(data, privacy, file=file, locate=locate)
        return data
    if not isinstance(data, dict):
        raise InvalidExpectation.single("", "an expectation is a mapping", file, locate(()) if locate else None)
    if not stored and (problem := document_problem(data)) is not None:  # before anything recurses into it
        loc, message = problem
        raise InvalidExpectation.single(field_path(loc), message, file, locate(loc) if locate else None)
    try:
        exp = Expectation.model_validate(data, context={STORED: True} if stored else None)
    except ValidationError as exc:
        raise InvalidExpectation(problems_from(exc, data, file=file, locate=locate)) from None
    if not stored:
        check_privacy(exp, privacy, file=file, locate=locate)
    return exp


def check_privacy(
    exp: Expectation, privacy: PrivacyConfig | None, *, file: str | None = None, locate: Locate | None = None
) -> None:
    """Refuse an argument rule that needs a raw value the privacy settings mask (`privacy_rules`), naming the
    rule's field, the key and the mask; nothing to check without settings that mask."""
    if privacy is None or not privacy.active:
        return
    from toolscore.collector.extract.privacy_rules import privacy_problems  # the extraction package: on first use

    problems = [
        Problem(field_path(loc), message, file, locate(loc) if locate else None)
        for i, scorer in enumerate(exp.scorers)
        for loc, message in (((("scorers", i, *sub), text) for sub, text in privacy_problems(scorer.scorer, privacy)))
    ]
    if problems:
        raise InvalidExpectation(problems)


def warn_if_unmatchable(expectation: Expectation, where: str = "") -> bool:
    """Log the easy mistake of an expectation with no selector (it matches no run); True when logged."""
    if not expectation.match.empty:
        return False
    at = f" ({where})" if where else ""
    _log.warning("expectation %r%s has no selector under `match`, so it matches no run", expectation.name, at)
    return True


def parse_stored(name: str, data: Any, version: int) -> Expectation:
    """A document read back from a store, as `Expectation`; one that does not validate is a stand-in.

    Stores outlive versions and hands: a newer toolscore may have written a scorer type this one does
    not know, or an operator edited a row. Raising would stop every reader at that row; the stand-in
    keeps the name and version (so a write can replace it), is disabled (it matches no run) and says
    what is wrong in its `toolscore.unreadable` label.
    """
    try:
        if not isinstance(data, dict):
            raise InvalidExpectation.single("", f"a stored expectation is a JSON object, not {type(data).__name__}")
        exp = parse_expectation({**data, "version": version}, stored=True)
        if exp.name != name:
            raise InvalidExpectation.single("name", f"the document is named {exp.name!r}, its row {name!r}")
        return exp
    except (InvalidExpectation, ValueError, TypeError) as exc:
        return _stand_in(name, version, str(exc))


class _Unreadable(Expectation):
    """The stand-in's own type, so that a disabled expectation someone wrote with the label is not one."""


def _stand_in(name: str, version: int, problem: str) -> Expectation:
    if len(problem) > _MAX_PROBLEM_CHARS:
        problem = problem[: _MAX_PROBLEM_CHARS - 3] + "..."
    labels = {UNREADABLE_LABEL: problem}
    # built without validation: the stored name may be what made it unreadable
    return _Unreadable.model_construct(name=name, version=version, enabled=False, labels=labels, match=MatchSpec())


def unreadable_problem(expectation: Expectation) -> str | None:
    """Why a stored expectation could not be read (it is a stand-in), or None when it is a real one."""
    return expectation.labels[UNREADABLE_LABEL] if isinstance(expectation, _Unreadable) else None
