"""Replies that could outgrow a gRPC message, cut into pages.

A client receives at most 4 MiB in one message by default, and a registry can hold more than that (~1,500
expectations of 40 calls each). A page ends after `page_size` items (at most `MAX_PAGE_SIZE`) or once it
passes `MAX_PAGE_BYTES`, and always holds one item, so it stays far below that limit; its token names the
last item sent, so the next page starts after it whatever was written or deleted in between.
"""

from __future__ import annotations

from toolscore.collector.registry.convert import expectation_to_proto
from toolscore.collector.registry.model import Expectation
from toolscore.registry.v1 import registry_pb2 as pb

__all__ = ["MAX_PAGE_BYTES", "MAX_PAGE_SIZE", "list_page"]

MAX_PAGE_SIZE = 1000
MAX_PAGE_BYTES = 1 << 20
"""A page ends after this many items or once it passes this many bytes (it always holds one), far below a
client's default 4 MiB message limit."""


def list_page(found: list[Expectation], page_size: int) -> pb.ListExpectationsResponse:
    """Up to `page_size` (at most `MAX_PAGE_SIZE`) of `found`, stopping early past `MAX_PAGE_BYTES`; 0: all.

    The page token is the last name sent: names are listed in order, so the next page starts after it
    whatever was written or deleted in between.
    """
    response = pb.ListExpectationsResponse()
    limit, size = (min(page_size, MAX_PAGE_SIZE) if page_size else len(found)), 0
    for i, exp in enumerate(found):
        if i == limit or (page_size and size > MAX_PAGE_BYTES):
            response.next_page_token = found[i - 1].name
            break
        message = expectation_to_proto(exp)
        size += message.ByteSize()
        response.expectations.append(message)
    return response
