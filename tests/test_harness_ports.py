"""The test harness's `free_port`: never the same port twice in a row of calls, so that one config's endpoints differ.

The kernel may hand a port just closed out again; a `toolscore serve` config whose UI endpoint got its gRPC
receiver's port failed to start in CI once.
"""

from __future__ import annotations

import socket

from tests.serve_harness import free_port


def test_free_port_gives_distinct_ports_each_free_when_given() -> None:
    ports = [free_port() for _ in range(600)]
    assert len(set(ports)) == len(ports)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports[-1]))  # free: it binds
