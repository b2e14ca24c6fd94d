"""The one bearer-token check: the OTLP receivers (an HTTP header, or gRPC metadata) and the registry API.

`authorization: <scheme> <token>`: the scheme is case-insensitive (RFC 9110 §11.1), so `bearer` and
`BEARER` are `Bearer` (some SDKs and proxies lower-case it), and one or more spaces separate it from
the token (§11.4). The token itself is compared exactly, in constant time. Every server that takes a
token calls this, so a value one accepts is accepted by all.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable

__all__ = ["bearer_matches", "metadata_bearer_matches"]


def bearer_matches(authorization: str | bytes | None, token: str) -> bool:
    """Whether an `authorization` value carries `token` under the Bearer scheme."""
    if authorization is None:
        return False
    given = authorization if isinstance(authorization, bytes) else authorization.encode("utf-8", "replace")
    scheme, _, credentials = given.partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.lstrip(b" "), token.encode())


def metadata_bearer_matches(metadata: Iterable[tuple[str, str | bytes]] | None, token: str) -> bool:
    """Whether gRPC invocation metadata carries `token`: its first `authorization` entry decides."""
    for key, value in metadata or ():
        if key == "authorization":
            return bearer_matches(value if isinstance(value, str) else bytes(value), token)
    return False
