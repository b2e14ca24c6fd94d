"""One bearer-token rule for every server that takes a token: the OTLP receivers (gRPC and HTTP) and the
registry API accept and refuse the same `authorization` values.

The scheme is case-insensitive (RFC 9110 §11.1), the token exact; a value one server accepts, all accept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

from tests.registry_builders import ServerThread
from tests.serve_receiver_support import RecordingIngest, http_call, sdk_spans
from toolscore.collector.registry import Registry, RegistryConfig, SqliteStoreConfig
from toolscore.collector.registry.api import RegistryServerConfig
from toolscore.collector.serve._health import HealthState
from toolscore.collector.serve.receivers import ReceiverConfig
from toolscore.collector.serve.receivers._grpc_receiver import start_grpc_receiver
from toolscore.collector.serve.receivers._http_receiver import start_http_receiver
from toolscore.registry.v1 import registry_pb2 as pb
from toolscore.registry.v1 import registry_pb2_grpc as pb_grpc

TOKEN = "s3cret-token"

ACCEPTED = (f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER {TOKEN}", f"bEaReR  {TOKEN}")
"""Any case of the scheme, one or more spaces before the token."""

REFUSED = (f"Basic {TOKEN}", f"Bearer{TOKEN}", f"Bearer {TOKEN}x", "Bearer wrong", TOKEN, "Bearer ", "", None)
"""Another scheme, no space, another token, no scheme, no token, an empty value, no header at all."""

Send = Callable[[str | None], bool]
"""Sends one request with that `authorization` value (None: none); True when it is let in."""


def _metadata(value: str | None) -> tuple[tuple[str, str], ...]:
    return () if value is None else (("authorization", value),)


def _grpc_outcome(call: Callable[[], object]) -> bool:
    """True when the call succeeds, False when it is UNAUTHENTICATED; any other failure fails the test."""
    try:
        call()
    except grpc.RpcError as error:
        if error.code() is not grpc.StatusCode.UNAUTHENTICATED:  # type: ignore[attr-defined]
            raise
        return False
    return True


@pytest.fixture
def otlp_grpc() -> Iterator[Send]:
    receiver = start_grpc_receiver(RecordingIngest(), ReceiverConfig(grpc_endpoint="127.0.0.1:0", bearer_token=TOKEN))
    request = encode_spans(sdk_spans("authorized"))
    with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
        stub = TraceServiceStub(channel)
        yield lambda value: _grpc_outcome(lambda: stub.Export(request, metadata=_metadata(value), timeout=5))
    receiver.stop(0)


@pytest.fixture
def otlp_http() -> Iterator[Send]:
    config = ReceiverConfig(http_endpoint="127.0.0.1:0", bearer_token=TOKEN)
    receiver = start_http_receiver(RecordingIngest(), config, HealthState())
    body = encode_spans(sdk_spans("authorized")).SerializeToString()

    def send(value: str | None) -> bool:
        reply = http_call(receiver.port, body, headers={} if value is None else {"Authorization": value})
        assert reply.status in (200, 401), reply
        return reply.status == 200

    yield send
    receiver.stop()


@pytest.fixture
def registry_api(tmp_path: Path) -> Iterator[Send]:
    registry = Registry(config=RegistryConfig(store=SqliteStoreConfig(path=str(tmp_path / "registry.db"))))
    server = ServerThread(registry, RegistryServerConfig(port=0, token=TOKEN, auth_reads=True)).start()
    request = pb.ListExpectationsRequest()
    try:
        with grpc.insecure_channel(server.target) as channel:
            stub = pb_grpc.ExpectationRegistryStub(channel)
            yield lambda value: _grpc_outcome(
                lambda: stub.ListExpectations(request, metadata=_metadata(value), timeout=5)
            )
    finally:
        server.close()
        registry.close()


def test_the_receivers_and_the_registry_api_accept_and_refuse_the_same_values(
    otlp_grpc: Send, otlp_http: Send, registry_api: Send
) -> None:
    servers = {"OTLP/gRPC": otlp_grpc, "OTLP/HTTP": otlp_http, "registry API": registry_api}
    values = (*ACCEPTED, *REFUSED)
    outcomes = {name: {value: send(value) for value in values} for name, send in servers.items()}
    expected = {value: value in ACCEPTED for value in values}
    assert outcomes == dict.fromkeys(servers, expected)
