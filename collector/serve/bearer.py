"""The bearer-token check both OTLP receivers apply (an HTTP header, or gRPC metadata of the same form).

`authorization: <scheme> <token>`: the scheme is case-insensitive (RFC 9110 §11.1), so `bearer` and
`BEARER` are `Bearer` (some SDKs and proxies lower-case it), and one or more spaces separate it from
the token (§11.4). The token itself is compared exactly, in constant time.
"""

from __future__ import annotations

import hmac

__all__ = ["bearer_matches"]


def bearer_matches(authorization: str | bytes | None, token: str) -> bool:
    """Whether an `authorization` value carries `token` under the Bearer scheme."""
    if authorization is None:
        return False
    given = authorization if isinstance(authorization, bytes) else authorization.encode("utf-8", "replace")
    scheme, _, credentials = given.partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.lstrip(b" "), token.encode())
