"""`FileSync`: the configured expectation files, applied into the store at start and when they change.

Files own the names they define: each is stored labelled `toolscore.source: files`, and a name the
files no longer define is deleted, also when it went while no collector ran (the store outlives the
process). Replicas sharing a store apply the same files at the same moments (start, a ConfigMap
update), so an apply that loses the race to another plans again against what the other stored. An
apply the store fails (it is unreachable) is left pending for the registry's poll to retry, since the
file watcher has already taken the new content as seen.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from toolscore.collector.forks import ForkSafeLock
from toolscore.collector.registry._errors import AlreadyExists, InvalidExpectation, NotFound, VersionConflict
from toolscore.collector.registry._files import load_paths
from toolscore.collector.registry._health import describe_error
from toolscore.collector.registry._model import Expectation
from toolscore.collector.registry._planning import Applied

if TYPE_CHECKING:
    from toolscore.collector.extract.privacy import PrivacyConfig

__all__ = ["APPLY_ATTEMPTS", "FILE_SOURCE_LABEL", "FileSync"]

FILE_SOURCE_LABEL = "toolscore.source"
"""Label `files` marks an expectation the configured files own: it is deleted when the files no longer
name it, even if that happened while no collector was running (the store outlives the process)."""

APPLY_ATTEMPTS = 5
"""How often a file apply that lost a race to another writer plans again before it gives up."""

_log = logging.getLogger("toolscore.registry")

Apply = Callable[[list[Expectation], set[str]], Applied]
"""`Registry._apply(expectations, prune)`: plan against the store and write in one transaction."""


class FileSync:
    """Loads `paths` and applies them through `apply`; `owned_in_store()` lists the names labelled as theirs."""

    def __init__(
        self,
        paths: list[str],
        apply: Apply,
        owned_in_store: Callable[[], set[str]],
        privacy: PrivacyConfig | None = None,
    ) -> None:
        self._paths = paths
        self._privacy = privacy
        self._apply = apply
        self._owned_in_store = owned_in_store
        self._names: set[str] = set()
        self._lock = ForkSafeLock()
        self.pending = False
        """The last apply failed on the store, not on the files: to be retried once the store reads again."""
        self.last_error: InvalidExpectation | None = None
        """The error of the last load that failed (the previous set stays); None after a good one."""

    def reload(self) -> Applied:
        """Load and apply; a bad set raises `InvalidExpectation` and leaves the store as it was."""
        with self._lock:
            try:
                expectations = load_paths(self._paths, privacy=self._privacy)
            except InvalidExpectation as exc:
                self.last_error = exc
                raise
            self.last_error = None
            owned = [e.model_copy(update={"labels": {**e.labels, FILE_SOURCE_LABEL: "files"}}) for e in expectations]
            for attempt in range(1, APPLY_ATTEMPTS + 1):
                try:
                    results = self._apply(owned, self._names | self._owned_in_store())
                    break
                except (VersionConflict, AlreadyExists, NotFound) as exc:
                    if attempt == APPLY_ATTEMPTS:
                        raise
                    _log.info("expectation files: %s (another replica applied them too); planning again", exc)
            self._names = {exp.name for exp in owned}
            self.pending = False
            return results

    def reload_quietly(self) -> None:
        """A reload from the watcher or the poll: errors are logged, and one of the store's is left pending."""
        try:
            results = self.reload()
        except InvalidExpectation as exc:
            self.pending = False
            _log.error("expectation files not reloaded, the previous set stays: %s", exc)
            return
        except Exception as exc:
            if not self.pending:
                _log.warning(
                    "expectation files not applied, the store failed (%s); applied once it can be read again",
                    describe_error(exc),
                )
            self.pending = True
            return
        changed = [f"{name} {action}" for name, action in results if action != "unchanged"]
        _log.info("expectation files reloaded: %s", ", ".join(changed) or "no change")
