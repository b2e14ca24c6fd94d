"""`toolscore expectations`: manage the registry, on a running server or in the local store.

Every subcommand takes the same target options: `--server host:port` (with `--token`, `--tls-ca`)
talks to a registry server over gRPC; without it the store `--db` names is used directly: a SQLite
file, or the PostgreSQL database a `postgresql://` URL names (the one the collector replicas share). Both
paths raise the registry's own errors, so messages and exit codes are the same either way: 0 on
success, 1 when the registry refused (invalid, not found, conflict) or could not be reached, 2 when a file
`apply` was given cannot be read as YAML/JSON at all (not UTF-8, not YAML, nested past the limit), as for a
path that does not exist.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import json
import signal
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import click
import yaml

from toolscore.collector.cli.privacy_options import privacy_from_options, privacy_options

if TYPE_CHECKING:  # the registry and grpc are imported when a subcommand runs, so `toolscore --help` stays fast
    from toolscore.collector.extract.privacy import PrivacyConfig
    from toolscore.collector.registry._config import PostgresStoreConfig, SqliteStoreConfig
    from toolscore.collector.registry._errors import NoRegistryTables, Problem
    from toolscore.collector.registry._model import Expectation
    from toolscore.collector.registry._registry import ApplyAction, Registry
    from toolscore.collector.registry.api._client import RegistryClient
    from toolscore.collector.registry.stores._store import Change, ExpectationStore

__all__ = ["expectations_group"]

DEFAULT_DB = ".toolscore/registry.db"
_DB_HELP = "SQLite file, or postgresql:// URL of the database the collectors share."
_POSTGRES_SCHEMES = ("postgresql://", "postgres://")
_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")


class _Reads(Protocol):
    """What `list`, `get` and `history` use: a server's client, or the local store itself, opened read-only."""

    def list(self) -> builtins.list[Expectation]: ...
    def get(self, name: str) -> Expectation: ...
    def history_changes(self, name: str) -> builtins.list[Change]: ...


class _Writes(Protocol):
    """What `apply` and `delete` use: a server's client, or a registry over the local store."""

    def apply(self, expectations: list[Expectation]) -> list[tuple[str, ApplyAction]]: ...
    def delete(self, name: str, expected_version: int | None) -> int: ...


@dataclass
class _Local:
    registry: Registry

    def apply(self, expectations: list[Expectation]) -> list[tuple[str, ApplyAction]]:
        return self.registry.apply(expectations)

    def delete(self, name: str, expected_version: int | None) -> int:
        return self.registry.delete(name, expected_version).version


@dataclass(frozen=True)
class _Target:
    """Where the subcommand works: a server (`server` set) or the local store at `db`."""

    server: str | None
    token: str | None
    tls_ca: str | None
    db: str


def _target_options(command: Callable[..., None]) -> Callable[..., None]:
    """Adds `--server`, `--token`, `--tls-ca` and `--db`, handed to the command as one `target`."""

    @functools.wraps(command)
    def with_target(*args: Any, server: str | None, token: str | None, tls_ca: str | None, db: str, **kw: Any) -> None:
        command(*args, target=_Target(server, token, tls_ca, db), **kw)

    options = [
        click.option("--server", envvar="TOOLSCORE_REGISTRY_SERVER", help="host:port of a registry server."),
        click.option("--token", envvar="TOOLSCORE_REGISTRY_TOKEN", help="Bearer token for the server."),
        click.option(
            "--tls-ca", type=click.Path(exists=True, dir_okay=False), help="PEM CA to trust; connects with TLS."
        ),
        click.option(
            "--db",
            default=DEFAULT_DB,
            show_default=True,
            envvar="TOOLSCORE_REGISTRY_DB",
            help=f"Store used when no --server is given: {_DB_HELP}",
        ),
    ]
    for option in reversed(options):
        with_target = option(with_target)
    return with_target


def _store_config(db: str, *, listen: bool = True) -> SqliteStoreConfig | PostgresStoreConfig:
    """The store `--db` names: a PostgreSQL URL, or else a SQLite file."""
    from toolscore.collector.registry._config import PostgresStoreConfig, SqliteStoreConfig

    if db.startswith(_POSTGRES_SCHEMES):
        return PostgresStoreConfig(dsn=db, listen=listen)
    return SqliteStoreConfig(path=db)


def _open_local(db: str, open_: Callable[[], _T], *, create: bool) -> _T:
    """`open_()`, or a `click.ClickException` saying why the store `--db` names cannot be opened (not a traceback).

    Only the commands that write (`apply`, `serve`) create a SQLite store: a read at a mistyped path, or
    in another directory than the collector's, would otherwise answer with an empty registry and leave a
    new file behind.
    """
    if not create and not db.startswith(_POSTGRES_SCHEMES) and not Path(db).exists():
        raise click.ClickException(
            f"no registry store at {db}: give the collector's registry.store.path with --db (`toolscore serve` "
            f"keeps it in {DEFAULT_DB} under its working directory), or create one with `toolscore expectations apply`"
        )
    if not db.startswith(_POSTGRES_SCHEMES):
        from toolscore.collector.cli.store_files import store_kind

        if store_kind(db) == "score store":  # opening it would add the registry's tables to it
            raise click.ClickException(
                f"{db} is a toolscore score store (the scored runs `toolscore runs` reads), not a registry: give "
                f"the collector's registry.store.path with --db (`toolscore serve` keeps it in {DEFAULT_DB})"
            )
    try:
        return open_()
    except Exception as exc:
        from toolscore.collector.registry._errors import InvalidExpectation, MissingExtra, NoRegistryTables
        from toolscore.collector.registry._health import describe_error

        if isinstance(exc, InvalidExpectation):
            raise
        if isinstance(exc, MissingExtra):
            raise click.ClickException(str(exc)) from None
        if isinstance(exc, NoRegistryTables):
            raise click.ClickException(_no_registry(db, exc)) from None
        raise click.ClickException(f"cannot open {_store_name(db)}: {describe_error(exc)}") from None


def _no_registry(db: str, exc: NoRegistryTables) -> str:
    """A database a read found without the registry's tables: not an empty registry, and not the driver's error
    about the probe query. Says what was looked for (another `table_prefix` is a collector's own setting) and
    how a registry comes to be there."""
    if db.startswith(_POSTGRES_SCHEMES):
        from toolscore.collector.serve._config_yaml import redact_connection_string

        where = f"the PostgreSQL database {redact_connection_string(db)}"
    else:
        where = f"the SQLite file {db}"
    return (
        f"{where} holds no toolscore registry (no table {', '.join(exc.missing)}; looked for tables prefixed "
        f"{exc.prefix!r}): create one with `toolscore expectations apply --db ... FILE...`, or with `toolscore "
        f"serve` given this database as registry.store"
    )


def _store_name(db: str) -> str:
    """The store `--db` names, as its errors name it: the file, or the URL with any password redacted (these
    messages are pasted into tickets and CI logs)."""
    if db.startswith(_POSTGRES_SCHEMES):
        from toolscore.collector.serve._config_yaml import redact_connection_string

        return f"the PostgreSQL registry {redact_connection_string(db)}"
    return f"the registry store {db}"


def _driver_errors(db: str) -> tuple[type[Exception], ...]:
    """What the driver of the store `--db` names raises when a query fails once the store is open: a connection
    the server dropped, a damaged file, a disk that fails. Each is an answer about the store, not a bug of the
    command, so it is told in one line like the failures to open it; anything else keeps its traceback."""
    if db.startswith(_POSTGRES_SCHEMES):
        try:
            import psycopg
        except ImportError:  # without the extra, opening the store says which one (see `open_store`)
            return ()
        return (psycopg.Error,)
    import sqlite3

    return (sqlite3.Error,)


def _open_store_registry(db: str, *, create: bool = True, privacy: PrivacyConfig | None = None) -> Registry:
    """A registry over the store `--db` names, for the commands that write it (see `_open_local`)."""
    from toolscore.collector.registry._config import RegistryConfig
    from toolscore.collector.registry._registry import Registry

    config = RegistryConfig(store=_store_config(db))
    return _open_local(db, lambda: Registry(config=config, privacy=privacy), create=create)


def _open_store_read_only(db: str) -> ExpectationStore:
    """The store `--db` names, opened read-only, for the commands that only read it.

    No registry: it would read the whole store into memory, and its poll would compact the change log. And
    no write of any kind: a registry opened writable creates the tables (in a file that lacks them), waits
    behind a writer's open transaction for the write lock, and checkpoints a log a writer left into the file
    (removing it). One call has no change to wait for: no LISTEN.
    """
    from toolscore.collector.registry.stores import open_store

    return _open_local(db, lambda: open_store(_store_config(db, listen=False), read_only=True), create=False)


@contextmanager
def _refusals(target: _Target) -> Iterator[None]:
    """Every refusal of the block, the registry's or the server's, and every failure of a local store's driver,
    as one `click.ClickException` (exit code 1)."""
    from toolscore.collector.registry._errors import InvalidExpectation, RegistryError, StoreUnavailable
    from toolscore.collector.registry._health import describe_error
    from toolscore.collector.registry.api._client import RegistryCallError

    server = target.server
    driver_errors = () if server else _driver_errors(target.db)
    try:
        yield
    except driver_errors as exc:
        command = click.get_current_context().info_name
        raise click.ClickException(f"{command} failed on {_store_name(target.db)}: {describe_error(exc)}") from None
    except InvalidExpectation as exc:
        raise click.ClickException("\n".join(["invalid expectations:", *(f"  {p}" for p in exc.problems)])) from None
    except RegistryError as exc:
        raise click.ClickException(str(exc)) from None
    except StoreUnavailable as exc:  # the store (here, or the server's) did not answer in time
        raise click.ClickException(str(exc)) from None
    except RegistryCallError as exc:
        if exc.code == "UNAVAILABLE":
            raise click.ClickException(f"cannot reach the registry at {server}: {exc.message}") from None
        if exc.code == "UNAUTHENTICATED":  # the server's own hint speaks of gRPC metadata, not of this command
            given = "the token given was refused" if target.token else "no token was given"
            hint = f"{given}: pass the server's token with --token or TOOLSCORE_REGISTRY_TOKEN"
            raise click.ClickException(f"registry at {server}: UNAUTHENTICATED: {hint}") from None
        raise click.ClickException(f"registry at {server}: {exc}") from None


def _client(server: str, target: _Target) -> RegistryClient:
    from toolscore.collector.registry.api._client import RegistryClient

    return RegistryClient(server, token=target.token, tls_ca=target.tls_ca)


@contextmanager
def _backend(target: _Target, *, create: bool = False) -> Iterator[_Writes]:
    """The target to write, its refusals turned into `click.ClickException`s (`_refusals`).

    `create`: a local SQLite store that does not exist yet is created (for `apply`); otherwise it is an error.
    """
    with _refusals(target):
        if target.server:
            with _client(target.server, target) as client:
                yield client
        else:
            with _open_store_registry(target.db, create=create) as registry:
                yield _Local(registry)


@contextmanager
def _reader(target: _Target) -> Iterator[_Reads]:
    """The target to read, its refusals turned into `click.ClickException`s; a local store is only read
    (`_open_store_read_only`), and must exist."""
    with _refusals(target):
        if target.server:
            with _client(target.server, target) as client:
                yield client
        else:
            with closing(_open_store_read_only(target.db)) as store:
                yield store


def _output_option(default: str) -> Callable[[_F], _F]:
    choices = click.Choice(["table", "yaml", "json"])
    return click.option("-o", "--output", type=choices, default=default, show_default=True, help="Output format.")


def _scorer_summary(exp: Expectation) -> str:
    return ",".join(str(s.spec.get("type")) for s in exp.scorers) or "-"


def _match_summary(exp: Expectation) -> str:
    return json.dumps(exp.match.model_dump(), separators=(",", ":"), sort_keys=True) if not exp.match.empty else "-"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows)


def _documents(documents: list[dict[str, Any]], output: str) -> None:
    if output == "json":
        click.echo(json.dumps(documents, indent=2))
    else:
        click.echo(yaml.safe_dump_all(documents, sort_keys=False), nl=False)


def _emit(expectations: list[Expectation], output: str) -> None:
    if output != "table":
        _documents([e.to_dict() for e in expectations], output)
        return
    rows = [["NAME", "VERSION", "ENABLED", "SCORERS", "MATCH"]]
    for e in expectations:
        rows.append([e.name, str(e.version), str(e.enabled).lower(), _scorer_summary(e), _match_summary(e)])
    click.echo(_table(rows))


def _emit_history(changes: list[Change], output: str) -> None:
    """Each version as `get` prints it, and each deletion as `{name, version, deleted: true}` (its own row)."""
    if output != "table":
        _documents([_history_document(c) for c in changes], output)
        return
    rows = [["VERSION", "CHANGE", "ENABLED", "SCORERS"]]
    for c in changes:
        e = c.expectation
        cells = ["-", "-"] if c.kind == "deleted" else [str(e.enabled).lower(), _scorer_summary(e)]
        rows.append([str(c.version), c.kind, *cells])
    click.echo(_table(rows))


def _history_document(change: Change) -> dict[str, Any]:
    if change.kind == "deleted":
        return {"name": change.name, "version": change.version, "deleted": True}
    return change.expectation.to_dict()


@click.group("expectations")
def expectations_group() -> None:
    """Manage expectations: which runs to score, and how."""


class _UnreadableFiles(click.ClickException):
    """Files given that cannot be read as YAML/JSON: a bad argument (exit 2, as click's for a missing path)."""

    exit_code = 2


def _load(paths: tuple[str, ...], privacy: PrivacyConfig | None = None) -> builtins.list[Expectation]:
    """The expectations in `paths`; a file that cannot be read at all is named, one line per problem.

    `privacy`: the settings runs are masked with; an argument rule they make uncheckable is refused."""
    from toolscore.collector.registry._errors import UnreadableFiles
    from toolscore.collector.registry._files import load_paths

    try:
        return load_paths(paths, privacy=privacy)
    except UnreadableFiles as exc:
        raise _UnreadableFiles("\n".join(map(_file_problem, exc.problems))) from None


def _file_problem(problem: Problem) -> str:
    """`file:line: message`, with the field only when there is one (a file unread has none)."""
    where = ":".join(str(part) for part in (problem.file, problem.line) if part is not None)
    what = f"{problem.field}: {problem.message}" if problem.field else problem.message
    return f"{where}: {what}" if where else what


@expectations_group.command("apply")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@_target_options
@privacy_options
def apply_command(paths: tuple[str, ...], target: _Target, **privacy: Any) -> None:
    """Create or update the expectations in PATHS (YAML/JSON files or directories).

    Everything is validated before anything is written; prints what changed. With the privacy options (the
    settings `serve` masks runs with), a rule that needs the raw value of a masked argument is refused.
    """
    settings = privacy_from_options(**privacy)
    with _backend(target, create=True) as backend:
        results = backend.apply(_load(paths, settings))
    for name, action in results:
        click.echo(f"{name} {action}")
    counts = {a: sum(1 for _, b in results if b == a) for a in ("created", "updated", "unchanged")}
    click.echo(f"{len(results)} expectation(s): " + ", ".join(f"{n} {a}" for a, n in counts.items()), err=True)


@expectations_group.command("list")
@_output_option("table")
@_target_options
def list_command(output: str, target: _Target) -> None:
    """List the live expectations, in name order."""
    with _reader(target) as backend:
        found = backend.list()
    _emit(found, output)


@expectations_group.command("get")
@click.argument("name")
@_output_option("yaml")
@_target_options
def get_command(name: str, output: str, target: _Target) -> None:
    """Print one expectation (YAML by default, as a file would hold it, with its version: `apply` ignores that)."""
    with _reader(target) as backend:
        found = backend.get(name)
    _emit([found], output)


@expectations_group.command("delete")
@click.argument("name")
@click.option("--expected-version", type=click.IntRange(min=1), help="Delete only if this version is live.")
@_target_options
def delete_command(name: str, expected_version: int | None, target: _Target) -> None:
    """Delete an expectation; its history is kept."""
    with _backend(target) as backend:
        version = backend.delete(name, expected_version)
    click.echo(f"{name} deleted (version {version})")


@expectations_group.command("history")
@click.argument("name")
@_output_option("table")
@_target_options
def history_command(name: str, output: str, target: _Target) -> None:
    """List every stored version of an expectation, and its deletions, oldest first."""
    with _reader(target) as backend:
        changes = backend.history_changes(name)
    _emit_history(changes, output)


@expectations_group.command("serve")
@click.option("--listen", default="127.0.0.1:4320", show_default=True, help="host:port to serve the gRPC API on.")
@click.option("--db", default=DEFAULT_DB, show_default=True, envvar="TOOLSCORE_REGISTRY_DB", help=_DB_HELP)
@click.option("--token", envvar="TOOLSCORE_REGISTRY_TOKEN", help="Bearer token writes must carry.")
@click.option("--auth-reads", is_flag=True, help="Require the token for reads and watches too.")
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), help="PEM certificate; serves TLS.")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), help="PEM key of --tls-cert.")
@click.option(
    "--max-watches", type=click.IntRange(min=1), default=100, show_default=True, help="Watch streams served at once."
)
@privacy_options
def serve_command(
    *,
    listen: str,
    db: str,
    token: str | None,
    auth_reads: bool,
    tls_cert: str | None,
    tls_key: str | None,
    max_watches: int,
    **privacy: Any,
) -> None:
    """Serve the registry API over the local store until interrupted.

    With the privacy options (the settings `serve` masks runs with), a write whose rule needs the raw value of
    a masked argument is refused."""
    from pydantic import ValidationError

    from toolscore.collector.error_text import error_message
    from toolscore.collector.registry.api._service import RegistryServerConfig, serve_registry

    # checked here, in the options' names: the config model words them as its own keys
    host, _, port = listen.rpartition(":")
    if not port.isdigit():
        raise click.BadParameter(f"{listen!r} is not host:port, e.g. 127.0.0.1:4320", param_hint="--listen")
    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("--tls-cert and --tls-key go together: give both or neither")
    if auth_reads and not token:
        raise click.UsageError("--auth-reads needs --token")
    try:
        config = RegistryServerConfig(
            host=host or "127.0.0.1",
            port=int(port),
            token=token,
            auth_reads=auth_reads,
            tls_cert_file=tls_cert,
            tls_key_file=tls_key,
            max_watches=max_watches,
        )
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        hint = "--token" if error["loc"] == ("token",) else "--listen"
        raise click.BadParameter(error_message(error, RegistryServerConfig), param_hint=hint) from None
    settings = privacy_from_options(**privacy)

    from toolscore.collector.serve._bind_probe import bind_error

    if config.port and (unbound := bind_error(config.host, config.port)) is not None:  # before grpc logs its own line
        raise click.BadParameter(f"cannot listen on {config.host}:{config.port}: {unbound[0]}", param_hint="--listen")
    if token:
        access = f"{'reads and writes' if auth_reads else 'writes'} need the token"
    else:
        access = "no token: anyone who can connect may write"  # said aloud: --token "$UNSET" lands here

    async def serve() -> None:
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        with _open_store_registry(db, privacy=settings) as registry:
            await serve_registry(
                registry,
                config,
                stop=stop,
                on_start=lambda s: click.echo(f"registry API on {config.host}:{s.port} ({access})", err=True),
            )
        click.echo("registry API stopped", err=True)

    asyncio.run(serve())
