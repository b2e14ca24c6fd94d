"""A small blocking client of the registry API, speaking in the registry's own types.

Replies come back as `Expectation` and `Change` values, and refusals as the same exceptions the
in-process `Registry` raises (`NotFound`, `AlreadyExists`, `VersionConflict`, `InvalidExpectation`
with its field paths, and `StoreUnavailable` for a store the server cannot use now), read from the
status details rather than parsed from messages; so the CLI handles a remote registry and a local store
with one code path.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import grpc
from google.rpc import status_pb2

from toolscore.collector.registry._model import Expectation
from toolscore.collector.registry._registry import ApplyAction
from toolscore.collector.registry.api._convert import (
    change_from_proto,
    error_from_status,
    expectation_from_proto,
    expectation_to_proto,
)
from toolscore.collector.registry.api._service import STATUS_DETAILS_KEY, WATCH_SEQ_KEY
from toolscore.collector.registry.stores._store import Change
from toolscore.registry.v1 import registry_pb2 as pb
from toolscore.registry.v1 import registry_pb2_grpc as pb_grpc

__all__ = ["HISTORY_PAGE_SIZE", "LIST_PAGE_SIZE", "RegistryCallError", "RegistryClient", "Watch"]

LIST_PAGE_SIZE = 500
"""Expectations `list` asks for per `ListExpectations` call (the server may send fewer)."""
HISTORY_PAGE_SIZE = 500
"""Changes `history` asks for per `GetExpectationHistory` call (the server may send fewer)."""


class RegistryCallError(Exception):
    """A call that failed for a reason other than the registry's own rules (auth, network, server)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        """The gRPC status code's name, e.g. `UNAUTHENTICATED` or `UNAVAILABLE`."""
        self.message = message


def _translate(exc: grpc.RpcError) -> Exception:
    for key, value in exc.trailing_metadata() or ():
        if key == STATUS_DETAILS_KEY:
            error = error_from_status(status_pb2.Status.FromString(value))
            if error is not None:
                return error
    code = exc.code()
    return RegistryCallError(code.name if code is not None else "UNKNOWN", exc.details() or "")


class Watch:
    """An open `WatchExpectations` stream: iterate for changes, `cancel()` from any thread to end it."""

    def __init__(self, call: Any) -> None:
        self._call = call
        self._cancelled = False
        self.since_seq: int | None = None
        """The `seq` the stream follows from (None when the call failed before subscribing)."""
        for key, value in call.initial_metadata() or ():  # blocks until the server has subscribed
            if key == WATCH_SEQ_KEY:
                self.since_seq = int(value)

    def __iter__(self) -> Iterator[Change]:
        try:
            for msg in self._call:
                yield change_from_proto(msg)
        except grpc.RpcError as exc:
            if self._cancelled and exc.code() == grpc.StatusCode.CANCELLED:
                return
            raise _translate(exc) from None

    def cancel(self) -> None:
        self._cancelled = True
        self._call.cancel()

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.cancel()


class RegistryClient:
    """Blocking calls to one registry server; safe to share between threads."""

    def __init__(
        self,
        target: str,
        *,
        token: str | None = None,
        tls_ca: str | Path | None = None,
        tls: bool = False,
        timeout_s: float = 10.0,
    ) -> None:
        """`tls_ca`: PEM file of the CA (or the self-signed certificate) to trust; implies TLS.

        `tls` without `tls_ca` trusts the system's roots.
        """
        if tls_ca is not None or tls:
            roots = Path(tls_ca).read_bytes() if tls_ca is not None else None
            self._channel = grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates=roots))
        else:
            self._channel = grpc.insecure_channel(target)
        self._stub = pb_grpc.ExpectationRegistryStub(self._channel)
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self._timeout_s = timeout_s
        self.target = target

    def _call(self, method: str, request: Any) -> Any:
        try:
            return getattr(self._stub, method)(request, timeout=self._timeout_s, metadata=self._metadata)
        except grpc.RpcError as exc:
            raise _translate(exc) from None

    def put(
        self, expectation: Expectation, expected_version: int | None = None, *, validate_only: bool = False
    ) -> tuple[Expectation, bool]:
        """Returns the stored expectation (with its version) and whether the name was new."""
        request = pb.PutExpectationRequest(
            expectation=expectation_to_proto(expectation),
            expected_version=expected_version,
            validate_only=validate_only,
        )
        reply = self._call("PutExpectation", request)
        return expectation_from_proto(reply.expectation, with_version=True), bool(reply.created)

    def get(self, name: str) -> Expectation:
        reply = self._call("GetExpectation", pb.GetExpectationRequest(name=name))
        return expectation_from_proto(reply.expectation, with_version=True)

    def list(self, name_prefix: str = "") -> list[Expectation]:
        """Every live expectation (with the prefix), in name order, read page by page."""
        found: list[Expectation] = []
        token = ""
        while True:
            request = pb.ListExpectationsRequest(name_prefix=name_prefix, page_size=LIST_PAGE_SIZE, page_token=token)
            reply = self._call("ListExpectations", request)
            found.extend(expectation_from_proto(e, with_version=True) for e in reply.expectations)
            token = reply.next_page_token
            if not token:
                return found

    def delete(self, name: str, expected_version: int | None = None) -> int:
        """Returns the version the deletion took."""
        request = pb.DeleteExpectationRequest(name=name, expected_version=expected_version)
        return int(self._call("DeleteExpectation", request).version)

    def history(self, name: str) -> builtins.list[Expectation]:
        """Every stored version of one name, oldest first (its history without the deletions)."""
        return [c.expectation for c in self.history_changes(name) if c.kind != "deleted"]

    def history_changes(self, name: str) -> builtins.list[Change]:
        """Every change of one name, deletions included (`Registry.history_changes` on the server), read
        page by page."""
        changes: builtins.list[Change] = []
        token = ""
        while True:
            request = pb.GetExpectationHistoryRequest(name=name, page_size=HISTORY_PAGE_SIZE, page_token=token)
            reply = self._call("GetExpectationHistory", request)
            changes.extend(change_from_proto(c) for c in reply.changes)
            token = reply.next_page_token
            if not token:
                return changes

    def watch(self, since_seq: int | None = None) -> Watch:
        """Changes after now (or after `since_seq`), until cancelled; no timeout applies.

        Returns once the server is subscribed: a change committed after that is sure to be streamed.
        """
        request = pb.WatchExpectationsRequest(since_seq=since_seq)
        return Watch(self._stub.WatchExpectations(request, metadata=self._metadata))

    def apply(
        self, expectations: Iterable[Expectation], *, prune: Iterable[str] = ()
    ) -> builtins.list[tuple[str, ApplyAction]]:
        """`Registry.apply` on the server (`ApplyExpectations`): validated whole, written in one transaction.

        A concurrent edit raises `VersionConflict` and nothing is written.
        """
        request = pb.ApplyExpectationsRequest(
            expectations=[expectation_to_proto(exp) for exp in expectations], prune=list(prune)
        )
        reply = self._call("ApplyExpectations", request)
        return [(r.name, _action(r.action)) for r in reply.results]

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


_ACTIONS: dict[str, ApplyAction] = {
    "created": "created",
    "updated": "updated",
    "unchanged": "unchanged",
    "deleted": "deleted",
}


def _action(text: str) -> ApplyAction:
    """A result's action, checked: a newer server must not pass an unknown word off as one of ours."""
    try:
        return _ACTIONS[text]
    except KeyError:
        raise ValueError(f"server answered an unknown apply action {text!r}") from None
