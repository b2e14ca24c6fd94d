"""The storage plugin point: a handful of methods, safe for concurrent use.

Every write is one change in an append-only log numbered by `seq`, in commit order. The log is both
the history (`history(name)`, or `history_changes(name)` with the deletions) and the feed replicas
follow (`changes_since(seq)`), so a replica that missed a NOTIFY or a poll still converges: it asks
for everything after the last `seq` it applied.

Versions: the first write of a name is version 1, and every later write — a deletion too — takes the
previous version + 1, so versions of a name never repeat even across delete and re-create.
Optimistic concurrency: `expected_version=None` writes unconditionally; `0` means "create, the name
must be free"; `n > 0` means "the live version must be n".

The log is compacted (`compact`) to its last changes, keeping the change that made each live
expectation's current version, so that it does not grow without end; a follower that fell behind
past the compacted point gets `ChangesCompacted` rather than a log with a hole in it.

A store may also offer `wait_for_change(timeout_s, stop_event) -> bool` (PostgreSQL does, over
LISTEN/NOTIFY); the registry then waits on it instead of sleeping between polls.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from toolscore.collector.registry._errors import AlreadyExists, NotFound, VersionConflict
from toolscore.collector.registry._model import Expectation

__all__ = ["CHANGE_PAGE_SIZE", "Change", "ChangeKind", "ExpectationStore", "Write", "check_expected_version"]

ChangeKind = Literal["created", "updated", "deleted"]

CHANGE_PAGE_SIZE = 500
"""The most changes one read of the log asks for, where the log is read a page at a time (a watch's replay,
the registry catching up): a log of any length is read in queries of bounded size and time, each well
within the store's query timeout."""


@dataclass(frozen=True)
class Change:
    """One committed write. `expectation` is the new value (for `deleted`: the last live value)."""

    seq: int
    kind: ChangeKind
    name: str
    version: int
    expectation: Expectation


@dataclass(frozen=True)
class Write:
    """One write of a batch: `expectation` to put, or `delete` a name, each with `put`/`delete`'s check."""

    name: str
    expectation: Expectation | None
    """None: delete `name`."""
    expected_version: int | None = None


@runtime_checkable
class ExpectationStore(Protocol):
    """Where expectations live. Implementations are safe for concurrent use by threads."""

    def get(self, name: str) -> Expectation:
        """The live expectation; raises `NotFound`."""
        ...

    def list(self, name_prefix: str = "", after: str = "", limit: int | None = None) -> list[Expectation]:
        """Live expectations in name order, by code point (as Python compares `str`, whatever a database's
        collation): those whose name starts with `name_prefix` and sorts after `after`, the first `limit` of
        them (None: all). A caller pages by passing the last name it got as `after`; a page costs the rows it
        holds, not the registry's size."""
        ...

    def put(self, expectation: Expectation, expected_version: int | None = None) -> tuple[Expectation, Change]:
        """Save whole or not at all; returns the stored value (with its new version) and the change.

        Raises `AlreadyExists` (`expected_version=0` and the name is live), `NotFound` (`n > 0`
        and the name is not live) or `VersionConflict` (the live version is not `n`).
        """
        ...

    def delete(self, name: str, expected_version: int | None = None) -> Change:
        """Delete the live expectation; raises `NotFound` or `VersionConflict`. History is kept."""
        ...

    def write_batch(self, writes: Sequence[Write]) -> builtins.list[Change]:
        """Apply every write or none (one transaction): the first that fails its version check raises."""
        ...

    def history(self, name: str) -> builtins.list[Expectation]:
        """Every saved version, oldest first (deletions are not versions of the content); `NotFound`."""
        ...

    def history_changes(self, name: str, after_seq: int = 0, limit: int | None = None) -> builtins.list[Change]:
        """Every change of one name, oldest first, deletions included (a deletion's `expectation` is the
        value it deleted); from `after_seq` on, the first `limit` (None: all) of them, for a caller that
        pages. `NotFound` when the name was never written (checked when `after_seq` is 0)."""
        ...

    def changes_since(self, seq: int, limit: int | None = None) -> builtins.list[Change]:
        """Changes with `seq` greater than the given one, in order; the first `limit` of them (None: all).

        Raises `ChangesCompacted` when some of them were compacted away (`seq` is below `compacted_seq`).
        """
        ...

    def compact(self, keep: int, max_removed: int) -> int:
        """Remove changes older than the last `keep`, except each live expectation's latest (its history
        must not be empty); at most the next `max_removed` of them, so one call stays short. Returns how
        many were removed: 0 once nothing is left to compact. Safe to run on several replicas at once."""
        ...

    def compacted_seq(self) -> int:
        """Changes up to this `seq` may have been removed (0 when none ever was)."""
        ...

    def latest_seq(self) -> int:
        """The `seq` of the last change, 0 when there is none."""
        ...

    def close(self) -> None: ...


def check_expected_version(name: str, live_version: int | None, expected_version: int | None) -> None:
    """The optimistic-concurrency rule every store applies; `live_version` is None when not live."""
    if expected_version is None:
        return
    if expected_version == 0:
        if live_version is not None:
            raise AlreadyExists(name, live_version)
        return
    if live_version is None:
        raise NotFound(name)
    if live_version != expected_version:
        raise VersionConflict(name, expected_version, live_version)
