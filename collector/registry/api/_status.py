"""How a registry error ends a gRPC call: its status code, with `google.rpc` details a client reads.

Shared by the servicer's unary calls and the watch streams, so that a client gets the same typed
error (`client._translate`) whichever ended its call.
"""

from __future__ import annotations

from typing import Any, NoReturn

import grpc

from toolscore.collector.registry._errors import RegistryError, StoreUnavailable
from toolscore.collector.registry.api._convert import error_to_status

__all__ = ["STATUS_DETAILS_KEY", "abort_with"]

STATUS_DETAILS_KEY = "grpc-status-details-bin"
"""Trailing metadata holding the serialized `google.rpc.Status` (the rich gRPC error model)."""


async def abort_with(context: Any, exc: RegistryError | StoreUnavailable) -> NoReturn:
    """End the call with the status `exc` stands for (`convert.error_to_status`)."""
    status = error_to_status(exc)
    code = grpc.StatusCode.INVALID_ARGUMENT
    for candidate in grpc.StatusCode:
        if candidate.value[0] == status.code:
            code = candidate
    await context.abort(code, status.message, ((STATUS_DETAILS_KEY, status.SerializeToString()),))
    raise AssertionError("unreachable: abort raises")
