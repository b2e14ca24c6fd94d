"""The test harness's `free_port`: ports no other socket of the machine is handed meanwhile.

A port `free_port` gives is bound seconds later, by the process it is for. A port the kernel handed out for port 0
could go, meanwhile, to a server binding port 0 or to an outgoing connection, and the kernel hands a port just
closed out again: `toolscore serve` failed to start in CI twice so (its UI endpoint on its gRPC receiver's port,
then on another socket's). So its ports are below the kernel's ephemeral range, and never the same twice.
"""

from __future__ import annotations

import socket

from tests.serve_harness import _ephemeral_start, free_port


def test_free_port_gives_distinct_free_ports_the_kernel_does_not_hand_out_itself() -> None:
    ports = [free_port() for _ in range(600)]
    assert len(set(ports)) == len(ports)
    assert all(1024 < port < _ephemeral_start() for port in ports)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports[-1]))  # free: it binds


def test_a_port_in_use_is_passed_over() -> None:
    first = free_port()
    while first + 2 >= _ephemeral_start():  # the turn wraps around there
        first = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", first + 1))  # the next one in turn, taken meanwhile
        taken.listen()
        assert free_port() == first + 2
