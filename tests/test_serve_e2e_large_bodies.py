"""`toolscore serve` end to end: bodies over the size limit, sent by clients that read nothing before they have sent
everything (Python's `http.client`), get their 413 and leave the collector serving; gzip bombs and slow bodies stay
bounded in memory and time.

A `toolscore serve` subprocess with the default limits (4 MiB a request, 64 MiB read and dropped past it), a real
downstream, and `http.client` on 127.0.0.1: 5 MiB and 64 MiB bodies, with a Content-Length and chunked, each
followed by a valid export on the same connection, which must be forwarded. Past the discard bound the body is
left unread and the connection closed: `requests` (urllib3) still reads the 413 there; `http.client` cannot, as it
writes the whole body before it reads.
"""

from __future__ import annotations

import gzip
import http.client
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from tests.serve_demo_checks import DEMO_EXPECTATIONS, sdk_key
from tests.serve_harness import Downstream, ServeProcess, serve_config
from tests.serve_receiver_support import sdk_spans
from toolscore.collector.serve.receivers._config import DEFAULT_MAX_DISCARD_BYTES, DEFAULT_MAX_MESSAGE_BYTES

pytestmark = pytest.mark.integration  # every test here starts a process

MIB = 1024 * 1024
PROTOBUF = {"Content-Type": "application/x-protobuf"}
REQUEST_TIMEOUT_S = 6.0
"""`receiver.http_request_timeout_s` here: short, so that the slow body's 408 comes soon, yet ample for 64 MiB on a
busy machine (~0.3 s on loopback)."""


def _pieces(size: int, piece: int = MIB) -> Iterator[bytes]:
    """`size` zero bytes in pieces: `http.client` sends an iterable body chunked, one chunk a piece."""
    for start in range(0, size, piece):
        yield bytes(min(piece, size - start))


def _vm_hwm_kib(pid: int) -> int:
    """The process's peak resident memory (`VmHWM`), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, Downstream]]:
    tmp_path = tmp_path_factory.mktemp("large-bodies")
    downstream = Downstream()
    config = serve_config(
        tmp_path, [DEMO_EXPECTATIONS], downstream, receiver={"http_request_timeout_s": REQUEST_TIMEOUT_S}
    )
    with ServeProcess(config, tmp_path) as process:
        process.wait_ready()
        yield process, downstream
        assert process.terminate() == 0, process.log()
    downstream.stop()
    assert "Traceback" not in process.log()


def _port(process: ServeProcess) -> int:
    return int(process.http_url.rsplit(":", 1)[1])


def _valid_export(connection: http.client.HTTPConnection, name: str) -> tuple[str, str]:
    """Send one SDK span on `connection`; it must be taken (200). Its (trace id, span id) key."""
    spans = sdk_spans(name)
    connection.request("POST", "/v1/traces", body=encode_spans(spans).SerializeToString(), headers=PROTOBUF)
    response = connection.getresponse()
    assert response.status == 200, response.read()
    response.read()
    return sdk_key(spans[0])


@pytest.mark.parametrize("size_mib", [5, 64])
@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_http_client_gets_413_for_a_large_body_and_the_next_request_is_served(
    collector: tuple[ServeProcess, Downstream], size_mib: int, framing: str
) -> None:
    process, downstream = collector
    size = size_mib * MIB
    assert DEFAULT_MAX_MESSAGE_BYTES < size <= DEFAULT_MAX_DISCARD_BYTES
    hwm_before = _vm_hwm_kib(process.proc.pid)
    connection = http.client.HTTPConnection("127.0.0.1", _port(process), timeout=30)
    try:
        started = time.monotonic()
        body = bytes(size) if framing == "content-length" else _pieces(size)
        connection.request("POST", "/v1/traces", body=body, headers=PROTOBUF)  # no BrokenPipeError
        response = connection.getresponse()
        elapsed_s = time.monotonic() - started
        text = response.read()
        assert response.status == 413, text
        assert response.getheader("Connection") is None, "the body was read and dropped: the connection is kept"
        limit = f"over the {DEFAULT_MAX_MESSAGE_BYTES}-byte limit".encode()
        assert limit in text
        if framing == "content-length":
            assert f"the body is {size} bytes".encode() in text
        sock = connection.sock
        sent = _valid_export(connection, f"after-{size_mib}-mib-{framing}")
        assert connection.sock is sock, "the valid request went on the same connection"
    finally:
        connection.close()
    assert elapsed_s < REQUEST_TIMEOUT_S
    assert downstream.wait_for({sent}, timeout_s=10), "the valid request after the 413 is forwarded"
    grown_mib = (_vm_hwm_kib(process.proc.pid) - hwm_before) / 1024
    assert grown_mib < 16, f"dropping {size_mib} MiB raised the collector's peak memory by {grown_mib:.0f} MiB"


def test_past_the_discard_bound_the_body_is_left_unread_and_requests_still_reads_the_413(
    collector: tuple[ServeProcess, Downstream],
) -> None:
    """Past `http_max_discard_bytes` the 413 goes out at once with `Connection: close`, the body unread; urllib3
    reads the answer when its write fails. The collector never reads those bytes."""
    process, _ = collector
    size = DEFAULT_MAX_DISCARD_BYTES + MIB
    hwm_before = _vm_hwm_kib(process.proc.pid)
    started = time.monotonic()
    response = requests.post(f"{process.http_url}/v1/traces", data=bytes(size), headers=PROTOBUF, timeout=30)
    assert response.status_code == 413
    assert response.headers["Connection"] == "close"
    assert f"the body is {size} bytes".encode() in response.content
    assert time.monotonic() - started < REQUEST_TIMEOUT_S
    assert (_vm_hwm_kib(process.proc.pid) - hwm_before) / 1024 < 16
    connection = http.client.HTTPConnection("127.0.0.1", _port(process), timeout=10)
    try:
        _valid_export(connection, "after-past-the-bound")
    finally:
        connection.close()


def test_a_gzip_bomb_is_refused_at_the_limit_and_the_connection_kept(
    collector: tuple[ServeProcess, Downstream],
) -> None:
    """1 GiB of zeros in ~1 MB of gzip members: decompression stops at the limit; the body was read, so the
    connection carries the next request."""
    process, downstream = collector
    bomb = gzip.compress(bytes(MIB)) * 1024
    hwm_before = _vm_hwm_kib(process.proc.pid)
    connection = http.client.HTTPConnection("127.0.0.1", _port(process), timeout=30)
    try:
        started = time.monotonic()
        connection.request("POST", "/v1/traces", body=bomb, headers={**PROTOBUF, "Content-Encoding": "gzip"})
        response = connection.getresponse()
        assert response.status == 413
        assert f"decompresses to more than {DEFAULT_MAX_MESSAGE_BYTES} bytes".encode() in response.read()
        assert time.monotonic() - started < 5
        sent = _valid_export(connection, "after-the-bomb")
    finally:
        connection.close()
    assert (_vm_hwm_kib(process.proc.pid) - hwm_before) / 1024 < 64
    assert downstream.wait_for({sent}, timeout_s=10)


def test_a_slow_oversized_body_is_cut_at_the_request_deadline(collector: tuple[ServeProcess, Downstream]) -> None:
    """A body over the limit sent a little at a time is dropped only until `http_request_timeout_s`: then 408
    and the connection closed, so dropping cannot hold a connection slot longer than any other request."""
    process, _ = collector
    head = (
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        b"Content-Length: %d\r\n\r\n" % (5 * MIB)
    )
    answer = b""
    with socket.create_connection(("127.0.0.1", _port(process)), timeout=REQUEST_TIMEOUT_S + 5) as raw:
        started = time.monotonic()
        raw.sendall(head)
        raw.settimeout(0.2)
        while time.monotonic() - started < REQUEST_TIMEOUT_S + 5:
            try:
                raw.sendall(bytes(1024))
                chunk = raw.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break  # closed under the trickle: what came before it is the answer
            answer += chunk
            if not chunk:
                break
        elapsed_s = time.monotonic() - started
        raw.settimeout(1)
        try:
            while chunk := raw.recv(65536):
                answer += chunk
        except OSError:
            pass
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert f"did not arrive within {REQUEST_TIMEOUT_S:g}s".encode() in answer
    assert REQUEST_TIMEOUT_S - 0.5 < elapsed_s < REQUEST_TIMEOUT_S + 3


def _too_large_count(process: ServeProcess) -> float:
    """The collector's `too_large` refusals so far, summed over its receivers, from its Prometheus endpoint."""
    metrics = requests.get(f"http://127.0.0.1:{process.metrics_port}/metrics", timeout=5).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("toolscore_receiver_refused") and 'toolscore_refusal_reason="too_large"' in line
    )


def test_the_metrics_count_every_413_once(collector: tuple[ServeProcess, Downstream]) -> None:
    """Each oversized body is counted `too_large` exactly once, whichever way it is framed or refused (the drop
    happens before the count). Counted as a difference, so the test stands alone as well as after the others."""
    process, _ = collector
    before = _too_large_count(process)
    connection = http.client.HTTPConnection("127.0.0.1", _port(process), timeout=30)
    try:
        for body in (bytes(5 * MIB), _pieces(5 * MIB)):
            connection.request("POST", "/v1/traces", body=body, headers=PROTOBUF)
            response = connection.getresponse()
            assert response.status == 413, response.read()
            response.read()
    finally:
        connection.close()
    past_the_bound = requests.post(
        f"{process.http_url}/v1/traces", data=bytes(DEFAULT_MAX_DISCARD_BYTES + MIB), headers=PROTOBUF, timeout=30
    )
    assert past_the_bound.status_code == 413
    deadline = time.monotonic() + 10
    while (counted := _too_large_count(process) - before) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)  # the Prometheus reader collects on each scrape; the count lands with the refusal
    assert counted == 3
