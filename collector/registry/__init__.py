"""The expectations registry: which runs to score, and how.

The public API is what `__all__` lists: `Registry` (the in-process API: `from_file`, `put`, `get`, `list`,
`apply`, `match`, ...), its configuration, the expectation model, the errors a caller tells apart, and
`load_paths`/`parse_expectation` for expectation files and documents. Two subpackages carry the rest:
`toolscore.collector.registry.stores` (the storage plugin point and its stores) and
`toolscore.collector.registry.api` (the gRPC server and its client). Every module is private (`_`-prefixed).
The PostgreSQL store is imported only when configured, so that psycopg is needed only then.
"""

from __future__ import annotations

from toolscore.collector.registry._config import (
    MemoryStoreConfig,
    PostgresStoreConfig,
    RegistryConfig,
    SqliteStoreConfig,
    StoreConfig,
)
from toolscore.collector.registry._errors import (
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
from toolscore.collector.registry._files import load_paths
from toolscore.collector.registry._model import Expectation, ExpectationScorer, MatchSpec
from toolscore.collector.registry._planning import Applied, ApplyAction
from toolscore.collector.registry._registry import Registry
from toolscore.collector.registry._validation import parse_expectation

__all__ = [
    "AlreadyExists",
    "Applied",
    "ApplyAction",
    "ChangesCompacted",
    "Expectation",
    "ExpectationScorer",
    "InvalidExpectation",
    "MatchSpec",
    "MemoryStoreConfig",
    "NoRegistryTables",
    "NotFound",
    "PostgresStoreConfig",
    "Problem",
    "Registry",
    "RegistryConfig",
    "RegistryError",
    "SqliteStoreConfig",
    "StoreConfig",
    "StoreTimeout",
    "StoreUnavailable",
    "VersionConflict",
    "load_paths",
    "parse_expectation",
]
