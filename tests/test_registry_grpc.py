"""The registry's gRPC API: a real server on 127.0.0.1 over a SQLite store, real clients."""

from __future__ import annotations

import json
import queue
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from tests.certs import self_signed_certificate
from tests.registry_builders import FlakyReads, ServerThread, collect_changes, serve, store_raw
from toolscore.collector.registry import (
    AlreadyExists,
    NotFound,
    Registry,
    RegistryConfig,
    SqliteStoreConfig,
    VersionConflict,
    parse_expectation,
)
from toolscore.collector.registry.api import RegistryCallError, RegistryClient, RegistryServerConfig
from toolscore.collector.registry.api._convert import expectation_to_proto, score_to_proto
from toolscore.collector.registry.api._service import WATCH_SEQ_KEY
from toolscore.collector.registry.stores import Change
from toolscore.registry.v1 import registry_pb2 as pb
from toolscore.registry.v1 import registry_pb2_grpc as pb_grpc
from toolscore.scorers import AgentRun, ScoreFailure, ToolCall

TOKEN = "s3cret-token"


def expectation(name: str = "weather", *, tool: str = "get_weather", **extra: Any) -> Any:
    doc = {
        "name": name,
        "match": {"agent": "weather-bot"},
        "scorers": [{"type": "tool_selection", "expected_tool": tool}],
        **extra,
    }
    return parse_expectation(doc)


def _registry(db: Path) -> Registry:
    return Registry(config=RegistryConfig(store=SqliteStoreConfig(path=str(db))), poll_interval_s=0.05)


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    reg = _registry(tmp_path / "registry.db")
    yield reg
    reg.close()


@pytest.fixture
def server(registry: Registry) -> Iterator[ServerThread]:
    yield from serve(registry)


@pytest.fixture
def client(server: ServerThread) -> Iterator[RegistryClient]:
    with RegistryClient(server.target) as c:
        yield c


@pytest.fixture
def stub(server: ServerThread) -> Iterator[Any]:
    with grpc.insecure_channel(server.target) as channel:
        yield pb_grpc.ExpectationRegistryStub(channel)


def _status_of(exc: grpc.RpcError) -> status_pb2.Status:
    for key, value in exc.trailing_metadata():
        if key == "grpc-status-details-bin":
            return status_pb2.Status.FromString(value)
    raise AssertionError("no status details")


# -- every RPC -----------------------------------------------------------------------------------------


def test_a_put_is_answered_as_written_when_only_reading_it_back_fails(tmp_path: Path) -> None:
    """The write committed; the server's own read of the change log failed (disk, network) after it."""
    store = FlakyReads(tmp_path / "registry.db")
    with Registry(store, poll_interval_s=0.05) as registry:
        for server in serve(registry):
            store.failing = True
            with RegistryClient(server.target) as client:
                stored, created = client.put(expectation())
            assert (stored.version, created) == (1, True)
    store.close()


def test_put_assigns_versions_and_get_returns_the_stored_expectation(client: RegistryClient) -> None:
    first, created = client.put(expectation())
    second, created_again = client.put(expectation(tool="get_forecast"))
    assert (first.version, created) == (1, True)
    assert (second.version, created_again) == (2, False)
    got = client.get("weather")
    assert got.version == 2
    assert got.to_dict(with_version=False) == expectation(tool="get_forecast").to_dict(with_version=False)


def test_list_is_in_name_order_and_filters_by_prefix(client: RegistryClient) -> None:
    for name in ("b.two", "a.one", "b.one"):
        client.put(expectation(name))
    assert [e.name for e in client.list()] == ["a.one", "b.one", "b.two"]
    assert [e.name for e in client.list("b.")] == ["b.one", "b.two"]


def test_list_pages_follow_the_token_in_name_order(registry: Registry, stub: Any) -> None:
    registry.apply([expectation(f"e{i:02d}") for i in range(60)])
    pages, token = [], ""
    while True:
        reply = stub.ListExpectations(pb.ListExpectationsRequest(name_prefix="e", page_size=25, page_token=token))
        pages.append([e.name for e in reply.expectations])
        token = reply.next_page_token
        if not token:
            break
    assert [len(page) for page in pages] == [25, 25, 10]
    assert [name for page in pages for name in page] == [f"e{i:02d}" for i in range(60)]
    whole = stub.ListExpectations(pb.ListExpectationsRequest())
    assert (len(whole.expectations), whole.next_page_token) == (60, ""), "page_size 0: all at once, as before"


def test_list_of_more_than_a_message_holds_reaches_the_client_whole(registry: Registry, client: RegistryClient) -> None:
    """2,000 expectations of 2.8 KB: 5.5 MB, over the 4 MiB a gRPC client receives in one message."""
    expected = [{"name": f"tool-{j}", "args": {"query": "x" * 20}} for j in range(40)]
    registry.apply(
        [
            {
                "name": f"e{i:04d}",
                "match": {"agent": f"a{i}"},
                "scorers": [{"type": "trajectory", "expected": expected}],
            }
            for i in range(2000)
        ]
    )
    listed = client.list()
    assert [e.name for e in listed] == [f"e{i:04d}" for i in range(2000)]


def test_a_negative_page_size_is_invalid_argument(stub: Any) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        stub.ListExpectations(pb.ListExpectationsRequest(page_size=-1))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "page_size" in caught.value.details()


def test_delete_removes_it_and_history_keeps_every_version(client: RegistryClient) -> None:
    client.put(expectation())
    client.put(expectation(tool="get_forecast"))
    assert client.delete("weather") == 3
    with pytest.raises(NotFound):
        client.get("weather")
    history = client.history("weather")
    assert [e.version for e in history] == [1, 2]
    assert [e.scorers[0].spec["expected_tool"] for e in history] == ["get_weather", "get_forecast"]
    changes = client.history_changes("weather")
    assert [(c.kind, c.version, c.expectation.version) for c in changes] == [
        ("created", 1, 1),
        ("updated", 2, 2),
        ("deleted", 3, 2),
    ]


def test_scorer_params_keep_their_json_types_through_the_struct(client: RegistryClient) -> None:
    doc = {
        "name": "f1",
        "labels": {"owner": "search-team"},
        "enabled": False,
        "match": {"attributes": {"tenant.id": {"regex": "^t-"}}, "service": ["api", 3]},
        "scorers": [{"type": "f1", "expected": [{"name": "search", "args": {"k": 3}}], "sample_rate": 0.25}],
    }
    stored, _ = client.put(parse_expectation(doc))
    assert stored.to_dict(with_version=False) == parse_expectation(doc).to_dict(with_version=False)
    assert type(stored.scorers[0].spec["expected"][0]["args"]["k"]) is int
    assert stored.enabled is False


def test_integers_beyond_a_double_travel_exactly_in_params_json(client: RegistryClient, stub: Any) -> None:
    """A Struct number is a double: 1234567890123456789 arrived as ...768, and re-applying it said unchanged."""
    big = 1234567890123456789
    doc = {
        "name": "orders",
        "match": {"agent": "shop"},
        "scorers": [{"type": "f1", "expected": [{"name": "refund", "args": {"order_id": big}}]}],
    }
    stored, _ = client.put(parse_expectation(doc))
    for read in (stored, client.get("orders"), client.list()[0]):
        assert read.scorers[0].spec["expected"][0]["args"]["order_id"] == big
    answer = stub.GetExpectation(pb.GetExpectationRequest(name="orders"), timeout=10)
    (spec,) = answer.expectation.scorers
    assert json.loads(spec.params_json)["expected"][0]["args"]["order_id"] == big
    assert spec.params.fields["expected"].list_value.values[0].struct_value.fields["args"] is not None  # both filled


def test_params_json_that_is_not_an_object_is_invalid_argument_naming_it(stub: Any) -> None:
    msg = pb.Expectation(name="x")
    msg.match.agent.regex = "weather"
    msg.scorers.add(type="tool_selection", params_json='["expected_tool"]')
    with pytest.raises(grpc.RpcError) as caught:
        stub.PutExpectation(pb.PutExpectationRequest(expectation=msg), timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details().startswith("scorers[0].params_json: must be a JSON object, got list")


def test_validate_only_checks_but_stores_nothing(client: RegistryClient, registry: Registry) -> None:
    checked, created = client.put(expectation(), validate_only=True)
    assert (checked.version, created) == (0, True)
    with pytest.raises(NotFound):
        client.get("weather")
    assert registry.store.latest_seq() == 0


# -- error codes -----------------------------------------------------------------------------------------


def _put_raw(stub: Any, doc: dict[str, Any]) -> grpc.RpcError:
    msg = pb.Expectation(name=doc["name"])
    msg.match.agent.regex = doc.get("regex", "weather")
    msg.scorers.add(type=doc.get("type", "tool_selection")).params.update(doc.get("params", {}))
    with pytest.raises(grpc.RpcError) as caught:
        stub.PutExpectation(pb.PutExpectationRequest(expectation=msg), timeout=10)
    return caught.value


def test_bad_regex_is_invalid_argument_naming_the_field(stub: Any) -> None:
    err = _put_raw(stub, {"name": "x", "regex": "(unclosed", "params": {"expected_tool": "a"}})
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details().startswith("match.agent: bad regex '(unclosed'")
    bad = error_details_pb2.BadRequest()
    assert _status_of(err).details[0].Unpack(bad)
    assert [v.field for v in bad.field_violations] == ["match.agent"]


def test_unknown_scorer_type_is_invalid_argument_naming_the_scorer(stub: Any) -> None:
    err = _put_raw(stub, {"name": "x", "type": "psychic"})
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details().startswith("scorers[0]: unknown type 'psychic'; known types: tool_selection, trajectory,")


def test_bad_scorer_params_are_invalid_argument_naming_the_param(client: RegistryClient, stub: Any) -> None:
    err = _put_raw(
        stub, {"name": "x", "type": "trajectory", "params": {"expected": [{"name": "a"}], "mode": "sideways"}}
    )
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details().startswith("scorers[0].mode: expected 'exact', 'flexible',")
    assert err.details().endswith(", got 'sideways'")
    with pytest.raises(NotFound):
        client.get("x")


def test_type_inside_params_is_refused(stub: Any) -> None:
    err = _put_raw(stub, {"name": "x", "params": {"type": "f1", "expected_tool": "a"}})
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details().startswith("scorers[0].params.type:")


def test_invalid_expectation_reaches_the_client_with_every_field_path(client: RegistryClient, stub: Any) -> None:
    msg = expectation_to_proto(expectation())
    msg.name = "has space"
    msg.match.agent.regex = "["
    with pytest.raises(grpc.RpcError) as caught:
        stub.PutExpectation(pb.PutExpectationRequest(expectation=msg), timeout=10)
    bad = error_details_pb2.BadRequest()
    _status_of(caught.value).details[0].Unpack(bad)
    assert [v.field for v in bad.field_violations] == ["name", "match.agent"]


def test_an_oversized_name_is_invalid_argument_naming_its_length_and_the_limit(stub: Any) -> None:
    err = _put_raw(stub, {"name": "n" * 300, "params": {"expected_tool": "a"}})
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details() == "name: is 300 characters long, over the limit of 256"


def test_a_stored_document_over_the_limits_still_reaches_a_client(tmp_path: Path) -> None:
    """Written before the limits: the server reads it, and the client does not refuse what it answers."""
    store_raw(tmp_path / "registry.db", "n" * 300, {"name": "n" * 300, "labels": {"owner": "o" * 2000}})
    with _registry(tmp_path / "registry.db") as registry:
        for server in serve(registry):
            with RegistryClient(server.target) as client:
                assert [e.name for e in client.list()] == ["n" * 300]
                assert client.get("n" * 300).labels["owner"] == "o" * 2000


@pytest.mark.parametrize(
    ("call", "arg"),
    [("GetExpectation", pb.GetExpectationRequest), ("GetExpectationHistory", pb.GetExpectationHistoryRequest)],
)
def test_unknown_name_is_not_found(stub: Any, call: str, arg: Any) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        getattr(stub, call)(arg(name="nope"), timeout=10)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert caught.value.details() == "expectation 'nope' not found"


def test_deleting_an_unknown_name_is_not_found(client: RegistryClient) -> None:
    with pytest.raises(NotFound) as caught:
        client.delete("nope")
    assert caught.value.name == "nope"


# -- optimistic concurrency ------------------------------------------------------------------------------


def test_create_of_a_taken_name_is_already_exists(client: RegistryClient, stub: Any) -> None:
    client.put(expectation())
    request = pb.PutExpectationRequest(expectation=expectation_to_proto(expectation(tool="x")), expected_version=0)
    with pytest.raises(grpc.RpcError) as caught:
        stub.PutExpectation(request, timeout=10)
    assert caught.value.code() == grpc.StatusCode.ALREADY_EXISTS
    with pytest.raises(AlreadyExists) as typed:
        client.put(expectation(tool="x"), expected_version=0)
    assert typed.value.version == 1


def test_stale_version_is_failed_precondition_and_writes_nothing(client: RegistryClient, stub: Any) -> None:
    client.put(expectation())
    client.put(expectation(tool="b"))
    request = pb.PutExpectationRequest(expectation=expectation_to_proto(expectation(tool="c")), expected_version=1)
    with pytest.raises(grpc.RpcError) as caught:
        stub.PutExpectation(request, timeout=10)
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert caught.value.details() == "expectation 'weather' is at version 2, not the expected 1"
    with pytest.raises(VersionConflict) as typed:
        client.put(expectation(tool="c"), expected_version=1)
    assert (typed.value.expected, typed.value.actual) == (1, 2)
    assert client.get("weather").scorers[0].spec["expected_tool"] == "b"
    assert len(client.history("weather")) == 2


def test_apply_through_the_server_reports_each_name_and_prunes(client: RegistryClient) -> None:
    assert client.apply([expectation("a"), expectation("b")]) == [("a", "created"), ("b", "created")]
    assert client.apply([expectation("a"), expectation("b", tool="x")], prune=["a", "b", "gone", "never"]) == [
        ("a", "unchanged"),
        ("b", "updated"),
    ]
    client.put(expectation("gone"))
    assert client.apply([expectation("a")], prune=["b", "gone"]) == [
        ("a", "unchanged"),
        ("b", "deleted"),
        ("gone", "deleted"),
    ]
    assert [(e.name, e.version) for e in client.list()] == [("a", 1)]


def test_apply_through_the_server_validates_all_and_writes_nothing_on_a_bad_one(
    client: RegistryClient, stub: Any
) -> None:
    bad = expectation_to_proto(expectation("c"))
    bad.match.agent.regex = "["
    request = pb.ApplyExpectationsRequest(expectations=[expectation_to_proto(expectation("a")), bad])
    with pytest.raises(grpc.RpcError) as caught:
        stub.ApplyExpectations(request, timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    violations = error_details_pb2.BadRequest()
    _status_of(caught.value).details[0].Unpack(violations)
    assert [v.field for v in violations.field_violations] == ["[1].match.agent"]
    assert client.list() == []


def test_matching_version_writes(client: RegistryClient) -> None:
    client.put(expectation())
    stored, _ = client.put(expectation(tool="b"), expected_version=1)
    assert stored.version == 2


@pytest.mark.parametrize(
    "request_",
    [
        pb.PutExpectationRequest(expectation=expectation_to_proto(expectation()), expected_version=-1),
        pb.DeleteExpectationRequest(name="weather", expected_version=0),
    ],
    ids=["put", "delete"],
)
def test_an_impossible_expected_version_is_invalid_argument(client: RegistryClient, stub: Any, request_: Any) -> None:
    client.put(expectation())
    call = stub.PutExpectation if isinstance(request_, pb.PutExpectationRequest) else stub.DeleteExpectation
    with pytest.raises(grpc.RpcError) as caught:
        call(request_, timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details().startswith("expected_version: must be")
    assert client.get("weather").version == 1


def test_delete_with_a_stale_version_is_refused(client: RegistryClient) -> None:
    client.put(expectation())
    client.put(expectation(tool="b"))
    with pytest.raises(VersionConflict):
        client.delete("weather", expected_version=1)
    assert client.get("weather").version == 2


# -- watch ---------------------------------------------------------------------------------------------


def test_watch_streams_changes_made_by_another_client(server: ServerThread) -> None:
    got: queue.Queue[Change] = queue.Queue()
    with RegistryClient(server.target) as watcher, RegistryClient(server.target) as writer:
        watch = watcher.watch()
        assert watch.since_seq == 0
        thread = collect_changes(watch, got)
        writer.put(expectation())
        writer.put(expectation(tool="b"))
        writer.delete("weather")
        changes = [got.get(timeout=10) for _ in range(3)]
        watch.cancel()
        thread.join(10)
    assert [(c.kind, c.version) for c in changes] == [("created", 1), ("updated", 2), ("deleted", 3)]
    assert changes[1].expectation.scorers[0].spec["expected_tool"] == "b"
    assert [c.seq for c in changes] == sorted(c.seq for c in changes)


def test_watch_since_seq_replays_the_backlog_then_follows(client: RegistryClient) -> None:
    client.put(expectation("a"))
    client.put(expectation("b"))
    got: queue.Queue[Change] = queue.Queue()
    watch = client.watch(since_seq=1)
    assert watch.since_seq == 1
    thread = collect_changes(watch, got)
    first = got.get(timeout=10)
    client.put(expectation("c"))
    second = got.get(timeout=10)
    watch.cancel()
    thread.join(10)
    assert [(first.name, first.seq), (second.name, second.seq)] == [("b", 2), ("c", 3)]
    assert got.empty()


def test_a_watch_that_falls_behind_is_ended_with_where_to_resume(registry: Registry) -> None:
    """A burst far larger than the watch's queue (one apply of 200): the stream sends what it holds, then says
    where to start again; resuming there misses nothing and repeats nothing."""
    for server in serve(registry, watch_queue_size=5):
        with RegistryClient(server.target) as client:
            watch = client.watch()
            registry.apply([expectation(f"e{i:03d}") for i in range(200)])
            seqs: list[int] = []
            with pytest.raises(RegistryCallError) as caught:
                seqs.extend(change.seq for change in watch)
            assert caught.value.code == "RESOURCE_EXHAUSTED"
            resume = re.search(r"since_seq=(\d+)", caught.value.message)
            assert resume is not None, caught.value.message
            assert int(resume.group(1)) == (seqs[-1] if seqs else 0)
            with client.watch(since_seq=int(resume.group(1))) as again:
                for change in again:
                    seqs.append(change.seq)
                    if len(seqs) == 200:
                        break
            assert seqs == list(range(1, 201))
            assert server.server is not None
            assert server.server.servicer.watches_cut == 1


def test_watch_sees_a_change_another_replica_wrote_to_the_shared_store(server: ServerThread, tmp_path: Path) -> None:
    got: queue.Queue[Change] = queue.Queue()
    with RegistryClient(server.target) as watcher:
        watch = watcher.watch()
        thread = collect_changes(watch, got)
        other = _registry(tmp_path / "registry.db")
        try:
            other.put(expectation("from-replica"))
        finally:
            other.close()
        change = got.get(timeout=10)
        watch.cancel()
        thread.join(10)
    assert (change.kind, change.name) == ("created", "from-replica")


def test_a_watch_waiting_for_the_registry_lock_does_not_stall_other_calls(
    registry: Registry, server: ServerThread, stub: Any
) -> None:
    """A subscriber that takes its time holds the registry's lock, as a poll does while its store is slow to
    answer: a watch opened meanwhile waits for it off the event loop, and the server answers other calls."""
    registry.put(expectation("a"))
    holding, release = threading.Event(), threading.Event()

    def slow(change: Change) -> None:
        holding.set()
        release.wait(30)

    unsubscribe = registry.subscribe(slow)
    writer = threading.Thread(target=registry.put, args=(expectation("b"),), daemon=True)
    writer.start()  # its read-back tells `slow`, under the registry's lock, until released
    assert holding.wait(10)
    watching: queue.Queue[Any] = queue.Queue()
    with grpc.insecure_channel(server.target) as channel:
        watch = pb_grpc.ExpectationRegistryStub(channel).WatchExpectations(pb.WatchExpectationsRequest())
        threading.Thread(target=lambda: watching.put(watch.initial_metadata()), daemon=True).start()
        try:
            answered = []
            for _ in range(10):  # the watch reaches the server within these; each call after it must answer
                reply = stub.GetExpectation(pb.GetExpectationRequest(name="a"), timeout=2)
                answered.append(reply.expectation.version)
                time.sleep(0.05)
            assert watching.empty(), "the watch subscribed while the registry's lock was held"
        finally:
            release.set()
            unsubscribe()
        writer.join(10)
        assert dict(watching.get(timeout=10))[WATCH_SEQ_KEY] == "2", "subscribed once the lock was free"
        watch.cancel()
    assert answered == [1] * 10


def test_graceful_stop_ends_open_watches_without_waiting_out_the_grace(server: ServerThread) -> None:
    with RegistryClient(server.target) as watcher:
        watch = watcher.watch()
        ended = threading.Event()

        def drain() -> None:
            list(watch)
            ended.set()

        threading.Thread(target=drain, daemon=True).start()
        took = server.stop_server(grace_s=30)
        assert ended.wait(10)
    assert took < 10


# -- auth ----------------------------------------------------------------------------------------------


@pytest.fixture
def auth_server(registry: Registry) -> Iterator[ServerThread]:
    yield from serve(registry, token=TOKEN)


def test_writes_without_a_token_are_unauthenticated(auth_server: ServerThread) -> None:
    with RegistryClient(auth_server.target) as anonymous:
        with pytest.raises(RegistryCallError) as caught:
            anonymous.put(expectation())
        assert caught.value.code == "UNAUTHENTICATED"
        with pytest.raises(RegistryCallError) as deleting:
            anonymous.delete("weather")
        assert deleting.value.code == "UNAUTHENTICATED"
        assert anonymous.list() == []


def test_a_wrong_token_is_denied_and_writes_nothing(auth_server: ServerThread, registry: Registry) -> None:
    with RegistryClient(auth_server.target, token="guess") as guesser, pytest.raises(RegistryCallError) as caught:
        guesser.put(expectation())
    assert caught.value.code == "UNAUTHENTICATED"
    assert "bearer token" in caught.value.message
    assert registry.store.latest_seq() == 0


def test_the_right_token_may_write(auth_server: ServerThread) -> None:
    with RegistryClient(auth_server.target, token=TOKEN) as owner:
        stored, _ = owner.put(expectation())
        assert owner.delete(stored.name) == 2


def test_reads_and_watches_need_the_token_when_configured(registry: Registry) -> None:
    for server in serve(registry, token=TOKEN, auth_reads=True):
        with RegistryClient(server.target) as anonymous, RegistryClient(server.target, token=TOKEN) as owner:
            with pytest.raises(RegistryCallError) as listing:
                anonymous.list()
            assert listing.value.code == "UNAUTHENTICATED"
            with pytest.raises(RegistryCallError) as watching:
                list(anonymous.watch())
            assert watching.value.code == "UNAUTHENTICATED"
            owner.put(expectation())
            assert [e.name for e in owner.list()] == ["weather"]


def test_auth_reads_without_a_token_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="auth_reads needs a token"):
        RegistryServerConfig(auth_reads=True)


# -- TLS -----------------------------------------------------------------------------------------------


@pytest.fixture
def tls_server(registry: Registry, tmp_path: Path) -> Iterator[tuple[ServerThread, Path]]:
    cert, key = self_signed_certificate(tmp_path)
    for server in serve(registry, tls_cert_file=str(cert), tls_key_file=str(key), token=TOKEN):
        yield server, cert


def test_tls_client_trusting_the_certificate_works(tls_server: tuple[ServerThread, Path]) -> None:
    server, cert = tls_server
    assert server.server is not None
    assert server.server.tls
    with RegistryClient(server.target, tls_ca=cert, token=TOKEN) as client:
        stored, _ = client.put(expectation())
        assert client.get("weather").version == stored.version == 1


def test_plaintext_client_cannot_talk_to_a_tls_server(tls_server: tuple[ServerThread, Path]) -> None:
    server, _ = tls_server
    with RegistryClient(server.target, timeout_s=3) as plaintext, pytest.raises(RegistryCallError) as caught:
        plaintext.list()
    assert caught.value.code == "UNAVAILABLE"


def test_tls_config_needs_both_certificate_and_key() -> None:
    with pytest.raises(ValueError, match="set both or neither"):
        RegistryServerConfig(tls_cert_file="server.crt")


# -- score records -------------------------------------------------------------------------------------


def _run(*tools: str) -> AgentRun:
    calls = tuple(ToolCall(name=t) for t in tools)
    return AgentRun(trace_id="0af7651916cd43dd8448eb211c80319c", span_id="b7ad6b7169203331", calls=calls)


def test_a_score_becomes_a_score_record_that_round_trips_the_wire() -> None:
    exp = expectation().model_copy(update={"version": 4})
    run = _run("get_weather")
    result = exp.scorers[0].scorer.score(run)
    record = pb.Score.FromString(score_to_proto(result, run, exp, exp.scorers[0], 1_700_000_000).SerializeToString())
    assert (record.trace_id, record.span_id) == (run.trace_id, run.span_id)
    assert (record.expectation_name, record.expectation_version) == ("weather", 4)
    assert (record.scorer_type, record.scorer_name) == ("tool_selection", result.name)
    assert record.HasField("value")
    assert (record.value, record.label, record.error_type) == (1.0, "pass", "")
    assert record.explanation == result.explanation
    assert record.time_unix_nano == 1_700_000_000


def test_a_failed_scorer_becomes_a_record_without_a_value() -> None:
    exp = expectation()
    failure = ScoreFailure(name="judge", error_type="timeout", message="no answer in 30s")
    record = score_to_proto(failure, _run(), exp, exp.scorers[0])
    assert not record.HasField("value")
    assert (record.error_type, record.error_message, record.label) == ("timeout", "no answer in 30s", "")
