"""The registry when its store hangs rather than refusing: every call gives up in bounded time.

The hangs are real: another session holds a lock on the registry's tables (`LOCK TABLE` in a
PostgreSQL transaction left open, `BEGIN IMMEDIATE` on the SQLite file), as a migration or a stuck
`psql` would.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import psycopg
import pytest
from click.testing import CliRunner
from psycopg.conninfo import conninfo_to_dict

from tests.postgres import PostgresServer, postgres_url
from tests.registry_builders import doc, eventually, names, serve
from toolscore.collector.cli import main
from toolscore.collector.registry import (
    PostgresStoreConfig,
    Registry,
    RegistryConfig,
    SqliteStoreConfig,
    StoreTimeout,
    StoreUnavailable,
    parse_expectation,
)
from toolscore.collector.registry.api import RegistryClient
from toolscore.collector.registry.api._convert import expectation_to_proto
from toolscore.registry.v1 import registry_pb2 as pb
from toolscore.registry.v1 import registry_pb2_grpc as pb_grpc


@contextmanager
def postgres_lock(dsn: str, table: str) -> Iterator[None]:
    """Another session holding `table` locked, in a transaction left open until the block ends."""
    with psycopg.connect(dsn) as session:
        session.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE".encode())
        yield
        session.rollback()


@contextmanager
def sqlite_write_lock(path: Path) -> Iterator[None]:
    """Another connection holding a write transaction open on the file until the block ends."""
    session = sqlite3.connect(path, isolation_level=None)
    try:
        session.execute("BEGIN IMMEDIATE")
        yield
        session.rollback()
    finally:
        session.close()


def _postgres(dsn: str, query_timeout_s: float) -> RegistryConfig:
    store = PostgresStoreConfig(dsn=dsn, query_timeout_s=query_timeout_s)
    return RegistryConfig(store=store, poll_interval_s=0.05)


def test_a_locked_postgres_store_fails_the_poll_as_an_outage_logged_once(
    postgres_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    with Registry.from_config(_postgres(postgres_dsn, 0.3)) as replica:
        replica.put(doc("a"))
        with caplog.at_level(logging.DEBUG, "toolscore.registry"):
            with postgres_lock(postgres_dsn, "toolscore_changes"):
                assert eventually(lambda: replica.health.failures >= 3), "the poll gives up and tries again"
                assert names(replica) == ["a"], "matching goes on with what was read last"
            assert eventually(lambda: replica.health.error is None)
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1, errors
        assert (
            "registry store unreachable (StoreTimeout: the PostgreSQL registry store did not answer within 0.3 s"
            in (errors[0])
        )
        assert "registry.store.query_timeout_s" in errors[0]
        assert "registry store readable again" in caplog.text


def _timed_get(target: str, name: str, outcomes: list[tuple[float, BaseException | None]]) -> None:
    """`get` through the API; appends how long it took and what it raised."""
    started, raised = time.monotonic(), None
    with RegistryClient(target) as client:
        try:
            client.get(name)
        except StoreUnavailable as exc:
            raised = exc
    outcomes.append((time.monotonic() - started, raised))


def test_api_calls_on_a_locked_postgres_store_are_unavailable_each_within_about_twice_the_timeout(
    postgres_dsn: str,
) -> None:
    """Five calls at once: each waits at most the timeout for its turn and the timeout for its query."""
    with Registry.from_config(_postgres(postgres_dsn, 1.0)) as registry:
        registry.put(doc("a"))
        for server in serve(registry):
            outcomes: list[tuple[float, BaseException | None]] = []
            with postgres_lock(postgres_dsn, "toolscore_expectations"):
                calls = [threading.Thread(target=_timed_get, args=(server.target, "a", outcomes)) for _ in range(5)]
                for call in calls:
                    call.start()
                for call in calls:
                    call.join(30)
                request = pb.PutExpectationRequest(expectation=expectation_to_proto(parse_expectation(doc("b"))))
                with grpc.insecure_channel(server.target) as channel, pytest.raises(grpc.RpcError) as raw:
                    pb_grpc.ExpectationRegistryStub(channel).PutExpectation(request, timeout=30)
            assert len(outcomes) == 5
            assert max(took for took, _ in outcomes) < 3.5, outcomes  # one behind another, the last would take ~5 s
            message = "the PostgreSQL registry store did not answer within 1 s (registry.store.query_timeout_s)"
            assert all(message in str(raised) for _, raised in outcomes), outcomes
            assert raw.value.code() == grpc.StatusCode.UNAVAILABLE
            assert raw.value.details().startswith("the PostgreSQL registry store did not answer")
            with RegistryClient(server.target) as client:
                assert client.get("a").version == 1, "the store answers again once the lock is gone"


def test_a_sqlite_write_held_open_elsewhere_fails_a_write_in_time_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "registry.db"
    store = SqliteStoreConfig(path=str(path), busy_timeout_ms=300)
    with Registry(config=RegistryConfig(store=store), poll_interval_s=0.05) as registry:
        registry.put(doc("a"))
        with sqlite_write_lock(path):
            started = time.monotonic()
            with pytest.raises(StoreTimeout) as caught:
                registry.put(doc("b"))
            assert time.monotonic() - started < 3
            assert registry.get("a").version == 1, "reads go on beside the other writer (WAL)"
            for server in serve(registry):
                with RegistryClient(server.target) as client, pytest.raises(StoreUnavailable) as remote:
                    client.put(registry.get("a"))
        registry.put(doc("b"))
    assert str(caught.value).startswith(f"the SQLite registry store {path} did not answer within 0.3 s")
    assert "(registry.store.busy_timeout_ms): database is locked" in str(caught.value)
    assert str(remote.value).startswith(f"the SQLite registry store {path} did not answer within 0.3 s")


def test_the_cli_on_a_store_that_does_not_answer_exits_1_naming_it_without_a_traceback(
    postgres_dsn: str, tmp_path: Path
) -> None:
    """Reads work, the write waits on the lock on the table it updates: the default timeout ends it."""
    Registry.from_config(_postgres(postgres_dsn, 5.0)).close()
    expectation = tmp_path / "a.yaml"
    expectation.write_text(json.dumps(doc("a")))
    with psycopg.connect(postgres_dsn) as session:
        session.execute(b"LOCK TABLE toolscore_expectations IN EXCLUSIVE MODE")
        result = CliRunner().invoke(
            main, ["expectations", "apply", str(expectation), "--db", postgres_url(postgres_dsn)]
        )
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("Error: the PostgreSQL registry store did not answer within 5 s")
    assert "Traceback" not in result.output


# -- a server that stops answering at all ----------------------------------------------------------


def _within(timeout_s: float, call: Callable[[], object]) -> tuple[float, BaseException | None]:
    """How long `call` took and what it raised, run in a thread given `timeout_s` to return (a call that hangs
    fails the test, rather than the test hanging with it)."""
    outcomes: list[tuple[float, BaseException | None]] = []

    def timed() -> None:
        started, raised = time.monotonic(), None
        try:
            call()
        except BaseException as exc:
            raised = exc
        outcomes.append((time.monotonic() - started, raised))

    thread = threading.Thread(target=timed, daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert outcomes, f"the call still waits after {timeout_s} s"
    return outcomes[0]


@pytest.mark.integration
def test_a_frozen_postgres_server_fails_calls_in_bounded_time_and_they_work_once_it_thaws(
    own_postgres: PostgresServer,
) -> None:
    """SIGSTOP: the host acknowledges the query and no statement_timeout ever fires, since nothing runs."""
    store = PostgresStoreConfig(
        dsn=own_postgres.dsn, listen=False, connect_timeout_s=1, query_timeout_s=0.5, network_timeout_s=1
    )
    with Registry.from_config(RegistryConfig(store=store, poll_interval_s=60)) as registry:
        registry.put(doc("a"))
        with own_postgres.frozen():
            took, raised = _within(15, lambda: registry.get("a"))  # on the open connection
            reconnect_took, reconnect_raised = _within(15, lambda: registry.get("a"))  # on a new one
        assert eventually(lambda: _within(15, lambda: registry.get("a"))[1] is None), "it answers again"
        assert registry.get("a").version == 1
        assert registry.put(doc("b")).version == 1
    assert isinstance(raised, StoreTimeout), raised
    assert str(raised).startswith(
        "the PostgreSQL registry store did not answer within 1.5 s (registry.store.network_timeout_s): no reply"
    )
    assert took < 4
    assert isinstance(reconnect_raised, StoreTimeout), reconnect_raised
    assert str(reconnect_raised).startswith(
        "the PostgreSQL registry store did not answer within 2 s (registry.store.connect_timeout_s): connecting"
    )
    assert reconnect_took < 5


def test_a_server_that_accepts_and_never_answers_fails_the_start_within_connect_timeout() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        held: list[socket.socket] = []
        threading.Thread(target=lambda: held.append(listener.accept()[0]), daemon=True).start()
        dsn = f"host=127.0.0.1 port={listener.getsockname()[1]} user=toolscore dbname=postgres"
        config = RegistryConfig(store=PostgresStoreConfig(dsn=dsn, connect_timeout_s=2))
        took, raised = _within(15, lambda: Registry.from_config(config))
        for conn in held:
            conn.close()
    assert held, "the client connected"
    assert isinstance(raised, StoreTimeout), raised
    assert str(raised) == (
        "the PostgreSQL registry store did not answer within 2 s (registry.store.connect_timeout_s): "
        "connecting: ConnectionTimeout: connection timeout expired"
    )
    assert took < 5


def _sockets_to(port: int) -> dict[int, socket.socket]:
    """This process's TCP sockets connected to `port` on 127.0.0.1, by descriptor (each a duplicate, to close)."""
    found = {}
    for fd in map(int, os.listdir("/proc/self/fd")):
        try:
            sock = socket.socket(fileno=os.dup(fd))
        except OSError:  # not a socket, or gone meanwhile
            continue
        try:
            peer = sock.getpeername() if sock.type == socket.SOCK_STREAM else None
        except OSError:
            peer = None
        if isinstance(peer, tuple) and peer[1] == port:
            found[fd] = sock
        else:
            sock.close()
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's TCP socket options")
def test_postgres_connections_give_up_on_a_silent_peer_after_network_timeout_s(postgres_dsn: str) -> None:
    """Probed after 6 s idle, then every 2 s; the DSN's own `keepalives_count` kept; 12 s unacknowledged."""
    port = int(conninfo_to_dict(postgres_dsn)["port"])
    before = set(_sockets_to(port))
    store = PostgresStoreConfig(dsn=f"{postgres_dsn} keepalives_count=5", network_timeout_s=12)
    with Registry.from_config(RegistryConfig(store=store)):
        opened = {fd: sock for fd, sock in _sockets_to(port).items() if fd not in before}
        options = {
            (
                sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
                sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
                sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
                sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT),
            )
            for sock in opened.values()
        }
        for sock in opened.values():
            sock.close()
    assert len(opened) == 2, "the shared connection and the listener"
    assert options == {(1, 6, 2, 5, 12_000)}
