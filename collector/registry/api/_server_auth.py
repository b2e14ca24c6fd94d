"""Bearer-token authentication of the registry API, as a gRPC server interceptor.

Writes always need the token when one is configured; reads and watches only with `auth_reads`, since
the collectors and dashboards that read expectations usually sit inside the trust boundary.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc

from toolscore.collector.bearer import metadata_bearer_matches

__all__ = ["WRITE_METHODS", "BearerTokenInterceptor"]

WRITE_METHODS = frozenset({"PutExpectation", "DeleteExpectation", "ApplyExpectations"})
"""The RPCs that change the registry: they need the token whenever one is configured."""


class BearerTokenInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Lets a call through when it carries `authorization: Bearer <token>` (the receivers' own check,
    `toolscore.collector.bearer`), or needs no token.

    A refused call gets UNAUTHENTICATED from a handler of the same shape as the method's (unary or
    server-streaming), so the client sees a proper status rather than a protocol error.
    """

    def __init__(self, token: str, *, reads: bool) -> None:
        self._token = token
        self._reads = reads

    async def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        handler = await continuation(details)
        method = str(details.method).rsplit("/", 1)[-1]
        if handler is None or (method not in WRITE_METHODS and not self._reads):
            return handler
        if metadata_bearer_matches(details.invocation_metadata, self._token):
            return handler
        message = "missing or wrong bearer token: send `authorization: Bearer <token>` metadata"

        async def deny_unary(request: Any, context: Any) -> None:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

        async def deny_stream(request: Any, context: Any) -> AsyncIterator[None]:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)
            yield None

        codec = {
            "request_deserializer": handler.request_deserializer,
            "response_serializer": handler.response_serializer,
        }
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(deny_stream, **codec)
        return grpc.unary_unary_rpc_method_handler(deny_unary, **codec)
