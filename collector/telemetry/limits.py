"""The cardinality bound on metric attributes.

A metric series per trace id, argument value or free text would grow without limit, so those never
become attributes. Names (scorers, expectations, agents, error types) come from the registry or from
spans and are usually few, but a misconfigured agent that puts a request id in its name must not blow
up the metrics backend: each capped attribute admits its first `max_values` distinct values, and any
later one is reported as `_other` (and counted). Enumerated attributes only admit their listed values.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from toolscore.collector.forks import on_fork
from toolscore.collector.telemetry.metrics_table import ATTRIBUTES, OTHER_VALUE
from toolscore.collector.utf8 import valid_utf8

__all__ = ["DEFAULT_MAX_ATTRIBUTE_VALUES", "AttributeLimiter"]

DEFAULT_MAX_ATTRIBUTE_VALUES = 100
"""Distinct values admitted per capped attribute before overflow to `_other`."""


class AttributeLimiter:
    """Maps attribute values to bounded ones; safe for concurrent use.

    `on_overflow(attribute)` is called once per replaced value, outside the lock, so the caller can
    count overflows without this module knowing about instruments.
    """

    def __init__(self, max_values: int, on_overflow: Callable[[str], None] | None = None) -> None:
        if max_values < 1:
            raise ValueError(f"max_attribute_values must be >= 1, got {max_values}")
        self._max_values = max_values
        self._on_overflow = on_overflow
        self._seen: dict[str, set[str]] = {name: set() for name, spec in ATTRIBUTES.items() if spec.capped}
        self._lock = threading.Lock()
        on_fork(after_in_child=self._after_fork)

    def _after_fork(self) -> None:
        """A forked child's lock: the parent's may be held by a thread the child does not have."""
        self._lock = threading.Lock()

    def bound(self, attribute: str, value: str) -> str:
        """The value to record for `attribute`: `value` itself (as valid UTF-8), or `_other` past the bound."""
        spec = ATTRIBUTES[attribute]
        if spec.values is not None:
            if value in spec.values:
                return value
        elif value in self._seen[attribute]:  # admitted before, so valid: the path of nearly every call
            return value
        else:
            value = valid_utf8(value)  # a lone surrogate would make the exporter drop every series of the batch
            if self._admit(attribute, value):
                return value
        if self._on_overflow is not None:
            self._on_overflow(attribute)
        return OTHER_VALUE

    def _admit(self, attribute: str, value: str) -> bool:
        seen = self._seen[attribute]
        if value in seen:
            return True
        with self._lock:
            if value in seen:
                return True
            if len(seen) >= self._max_values:
                return False
            seen.add(value)
            return True

    def admitted(self, attribute: str, value: str) -> bool:
        """Whether `value` already has series of its own under `attribute`; never admits it, never counts it."""
        return value in self._seen[attribute]

    def distinct(self, attribute: str) -> int:
        """How many distinct values `attribute` has admitted so far."""
        with self._lock:
            return len(self._seen[attribute])
