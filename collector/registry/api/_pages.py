"""Replies that could outgrow a gRPC message, cut into pages.

A client receives at most 4 MiB in one message by default, and a registry can hold more than that (~1,500
expectations of 40 calls each), as can one expectation's history (each version is a whole document). A
page ends after `page_size` items (at most `MAX_PAGE_SIZE`) or before the item that would take it past
`MAX_PAGE_BYTES`, and always holds one item; one item is at most `MAX_REPLY_EXPECTATION_BYTES` (twice that
in a history entry, which carries it as the change and as the version), so a page stays below that limit
whatever the store holds; its token names the last item sent (a name, a `seq`),
so the next page starts after it whatever was written or deleted in between. `page_size` 0 keeps the
replies of clients that predate paging whole.
"""

from __future__ import annotations

from toolscore.collector.registry._errors import InvalidExpectation
from toolscore.collector.registry._model import Expectation
from toolscore.collector.registry.api._convert import change_to_proto, expectation_to_proto
from toolscore.collector.registry.stores._store import Change
from toolscore.registry.v1 import registry_pb2 as pb

__all__ = ["MAX_PAGE_BYTES", "MAX_PAGE_SIZE", "history_page", "list_page", "read_limit", "seq_token"]

MAX_PAGE_SIZE = 1000
MAX_PAGE_BYTES = 1 << 20
"""A page ends before the item that would take it past this many bytes (it always holds one), far below a
client's default 4 MiB message limit."""


def list_page(found: list[Expectation], page_size: int) -> pb.ListExpectationsResponse:
    """Up to `page_size` of `found` (read with `read_limit`), stopping early past `MAX_PAGE_BYTES`; 0: all.

    The page token is the last name sent: names are listed in order, and the store reads the next page
    from after it (`ExpectationStore.list`), whatever was written or deleted in between.
    """
    response = pb.ListExpectationsResponse()
    limit, size = (min(page_size, MAX_PAGE_SIZE) if page_size else len(found)), 0
    for i, exp in enumerate(found):
        message = None if i == limit else expectation_to_proto(exp)
        if message is None or (page_size and i and size + message.ByteSize() > MAX_PAGE_BYTES):
            response.next_page_token = found[i - 1].name
            break
        size += message.ByteSize()
        response.expectations.append(message)
    return response


def read_limit(page_size: int) -> int | None:
    """How many items to read for a page of `page_size`: one more than it holds, to know whether another
    follows (None: `page_size` 0, everything)."""
    if page_size < 0:
        raise InvalidExpectation.single("page_size", "must be 0 (everything) or more")
    return min(page_size, MAX_PAGE_SIZE) + 1 if page_size else None


def seq_token(token: str) -> int:
    """The `seq` a history page token names (0 for the first page)."""
    if not token:
        return 0
    if not token.isdigit():
        raise InvalidExpectation.single("page_token", f"{token[:40]!r} is not a token this registry gave")
    return int(token)


def history_page(changes: list[Change], page_size: int) -> pb.GetExpectationHistoryResponse:
    """Up to `page_size` of `changes` (read with `read_limit`), stopping early past `MAX_PAGE_BYTES`; 0: all.

    A page's `versions` are the expectations its non-deletion `changes` carry, so both count toward its size.
    """
    response = pb.GetExpectationHistoryResponse()
    limit, size = (min(page_size, MAX_PAGE_SIZE) if page_size else len(changes)), 0
    for i, change in enumerate(changes):
        message = None if i == limit else change_to_proto(change)
        cost = (
            0 if message is None else message.ByteSize() + (change.kind != "deleted") * message.expectation.ByteSize()
        )
        if message is None or (page_size and i and size + cost > MAX_PAGE_BYTES):
            response.next_page_token = str(changes[i - 1].seq)
            break
        response.changes.append(message)
        if change.kind != "deleted":
            response.versions.append(message.expectation)
        size += cost
    return response
