"""Errors of the expectations registry, one class per outcome a caller must tell apart.

They map one-to-one onto gRPC status codes (`NotFound` → NOT_FOUND, `AlreadyExists` → ALREADY_EXISTS,
`VersionConflict` → FAILED_PRECONDITION, `InvalidExpectation` → INVALID_ARGUMENT, `ChangesCompacted` →
OUT_OF_RANGE), so the service layer never has to parse a message to choose one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "AlreadyExists",
    "ChangesCompacted",
    "InvalidExpectation",
    "MissingExtra",
    "NoRegistryTables",
    "NotFound",
    "Problem",
    "RegistryError",
    "StoreTimeout",
    "StoreUnavailable",
    "UnreadableFiles",
    "VersionConflict",
]


class RegistryError(Exception):
    """Base class: anything the registry refuses to do on purpose."""


class StoreUnavailable(RuntimeError):
    """The registry cannot use its store now (not read yet, or not answering): not a refusal, try later."""


class StoreTimeout(StoreUnavailable):
    """The store did not answer within its timeout: a lock held by another session, a hung server.

    Raised instead of waiting on, so that a store that hangs (rather than refusing) fails the poll and
    the API call in bounded time, the way an unreachable one does. The message names the store and the
    setting that bounds the wait; never the connection string, which may hold a password.
    """

    def __init__(self, store: str, timeout_s: float, setting: str, cause: str) -> None:
        super().__init__(f"the {store} did not answer within {timeout_s:g} s ({setting}): {cause}")
        self.store = store
        self.timeout_s = timeout_s
        self.setting = setting


class MissingExtra(RuntimeError):
    """The configuration names a part whose optional dependency is not installed (e.g. the PostgreSQL store
    without psycopg): one line naming the extra that brings it, instead of an ImportError's traceback."""

    def __init__(self, what: str, extra: str) -> None:
        super().__init__(f"{what} needs the {extra!r} extra: pip install 'toolscore[{extra}]'")
        self.extra = extra


class NoRegistryTables(RuntimeError):
    """A database opened read-only lacks the registry's tables: it holds no toolscore registry (or one under
    another table prefix). Raised from the catalog, before any query, so that a reader names what is missing
    instead of the driver's error about a query the user never wrote (PostgreSQL's `UndefinedTable ... LINE 1`)."""

    def __init__(self, prefix: str, missing: Sequence[str]) -> None:
        self.prefix = prefix
        self.missing = tuple(missing)
        super().__init__(
            f"no toolscore registry: no table {', '.join(self.missing)} (looked for tables prefixed {prefix!r})"
        )


class NotFound(RegistryError, KeyError):
    """No expectation of that name (or, for `history`, there never was one)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"expectation {self.name!r} not found"


class AlreadyExists(RegistryError):
    """A create (`expected_version=0`) found the name taken."""

    def __init__(self, name: str, version: int) -> None:
        super().__init__(name, version)
        self.name = name
        self.version = version

    def __str__(self) -> str:
        return f"expectation {self.name!r} already exists (version {self.version})"


class VersionConflict(RegistryError):
    """Optimistic concurrency: someone else changed the expectation since the caller read it."""

    def __init__(self, name: str, expected: int, actual: int) -> None:
        super().__init__(name, expected, actual)
        self.name = name
        self.expected = expected
        self.actual = actual

    def __str__(self) -> str:
        return f"expectation {self.name!r} is at version {self.actual}, not the expected {self.expected}"


class ChangesCompacted(RegistryError):
    """The changes after `seq` are no longer all in the log: the older ones were compacted away.

    The log keeps the last `changes_kept` changes (`RegistryConfig`), so a follower that far behind
    cannot catch up from it; it must read the live set again (list) and follow from the current `seq`.
    """

    def __init__(self, seq: int, compacted_seq: int) -> None:
        super().__init__(seq, compacted_seq)
        self.seq = seq
        self.compacted_seq = compacted_seq

    def __str__(self) -> str:
        return (
            f"the changes after seq {self.seq} are no longer all kept: the change log was compacted up to seq "
            f"{self.compacted_seq} (registry.changes_kept); list the expectations again, then watch from now "
            "(without since_seq)"
        )


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an expectation: where (file, line, field path) and what."""

    field: str
    message: str
    file: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = ":".join(str(p) for p in (self.file, self.line) if p is not None)
        field = self.field or "<root>"
        return f"{where}: {field}: {self.message}" if where else f"{field}: {self.message}"


class InvalidExpectation(RegistryError, ValueError):
    """An expectation (or a file of them) that does not validate. `problems` lists every error found.

    `field`, `file` and `line` are those of the first problem, for callers that report only one.
    """

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: Sequence[Problem] = tuple(problems) or (Problem("", "invalid expectation"),)
        super().__init__("; ".join(str(p) for p in self.problems))

    @classmethod
    def single(cls, field: str, message: str, file: str | None = None, line: int | None = None) -> InvalidExpectation:
        return cls([Problem(field, message, file, line)])

    @property
    def field(self) -> str:
        return self.problems[0].field

    @property
    def file(self) -> str | None:
        return self.problems[0].file

    @property
    def line(self) -> int | None:
        return self.problems[0].line


class UnreadableFiles(InvalidExpectation):
    """Expectation files of which one at least could not be read as YAML or JSON at all: missing, not UTF-8,
    not YAML, nested past the document limit. `problems` lists every problem of every file given.

    The command that was given such a file was given a bad argument (as it would be a path that does not
    exist), not a document the registry refused: `toolscore expectations apply` exits 2, as `toolscore
    serve` does for any bad file under `registry.files`.
    """
