"""What `Registry.apply` writes: every document validated first, then a plan against the live set.

Pure functions over values, so the registry only has to read the store, plan, and write the plan in
one transaction whose version checks make a concurrent edit fail it whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from toolscore.collector.registry._errors import InvalidExpectation, Problem
from toolscore.collector.registry._model import Expectation
from toolscore.collector.registry._validation import parse_expectation
from toolscore.collector.registry.stores._store import Write

if TYPE_CHECKING:
    from toolscore.collector.extract.privacy import PrivacyConfig

__all__ = ["Applied", "ApplyAction", "plan_apply", "validate_all"]

ApplyAction = Literal["created", "updated", "unchanged", "deleted"]
Applied = list[tuple[str, ApplyAction]]
"""What `apply` did, per name: `[("checkout-canary", "created"), ...]`."""


def validate_all(
    expectations: Iterable[Expectation | Mapping[str, Any]], privacy: PrivacyConfig | None = None
) -> list[Expectation]:
    """Parse every document; raises one `InvalidExpectation` with every problem (`[i].field`), names unique.

    `privacy`: the settings runs are masked with; an argument rule they make uncheckable is refused."""
    parsed: list[Expectation] = []
    problems: list[Problem] = []
    seen: set[str] = set()
    for i, item in enumerate(expectations):
        try:
            exp = parse_expectation(dict(item) if isinstance(item, Mapping) else item, privacy=privacy)
        except InvalidExpectation as exc:
            problems.extend(Problem(f"[{i}].{p.field}".rstrip("."), p.message, p.file, p.line) for p in exc.problems)
            continue
        if exp.name in seen:
            problems.append(Problem(f"[{i}].name", f"duplicate name {exp.name!r}"))
        seen.add(exp.name)
        parsed.append(exp)
    if problems:
        raise InvalidExpectation(problems)
    return parsed


def plan_apply(
    live: Mapping[str, Expectation], wanted: list[Expectation], prune: Iterable[str]
) -> tuple[Applied, list[Write]]:
    """The writes that make `live` hold `wanted` (unchanged ones left alone) without the `prune` names
    that are not wanted; each write expects the version `live` holds."""
    results: Applied = []
    writes: list[Write] = []
    for exp in wanted:
        current = live.get(exp.name)
        if current is not None and current.same_content(exp):
            results.append((exp.name, "unchanged"))
            continue
        writes.append(Write(exp.name, exp, current.version if current else 0))
        results.append((exp.name, "updated" if current else "created"))
    names = {exp.name for exp in wanted}
    for name in sorted(set(prune) - names):
        if name in live:
            writes.append(Write(name, None, live[name].version))
            results.append((name, "deleted"))
    return results, writes
