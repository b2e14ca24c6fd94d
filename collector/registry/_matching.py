"""Which expectations apply to a run, found by dict lookups rather than a scan of all of them.

Each enabled expectation is filed under a compound key made of *all* its exact selectors (`equals`
or `in` conditions): its *shape* is the tuple of fields they read (say agent + `test_case.id`), its
keys the text values they accept (an `in` files it under each combination). Matching a run builds,
for each shape in the index, the tuple of the run's values for those fields and looks it up: one
dict lookup per shape — a handful, whatever the number of expectations — and the entries found
already satisfy every exact selector, so only their other selectors (regex, exists, contains) are
checked. Expectations with no exact selector are checked against every run.

Selectors are compiled to closures once, at build time. The index is immutable: the registry builds
a new one and swaps it, so a match in flight never sees a half-applied change.
"""

from __future__ import annotations

import itertools
import operator
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from toolscore.collector.registry._conditions import Condition, as_text
from toolscore.collector.registry._model import Expectation, MatchSpec
from toolscore.scorers._model import AgentRun

__all__ = ["MAX_KEYS_PER_EXPECTATION", "ExpectationIndex", "matches", "run_value"]

FieldId = tuple[str, ...]

MAX_KEYS_PER_EXPECTATION = 256
"""Cap on the combinations of `in` values one expectation is filed under; past it, the largest `in`
conditions are checked per candidate instead of being part of the key."""

_BAGGAGE_PREFIX = "baggage."
_COST = {"exists": 0, "equals": 1, "in": 1, "contains": 2, "regex": 3}
"""Cheap tests first, so a candidate that fails is usually rejected before any regex runs."""


def run_value(run: AgentRun, field: FieldId) -> Any:
    """The run's value for a selector field, None when absent (attributes fall back to `baggage.<key>`)."""
    kind = field[0]
    if kind in ("agent", "input"):
        return run.agent_name if kind == "agent" else run.input
    if kind == "resource":
        return run.resource.get(field[1])
    value = run.attributes.get(field[1])
    return run.attributes.get(_BAGGAGE_PREFIX + field[1]) if value is None else value


def matches(spec: MatchSpec, run: AgentRun) -> bool:
    """Every selector holds; a spec with no selector matches nothing. The reference the index must equal."""
    found = False
    for field, cond in spec.selectors():
        if not cond.holds(run_value(run, field)):
            return False
        found = True
    return found


def _getter(field: FieldId) -> Callable[[AgentRun], Any]:
    """`run_value` for one field, as a closure built once."""
    kind = field[0]
    if kind in ("agent", "input"):
        return operator.attrgetter("agent_name" if kind == "agent" else "input")
    key = field[1]
    if kind == "resource":
        return lambda run: run.resource.get(key)
    fallback = _BAGGAGE_PREFIX + key

    def attribute(run: AgentRun) -> Any:
        value = run.attributes.get(key)
        return run.attributes.get(fallback) if value is None else value

    return attribute


class _Entry:
    """An expectation with the selectors its key does not prove, compiled to (getter, test), cheapest first."""

    __slots__ = ("checks", "expectation", "name")

    def __init__(self, expectation: Expectation, keyed: Iterable[Condition] = ()) -> None:
        self.expectation = expectation
        self.name = expectation.name
        proved = {id(c) for c in keyed}
        rest = sorted(
            ((f, c) for f, c in expectation.match.selectors() if id(c) not in proved), key=lambda fc: _COST[fc[1].op]
        )
        self.checks = tuple((_getter(field), cond.compile()) for field, cond in rest)

    def holds(self, run: AgentRun) -> bool:
        for get, test in self.checks:  # noqa: SIM110 (a loop, not all(...): no generator per candidate)
            if not test(get(run)):
                return False
        return True


def _key_selectors(spec: MatchSpec) -> list[tuple[FieldId, Condition]]:
    """The exact selectors that make up the key: one per field, in field order, combinations capped."""
    by_field: dict[FieldId, Condition] = {}
    for field, cond in spec.selectors():
        if cond.exact_texts and (field not in by_field or len(cond.exact_texts) < len(by_field[field].exact_texts)):
            by_field[field] = cond
    chosen = sorted(by_field.items())
    while chosen and _combinations(chosen) > MAX_KEYS_PER_EXPECTATION:
        chosen.remove(max(chosen, key=lambda fc: len(fc[1].exact_texts)))
    return chosen


def _combinations(selectors: list[tuple[FieldId, Condition]]) -> int:
    count = 1
    for _, cond in selectors:
        count *= len(cond.exact_texts)
    return count


def _texts(value: Any) -> tuple[str, ...]:
    if type(value) is str:
        return (value,)
    if isinstance(value, list | tuple):
        return tuple({as_text(v) for v in value})
    return (as_text(value),)


Key = str | tuple[str, ...]
"""A shape of one field is keyed by the bare text, of several by the tuple of texts."""


class ExpectationIndex:
    """An immutable lookup structure over a set of expectations; `match` is safe from any thread."""

    __slots__ = ("_expectations", "_getters", "_scan", "_shapes")

    def __init__(self, expectations: Iterable[Expectation] = ()) -> None:
        self._expectations = tuple(sorted(expectations, key=lambda e: e.name))
        shapes: dict[tuple[FieldId, ...], dict[Key, list[_Entry]]] = defaultdict(lambda: defaultdict(list))
        scan: list[_Entry] = []
        for exp in self._expectations:
            if not exp.enabled or exp.match.empty:
                continue
            selectors = _key_selectors(exp.match)
            entry = _Entry(exp, (cond for _, cond in selectors))
            if not selectors:
                scan.append(entry)
                continue
            shape = tuple(field for field, _ in selectors)
            for key in itertools.product(*(sorted(cond.exact_texts) for _, cond in selectors)):
                shapes[shape][key[0] if len(key) == 1 else key].append(entry)
        fields = sorted({field for shape in shapes for field in shape})
        position = {field: i for i, field in enumerate(fields)}
        self._getters = tuple(_getter(field) for field in fields)
        self._shapes = tuple(
            (operator.itemgetter(*(position[f] for f in shape)), dict(keys), len(shape))
            for shape, keys in shapes.items()
        )
        self._scan = tuple(scan)

    @property
    def expectations(self) -> tuple[Expectation, ...]:
        """Every expectation the index was built from (disabled ones too), in name order."""
        return self._expectations

    def __len__(self) -> int:
        return len(self._expectations)

    def match(self, run: AgentRun) -> list[Expectation]:
        """Enabled expectations whose selectors all hold for the run, in name order."""
        values = [get(run) for get in self._getters]
        found: dict[str, Expectation] = {}
        # the common case, every value text: one C-level itemgetter and one dict lookup per shape
        plain = all(type(v) is str or v is None for v in values)
        for pick, keys, width in self._shapes:
            key = pick(values)
            if key is None or (width > 1 and None in key):
                continue
            for candidate in (key,) if plain else self._keys(key, width):
                for entry in keys.get(candidate, ()):
                    if entry.name not in found and entry.holds(run):
                        found[entry.name] = entry.expectation
        for entry in self._scan:
            if entry.holds(run):
                found[entry.name] = entry.expectation
        return [found[name] for name in sorted(found)] if len(found) > 1 else list(found.values())

    @staticmethod
    def _keys(key: Any, width: int) -> Iterable[Key]:
        """Keys for values that are not all text: numbers and booleans as text, lists element-wise."""
        if width == 1:
            return _texts(key)
        return itertools.product(*map(_texts, key))
