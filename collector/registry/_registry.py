"""`Registry`: the in-process API the pipeline, the gRPC service and the CLI use.

    files ─(FileWatcher: validate all, apply)─┐
    put / delete / apply ─────────────────────┼─→ ExpectationStore ─(changes_since)─→ snapshot → ExpectationIndex
    other replicas' writes ───────────────────┘                      (poll / NOTIFY)      └─→ subscribers

Consistency: the store is the only writer of truth. Every change — ours or another replica's — reaches
the in-memory snapshot the same way, by reading the store's change log from the last applied `seq`,
under one lock, in commit order, into the `Snapshot`; its new `ExpectationIndex` is built aside and
swapped in with one assignment, so `match` (lock-free) sees either the old set or the new one, never a
mix, and runs in flight keep the index they started with.

Across `os.fork()` (gunicorn `--preload`, Celery's prefork pool): the registry's locks are taken before
the fork (`ForkSafeLock`), so the child inherits a whole snapshot; the child starts a poll and a file
watcher of its own (it has none of the parent's threads), and the store gives it a connection of its own.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolscore.collector.forks import ForkSafeLock, on_fork
from toolscore.collector.registry._compaction import Compaction
from toolscore.collector.registry._config import MemoryStoreConfig, RegistryConfig
from toolscore.collector.registry._errors import ChangesCompacted, InvalidExpectation, StoreUnavailable
from toolscore.collector.registry._file_sync import FILE_SOURCE_LABEL, FileSync
from toolscore.collector.registry._files import FileWatcher, load_paths
from toolscore.collector.registry._health import StoreHealth
from toolscore.collector.registry._matching import ExpectationIndex
from toolscore.collector.registry._model import Expectation
from toolscore.collector.registry._planning import Applied, ApplyAction, plan_apply, validate_all
from toolscore.collector.registry._poll import StorePoll, WaitForChange
from toolscore.collector.registry._snapshot import Snapshot, Subscriber
from toolscore.collector.registry._validation import parse_expectation, warn_if_unmatchable
from toolscore.collector.registry.stores import open_store
from toolscore.collector.registry.stores._store import Change, ExpectationStore
from toolscore.scorers._model import AgentRun

if TYPE_CHECKING:
    from toolscore.collector.extract.privacy import PrivacyConfig

__all__ = ["FILE_SOURCE_LABEL", "Applied", "ApplyAction", "Registry"]

_log = logging.getLogger("toolscore.registry")


class Registry:
    """Expectations, kept in a store and matched against runs from an immutable in-memory index."""

    def __init__(
        self,
        store: ExpectationStore | None = None,
        *,
        config: RegistryConfig | None = None,
        poll_interval_s: float | None = None,
        wait_for_store: bool = False,
        privacy: PrivacyConfig | None = None,
    ) -> None:
        """Open (unless given) and read the store, then apply the configured files.

        `privacy`: the settings the runs it scores are masked with; a write (put, apply, files) whose argument
        rule they make uncheckable (a regex on a masked key) is refused (`check_privacy`).

        An unreachable store raises, unless `wait_for_store`: then the registry starts empty (`loaded`
        is False, reads and writes raise `StoreUnavailable`) and its poll reads the store, and applies
        the files, once it can. Invalid files raise `InvalidExpectation` either way.
        """
        self.config = config or RegistryConfig()
        self.privacy = privacy
        self._owns_store = store is None
        self._store = store
        self._lock = ForkSafeLock(reentrant=True)
        self._view = Snapshot()
        self._loaded = False
        self._compaction = Compaction(lambda: self.store, self.config.changes_kept)
        self._files = FileSync(self.config.files, self._apply, self._owned_by_files, privacy)
        self.health = StoreHealth()
        """Whether the poll can read the store; what the `toolscore.registry.sync.age` metric reports."""
        self._watcher: FileWatcher | None = None
        self._closed = False
        interval_s = poll_interval_s if poll_interval_s is not None else self.config.poll_interval_s
        self._poll = StorePoll(self._sync, self._wait_for_change, interval_s)
        # the watcher takes its baseline before the first load, so an edit racing the load is seen
        files = self.config.files
        watcher = FileWatcher(files, self._files.reload_quietly, interval_s=self.config.file_poll_interval_s)
        try:
            self._start(wait_for_store)
        except BaseException:
            self.close()
            raise
        self._poll.start()
        if files and self.config.watch_files:
            self._watcher = watcher.start()
        on_fork(after_in_child=self._after_fork_in_child)

    def _after_fork_in_child(self) -> None:
        """A forked child's own poll and file watch, from the snapshot and the file content the parent had: it
        follows the store and the files from there (a registry closed before the fork stays closed)."""
        if self._closed:
            return
        self._poll = self._poll.renewed().start()
        if self._watcher is not None:
            self._watcher = self._watcher.renewed().start()

    def _start(self, wait_for_store: bool) -> None:
        try:
            self._load()
            if self.config.files:
                self._files.reload()
        except InvalidExpectation:
            raise
        except Exception as exc:
            if not wait_for_store:
                raise
            if self.config.files:
                load_paths(self.config.files)  # bad files fail the start whether the store is there or not
                self._files.pending = True
            self.health.read_failed(exc, self._meanwhile())

    def _load(self) -> None:
        """Open the store (when this registry opens it) and read the snapshot whole."""
        if self._store is None:
            self._store = open_store(self.config.store)
        with self._lock:
            self._view.load(self._store)
            self._loaded = True

    @classmethod
    def from_config(cls, config: RegistryConfig) -> Registry:
        return cls(config=config)

    @classmethod
    def from_file(
        cls, *paths: str | Path, watch: bool = True, interval_s: float = 1.0, store: ExpectationStore | None = None
    ) -> Registry:
        """A registry fed by files (kept in memory unless a store is given); raises `InvalidExpectation`."""
        config = RegistryConfig(
            store=MemoryStoreConfig(),
            files=[str(p) for p in paths],
            watch_files=watch,
            file_poll_interval_s=interval_s,
        )
        return cls(store, config=config)

    # -- reads -------------------------------------------------------------------------------------

    def match(self, run: AgentRun) -> builtins.list[Expectation]:
        """Enabled expectations whose selectors all hold for the run, in name order. Lock-free."""
        return self._view.index.match(run)

    @property
    def index(self) -> ExpectationIndex:
        """The current immutable snapshot (hold on to it to match several runs against one set)."""
        return self._view.index

    @property
    def store(self) -> ExpectationStore:
        """The store; raises `StoreUnavailable` while a registry started with `wait_for_store` has not reached it."""
        store = self._store
        if store is None or not self._loaded:
            raise StoreUnavailable(f"the registry store has not been read yet ({self.health.error or 'connecting'})")
        return store

    @property
    def loaded(self) -> bool:
        """The store has been read: False only while a registry started with `wait_for_store` waits for it."""
        return self._loaded

    @property
    def sync_age_s(self) -> float:
        """Seconds since the registry last read its store: the expectations it matches are at most this old."""
        return self.health.sync_age_s()

    @property
    def unreadable(self) -> dict[str, str]:
        """Stored expectations this registry cannot read, by name, with why (the log names each once).

        A newer toolscore may store what this one does not know, or a hand edit may break a row: such a
        name keeps its last readable version here, or matches nothing if it never had one.
        """
        return dict(self._view.unreadable)

    @property
    def seq(self) -> int:
        """The `seq` of the last change applied to the snapshot."""
        return self._view.seq

    def get(self, name: str) -> Expectation:
        """From the store (authoritative); raises `NotFound`."""
        return self.store.get(name)

    def list(self, name_prefix: str = "", after: str = "", limit: int | None = None) -> builtins.list[Expectation]:
        """From the store, in name order; a page of it with `name_prefix`, `after` and `limit` (see
        `ExpectationStore.list`)."""
        return self.store.list(name_prefix, after, limit)

    def history(self, name: str) -> builtins.list[Expectation]:
        return self.store.history(name)

    def history_changes(self, name: str, after_seq: int = 0, limit: int | None = None) -> builtins.list[Change]:
        """Every change of one name, deletions included: see `ExpectationStore.history_changes`."""
        return self.store.history_changes(name, after_seq, limit)

    def changes_since(self, seq: int, limit: int | None = None) -> builtins.list[Change]:
        """See `ExpectationStore.changes_since`."""
        return self.store.changes_since(seq, limit)

    def latest_seq(self) -> int:
        """The store's last `seq` (the snapshot's, `seq`, may lag it by a poll)."""
        return self.store.latest_seq()

    # -- writes ------------------------------------------------------------------------------------

    def put(self, expectation: Expectation | Mapping[str, Any], expected_version: int | None = None) -> Expectation:
        """Validate and save; returns the stored expectation with its new version. See `ExpectationStore.put`."""
        exp = parse_expectation(
            dict(expectation) if isinstance(expectation, Mapping) else expectation, privacy=self.privacy
        )
        warn_if_unmatchable(exp)
        stored, _ = self.store.put(exp, expected_version)
        self.refresh_after_write()
        return stored

    def delete(self, name: str, expected_version: int | None = None) -> Change:
        change = self.store.delete(name, expected_version)
        self.refresh_after_write()
        return change

    def apply(self, expectations: Iterable[Expectation | Mapping[str, Any]], *, prune: Iterable[str] = ()) -> Applied:
        """Make the store hold these expectations: all are validated before anything is written.

        Unchanged ones are not rewritten (their version stays). Names in `prune` that are not among
        `expectations` are deleted. Everything is written in one transaction and each write checks the
        version read, so a concurrent edit raises `VersionConflict` and nothing is written.
        """
        given = list(expectations)
        parsed = validate_all(given, self.privacy)
        for raw, exp in zip(given, parsed, strict=True):
            if not isinstance(raw, Expectation):  # parsed ones come from files, which warned with file and line
                warn_if_unmatchable(exp)
        return self._apply(parsed, prune)

    def _apply(self, parsed: builtins.list[Expectation], prune: Iterable[str]) -> Applied:
        """Plan against what the store holds, then write the plan in one transaction.

        Each write checks the version the plan read, so an edit that lands in between makes the whole
        apply fail with `VersionConflict` (nothing written), never half of it.
        """
        results, writes = plan_apply({exp.name: exp for exp in self.store.list()}, parsed, prune)
        try:
            if writes:
                self.store.write_batch(writes)
        finally:
            self.refresh_after_write()
        return results

    # -- files ---------------------------------------------------------------------------------------

    def reload_files(self) -> Applied:
        """Load the configured files and apply them; a bad set raises and leaves the registry as it was."""
        return self._files.reload()

    @property
    def last_error(self) -> InvalidExpectation | None:
        """The error of the last file reload that failed (the previous set stays); None after a good one."""
        return self._files.last_error

    def _owned_by_files(self) -> set[str]:
        return {exp.name for exp in self.store.list() if exp.labels.get(FILE_SOURCE_LABEL) == "files"}

    # -- change feed ---------------------------------------------------------------------------------

    def subscribe(
        self, callback: Callable[[Change], None], on_gap: Callable[[ChangesCompacted], None] | None = None
    ) -> Callable[[], None]:
        """Call `callback(change)` for every change applied to the snapshot, in order; returns unsubscribe.

        Callbacks run on the thread that applied the change, under the registry's lock: keep them
        short (hand off to a queue). An exception in one is logged and does not stop the others.
        `on_gap` is called instead when the registry fell so far behind its store that the changes it
        missed were compacted away and it read the whole set again: the subscriber missed them too.
        """
        subscriber = Subscriber(callback, on_gap)
        with self._lock:
            self._view.subscribers.append(subscriber)

        def unsubscribe() -> None:
            with self._lock:
                if subscriber in self._view.subscribers:
                    self._view.subscribers.remove(subscriber)

        return unsubscribe

    def refresh(self) -> builtins.list[Change]:
        """Apply the store's changes since the last applied `seq` (see `Snapshot.catch_up`); returns them."""
        with self._lock:
            return self._view.catch_up(self.store)

    def compact(self) -> int:
        """Trim the store's change log to its last `changes_kept` changes now (the poll does so every minute);
        returns how many were removed. See `compaction.py`."""
        return self._compaction.run()

    def refresh_after_write(self) -> None:
        """Read a write back into the snapshot; if that read fails the write still stands, and the poll
        catches up (the caller is told about the write, not about the read)."""
        try:
            self.refresh()
        except Exception as exc:
            self.health.read_failed(exc, self._meanwhile())

    def _meanwhile(self) -> str:
        if not self._loaded:
            return "no run is matched until it has been read"
        age = self.health.sync_age_s()
        return f"matching goes on with the {len(self._view.expectations)} expectations read {age:.0f} s ago"

    def _wait_for_change(self) -> WaitForChange | None:
        """What the poll waits on: the store's change notifications, once it has been read, when it has them."""
        wait: WaitForChange | None = getattr(self._store, "wait_for_change", None) if self._loaded else None
        return wait

    def _sync(self) -> None:
        """One poll: read the store (whole the first time, else what changed), then do what waited for a read
        that works (trim the change log, apply files the store failed to take)."""
        try:
            if not self._loaded:
                self._load()
                _log.info("registry store read: %d expectations", len(self._view.expectations))
            elif self.store.latest_seq() != self._view.seq:
                self.refresh()
        except Exception as exc:
            self.health.read_failed(exc, self._meanwhile())
            return
        self.health.read_ok()
        self._compaction.run_if_due()
        if self._files.pending:
            self._files.reload_quietly()

    def close(self) -> None:
        """Stop watching and polling; close the store if this registry opened it. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._watcher is not None:
            self._watcher.stop()
        self._poll.stop()
        if self._owns_store and self._store is not None:
            self._store.close()

    def __enter__(self) -> Registry:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
