"""Whether a server could listen on an address now, asked of the operating system with a plain socket.

grpc binds in C and says only "Failed to bind ... set GRPC_VERBOSITY=debug" (after logging its own line);
binding a plain socket to the same address first gives the reason a user acts on, in the system's words
(`Address already in use`), before anything has started. Shared by `toolscore serve`'s check of every
address it listens on and by `toolscore expectations serve`.
"""

from __future__ import annotations

import errno
import socket

__all__ = ["bind_error"]


def bind_error(host: str, port: int) -> tuple[str, bool] | None:
    """Why a server could not listen on `host:port` now, and whether the host is at fault rather than the port
    (it does not resolve, or is not an address of this machine); None when it can.

    The probe sets SO_REUSEADDR as the servers do, so a port left in TIME_WAIT by a server that just stopped is
    not reported, while one a running process listens on is. Port 0 (any free port) always can.
    """
    try:
        addresses = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"host {host!r} cannot be resolved ({exc.strerror})", True
    for family, kind, proto, _, address in addresses:
        try:
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(address)
        except OSError as exc:
            return exc.strerror or str(exc), exc.errno == errno.EADDRNOTAVAIL
    return None
