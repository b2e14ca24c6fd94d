"""The expectations registry: which runs to score, and how.

`Registry` is the entry point; stores, files and matching are its parts. The PostgreSQL store is not
imported here so that psycopg is needed only when it is configured.
"""

from __future__ import annotations

from toolscore.collector.registry.conditions import Condition, as_text
from toolscore.collector.registry.config import (
    MemoryStoreConfig,
    PostgresStoreConfig,
    RegistryConfig,
    SqliteStoreConfig,
    StoreConfig,
)
from toolscore.collector.registry.errors import (
    AlreadyExists,
    ChangesCompacted,
    InvalidExpectation,
    NoRegistryTables,
    NotFound,
    Problem,
    RegistryError,
    StoreTimeout,
    StoreUnavailable,
    VersionConflict,
)
from toolscore.collector.registry.files import FileWatcher, load_file, load_paths
from toolscore.collector.registry.matching import MAX_KEYS_PER_EXPECTATION, ExpectationIndex, matches
from toolscore.collector.registry.memory_store import MemoryStore
from toolscore.collector.registry.model import Expectation, ExpectationScorer, MatchSpec
from toolscore.collector.registry.registry import FILE_SOURCE_LABEL, ApplyAction, Registry
from toolscore.collector.registry.sampling import sampled_scorers, should_sample
from toolscore.collector.registry.sqlite_store import SqliteStore
from toolscore.collector.registry.store import Change, ChangeKind, ExpectationStore, Write
from toolscore.collector.registry.stores import open_store
from toolscore.collector.registry.validation import field_path, parse_expectation

__all__ = [
    "FILE_SOURCE_LABEL",
    "MAX_KEYS_PER_EXPECTATION",
    "AlreadyExists",
    "ApplyAction",
    "Change",
    "ChangeKind",
    "ChangesCompacted",
    "Condition",
    "Expectation",
    "ExpectationIndex",
    "ExpectationScorer",
    "ExpectationStore",
    "FileWatcher",
    "InvalidExpectation",
    "MatchSpec",
    "MemoryStore",
    "MemoryStoreConfig",
    "NoRegistryTables",
    "NotFound",
    "PostgresStoreConfig",
    "Problem",
    "Registry",
    "RegistryConfig",
    "RegistryError",
    "SqliteStore",
    "SqliteStoreConfig",
    "StoreConfig",
    "StoreTimeout",
    "StoreUnavailable",
    "VersionConflict",
    "Write",
    "as_text",
    "field_path",
    "load_file",
    "load_paths",
    "matches",
    "open_store",
    "parse_expectation",
    "sampled_scorers",
    "should_sample",
]
