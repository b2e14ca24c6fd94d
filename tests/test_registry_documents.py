"""Whole documents are bounded when written (size, nesting depth), and every reply stays under a client's
4 MiB whatever the store holds, documents written before the bounds included."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from click.testing import CliRunner

from tests.docs_text import page
from tests.registry_builders import serve, store_raw
from toolscore.collector.cli import main
from toolscore.collector.registry import (
    InvalidExpectation,
    Registry,
    RegistryConfig,
    SqliteStoreConfig,
    parse_expectation,
)
from toolscore.collector.registry._limits import MAX_DOCUMENT_BYTES, MAX_DOCUMENT_DEPTH, MAX_DOCUMENT_VALUES
from toolscore.collector.registry._validation import UNREADABLE_LABEL
from toolscore.collector.registry.api import RegistryClient
from toolscore.collector.registry.api._convert import MAX_REPLY_EXPECTATION_BYTES
from toolscore.collector.registry.api._pages import MAX_PAGE_BYTES
from toolscore.registry.v1 import registry_pb2 as pb
from toolscore.registry.v1 import registry_pb2_grpc as pb_grpc

CLIENT_LIMIT = 4 * 1024 * 1024


def _nested(levels: int) -> dict[str, Any]:
    """A mapping `levels` deep: `{"a": {"a": ... {}}}`."""
    out: dict[str, Any] = {}
    for _ in range(levels - 1):
        out = {"a": out}
    return out


def _doc(name: str, **params: Any) -> dict[str, Any]:
    scorer = {"type": "trajectory", "expected": [{"name": "search", "args": {"q": "x"}}], **params}
    return {"name": name, "match": {"agent": "bot"}, "scorers": [scorer]}


def _message(name: str, params_json: str) -> pb.Expectation:
    msg = pb.Expectation(name=name)
    msg.match.agent.equals.string_value = "bot"
    msg.scorers.add(type="trajectory", params_json=params_json)
    return msg


def _registry(path: Path) -> Registry:
    return Registry(config=RegistryConfig(store=SqliteStoreConfig(path=str(path))), poll_interval_s=0.05)


@pytest.fixture
def target(tmp_path: Path) -> Iterator[str]:
    with _registry(tmp_path / "r.db") as registry:
        for server in serve(registry):
            yield server.target


def _put(target: str, msg: pb.Expectation) -> grpc.RpcError:
    with grpc.insecure_channel(target) as channel, pytest.raises(grpc.RpcError) as caught:
        pb_grpc.ExpectationRegistryStub(channel).PutExpectation(pb.PutExpectationRequest(expectation=msg))
    return caught.value


def test_three_megabytes_of_params_are_refused_as_invalid_argument_and_nothing_is_stored(target: str) -> None:
    params = {"expected": [{"name": "search", "args": {"q": "x" * 3_000_000}}]}
    text = json.dumps(params)
    err = _put(target, _message("big", text))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details() == f"scorers[0].params_json: is {len(text)} characters long, over the 524288 of a document"
    with RegistryClient(target) as client:
        assert client.list() == []


def test_params_json_nested_5000_deep_is_invalid_argument_naming_the_depth_limit(target: str) -> None:
    err = _put(target, _message("deep", '{"expected": [{"name": "a", "args": ' + "[" * 5000 + "]" * 5000 + "}]}"))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details() == (
        f"scorers[0].params_json: nests deeper than {MAX_DOCUMENT_DEPTH - 2} levels, the limit of params "
        f"({MAX_DOCUMENT_DEPTH} for a document)"
    )


def test_a_document_past_the_depth_limit_is_refused_naming_where() -> None:
    with pytest.raises(InvalidExpectation) as caught:
        parse_expectation(_doc("deep", expected=[{"name": "a", "args": _nested(MAX_DOCUMENT_DEPTH)}]))
    (problem,) = caught.value.problems
    assert (problem.field, problem.message) == ("scorers[0]", "nests deeper than 24 levels, the limit of a document")


def test_a_document_past_the_size_limit_is_refused_naming_its_size() -> None:
    with pytest.raises(InvalidExpectation, match=f"bytes as JSON, over the limit of {MAX_DOCUMENT_BYTES}"):
        parse_expectation(_doc("big", expected=[{"name": "a", "args": {"q": "é" * 300_000}}]))


def test_a_document_at_both_limits_is_written_and_read_back_whole_through_every_reply(target: str) -> None:
    deepest = _nested(MAX_DOCUMENT_DEPTH - 6)  # under document, scorers, scorer, expected, call, args
    text = "x" * (MAX_DOCUMENT_BYTES - 2000)
    doc = _doc("edge", expected=[{"name": "search", "args": {"deep": deepest, "text": text}}])
    with RegistryClient(target) as client:
        stored, _ = client.put(parse_expectation(doc))
        assert stored.scorers[0].spec["expected"][0]["args"]["deep"] == deepest
        assert client.get("edge").scorers[0].spec == stored.scorers[0].spec
        assert [e.name for e in client.list()] == ["edge"]
        assert len(client.history("edge")) == 1
    with grpc.insecure_channel(target) as channel:
        reply = pb_grpc.ExpectationRegistryStub(channel).GetExpectation(pb.GetExpectationRequest(name="edge"))
    assert reply.expectation.scorers[0].params.fields["expected"].list_value.values  # the Struct too


def test_a_store_holding_documents_written_before_the_bounds_still_lists(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    store_raw(db, "a-big", _doc("a-big", expected=[{"name": "s", "args": {"q": "x" * 3_000_000}}]))
    with _registry(db) as registry:
        registry.apply([parse_expectation(_doc("b-fine"))])
        for server in serve(registry):
            with RegistryClient(server.target) as client:
                big, fine = client.list()
                got = client.get("a-big")
                history = client.history("a-big")
                with client.watch(since_seq=0) as watch:  # replayed from the change log, the big one first
                    replayed = next(iter(watch))
            listed = CliRunner().invoke(main, ["expectations", "list", "--server", server.target])
            with grpc.insecure_channel(server.target) as channel:
                page = pb_grpc.ExpectationRegistryStub(channel).ListExpectations(
                    pb.ListExpectationsRequest(page_size=10)
                )
    assert (big.name, big.enabled, fine.name, fine.enabled) == ("a-big", False, "b-fine", True)
    assert "stored before the document bounds, it is " in big.labels[UNREADABLE_LABEL]
    assert got.labels == big.labels
    assert len(history) == 1
    assert replayed.expectation is not None
    assert (replayed.expectation.name, replayed.expectation.labels) == ("a-big", big.labels)
    assert listed.exit_code == 0, listed.output
    assert "a-big" in listed.stdout
    assert page.ByteSize() < CLIENT_LIMIT


def test_a_stored_document_deeper_than_the_limit_reaches_a_client(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    deep = _nested(40)
    store_raw(db, "deep", _doc("deep", expected=[{"name": "s", "args": deep}]))
    with _registry(db) as registry:
        for server in serve(registry):
            with RegistryClient(server.target) as client:
                (got,) = client.list()
    assert got.scorers[0].spec["expected"][0]["args"] == deep


def test_pages_end_before_the_document_that_would_take_them_past_a_megabyte(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    for i in range(4):  # each ~0.7 MB as params_json (past the write bound: no Struct); two would pass 1 MiB
        store_raw(db, f"e{i}", _doc(f"e{i}", expected=[{"name": "s", "args": {"q": "x" * 700_000}}]))
    with _registry(db) as registry:
        for server in serve(registry):
            with grpc.insecure_channel(server.target) as channel:
                stub = pb_grpc.ExpectationRegistryStub(channel)
                sizes, token = [], ""
                while True:
                    page = stub.ListExpectations(pb.ListExpectationsRequest(page_size=100, page_token=token))
                    sizes.append((len(page.expectations), page.ByteSize()))
                    if not (token := page.next_page_token):
                        break
    assert [n for n, _ in sizes] == [1, 1, 1, 1]
    assert all(size < 2 * 1024 * 1024 for _, size in sizes)


def test_the_security_page_states_the_document_bounds_in_force() -> None:
    text = " ".join(page("security.md").split())
    assert f"nests at most {MAX_DOCUMENT_DEPTH} levels and takes at most {MAX_DOCUMENT_BYTES // 1024} KiB" in text
    assert f"at most {MAX_DOCUMENT_DEPTH - 2} levels under the scorer" in text
    assert f"at most {MAX_DOCUMENT_VALUES:,} values" in text
    assert f"past {MAX_PAGE_BYTES >> 20} MiB" in text
    assert f"would pass {MAX_REPLY_EXPECTATION_BYTES / (1 << 20):g} MiB" in text
