"""A read-only look at a SQLite file another process may be writing, that leaves the file as it found it.

The stores are WAL databases. A connection opened `mode=ro` reads one, but cannot remove the `-wal` and
`-shm` files it creates beside it: only a connection that may write checkpoints and removes them when
it closes last. A look at an idle store (`toolscore runs` once the collector stopped) would then leave
two files behind that were not there, in a directory the user may not expect to change.

So when there is no `-wal` file (nobody has the database open, and no log is waiting to be
checkpointed), the file is opened for writing but with `query_only`, which makes SQLite refuse every
statement that would change it: the log it creates stays empty, and closing, as the last connection,
removes it and its `-shm`. A checkpoint of an empty log writes nothing. When a `-wal` file is there (a
collector running, or one that stopped without checkpointing), it is opened `mode=ro`, which never
checkpoints: what was there is left there, and the database is not written. A `-journal` file (a
rollback-mode writer's) is treated the same, since a writable connection would roll it back.

`immutable=1` would create no file at all, but reads without locks: a collector writing meanwhile could
hand the reader a half-written page. Removing the files after a `mode=ro` read could remove a
collector's that it opened in between, losing its log.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ["connect_read_only"]

_WRITERS_FILES = ("-wal", "-journal")
"""Left beside a database by a connection that writes it: when one is there, the look is `mode=ro`."""


def connect_read_only(path: str | Path, *, check_same_thread: bool = True) -> sqlite3.Connection:
    """A connection to the existing SQLite file at `path` that cannot change it (see the module docstring).

    Raises sqlite3.OperationalError when there is no file at `path`: none is created. `check_same_thread`
    is sqlite3's: False for a store that shares its connection between threads behind its own lock.
    """
    file = Path(path).resolve()
    writing = any(Path(f"{file}{suffix}").exists() for suffix in _WRITERS_FILES)
    uri = f"{file.as_uri()}?mode={'ro' if writing else 'rw'}"
    db = sqlite3.connect(uri, uri=True, check_same_thread=check_same_thread)
    try:
        db.execute("PRAGMA query_only = ON")
    except BaseException:
        db.close()
        raise
    return db
