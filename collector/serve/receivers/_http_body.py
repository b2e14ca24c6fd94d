"""Reading an OTLP/HTTP request body safely: its length, which encoding it is in, and gzip within a hard
size cap.

The length is strict (RFC 9112 §6.3): ASCII digits only, and several Content-Length values must agree,
since a body whose framing is in doubt cannot be told from the next request on the connection. A
chunked body (RFC 9112 §7.1; OpenTelemetry Java sends one with gzip, and for http/json) is read chunk
by chunk against the same limit, refused as soon as the announced sizes pass it, and its trailers are
read and ignored; framing that breaks the grammar is an error, as the rest of the connection is then
unreadable.

A body over the limit is still read to its end, and dropped, when it is no longer than the discard bound
(`discard`, and `read_chunked`'s `discard_limit`): a client that sends its whole body before reading the answer
(Python's `http.client`) would otherwise meet a closed connection, and never see the 413. Dropped data is read
in 64 KiB pieces, so a discarded body costs time on the connection, never memory.

A gzip body is decompressed incrementally, never more than the cap plus one byte, so a few kilobytes
that would expand to gigabytes (a gzip bomb) cost no more memory than an honest request at the limit.
A body that stops before the gzip end marker is an error, not a shorter request: what was cut off is
unknown, so nothing in it can be trusted.
"""

from __future__ import annotations

import itertools
import re
import zlib
from collections.abc import Iterable, Iterator
from typing import Literal, Protocol

from toolscore.collector.serve.receivers._otlp_export import BadPayload

__all__ = [
    "PROTOBUF",
    "BodyCut",
    "BodyTooLarge",
    "Encoding",
    "content_length",
    "discard",
    "discard_chunked",
    "gunzip_bounded",
    "media_format",
    "read_chunked",
]

PROTOBUF = "application/x-protobuf"
_JSON = "application/json"
_GZIP_WBITS = 16 + zlib.MAX_WBITS
_DIGITS = re.compile(r"[0-9]+").fullmatch  # not str.isdigit, which takes '²' and other Unicode digits
_HEX = re.compile(rb"[0-9A-Fa-f]+").fullmatch
_LINE_MAX = 4096
"""Longest chunk-size or trailer line read: a size and its extensions are a few bytes in practice."""
_TRAILERS_MAX = 64 * 1024
_PIECE = 64 * 1024
"""Bytes read at a time from a body that is dropped."""

Encoding = Literal["proto", "json"]


class BodyTooLarge(ValueError):
    """The body, or what it decompresses to, is over the configured limit: HTTP 413.

    `drained`: the rest of the body was read and dropped, so the connection can carry the next request.
    """

    def __init__(self, message: str, *, drained: bool = False) -> None:
        super().__init__(message)
        self.drained = drained


class BodyCut(EOFError):
    """The connection ended before the body did: the sender went away, there is no one to answer."""


class _Stream(Protocol):
    def read(self, size: int, /) -> bytes: ...

    def readline(self, size: int, /) -> bytes: ...


def media_format(content_type: str | None) -> Encoding | None:
    """`proto` or `json` for the two OTLP media types (parameters such as `charset` ignored), else None."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media == PROTOBUF:
        return "proto"
    if media == _JSON:
        return "json"
    return None


def content_length(values: Iterable[str], limit: int) -> int:
    """The body length that the Content-Length header(s) give, at most `limit`.

    Raises `BadPayload` for a value that is not a number, or several that differ (`42, 42` is 42), and
    `BodyTooLarge` for a length over `limit`.
    """
    lengths = set()
    for value in values:
        for item in value.split(","):
            text = item.strip()
            if not _DIGITS(text):
                raise BadPayload(f"Content-Length {text[:40]!r} is not a number")
            digits = text.lstrip("0") or "0"
            if len(digits) > 18:  # past any limit; int() refuses past 4,300 digits
                raise BodyTooLarge(f"the body is over the {limit}-byte limit (a {len(digits)}-digit Content-Length)")
            lengths.add(int(digits))
    if len(lengths) != 1:
        shown = ", ".join(str(length) for length in sorted(lengths)[:4])
        raise BadPayload(f"Content-Length values disagree ({shown}): the body's end is unknown")
    (length,) = lengths
    if length > limit:
        raise BodyTooLarge(f"the body is {length} bytes, over the {limit}-byte limit")
    return length


def _line(stream: _Stream, what: str) -> bytes:
    line = stream.readline(_LINE_MAX + 1)
    if line.endswith(b"\r\n"):
        return line[:-2]
    if len(line) > _LINE_MAX:
        raise BadPayload(f"chunked body: {what} line longer than {_LINE_MAX} bytes")
    if line.endswith(b"\n"):
        raise BadPayload(f"chunked body: {what} line ends in a bare LF, not CRLF")
    raise BodyCut


def _chunk_size(line: bytes) -> int:
    size = line.partition(b";")[0].rstrip(b" \t")  # extensions (`;name=value`) are ignored
    if not _HEX(size):
        raise BadPayload(f"chunked body: chunk size {line[:40]!r} is not hexadecimal")
    return int(size, 16)


def _chunks(stream: _Stream) -> Iterator[int]:
    """The size of each chunk of a chunked body, the stream left at its data, which the caller reads (or drops)
    before asking for the next; after the last chunk, the trailers are read and ignored."""
    while size := _chunk_size(_line(stream, "chunk size")):
        yield size
        end = stream.read(2)
        if end != b"\r\n":
            if len(end) < 2:
                raise BodyCut
            raise BadPayload(f"chunked body: the {size}-byte chunk is not followed by CRLF (a wrong chunk size?)")
    trailers = 0
    while trailer := _line(stream, "trailer"):
        trailers += len(trailer) + 2
        if trailers > _TRAILERS_MAX:
            raise BadPayload(f"chunked body: trailers over {_TRAILERS_MAX} bytes")


def discard(stream: _Stream, length: int) -> None:
    """Read and drop `length` bytes, 64 KiB at a time; raises `BodyCut` when the stream ends first."""
    while length > 0:
        data = stream.read(min(length, _PIECE))
        if not data:
            raise BodyCut
        length -= len(data)


def read_chunked(stream: _Stream, limit: int, discard_limit: int = 0) -> bytes:
    """A chunked body of at most `limit` bytes, from just after the headers to the end of its trailers.

    Raises `BodyTooLarge` once the chunk sizes add up past `limit`: drained (`BodyTooLarge.drained`) when the
    whole body, no longer than `discard_limit`, was then read and dropped, else as soon as the announced sizes
    pass `discard_limit` (before that chunk is read). Raises `BadPayload` for framing that is not RFC 9112
    chunked, and `BodyCut` when the stream ends first.
    """
    body = bytearray()
    chunks = _chunks(stream)
    for size in chunks:
        if len(body) + size > limit:
            drained = _drop_chunks(stream, itertools.chain((size,), chunks), len(body), discard_limit)
            raise BodyTooLarge(f"the chunked body is over the {limit}-byte limit", drained=drained)
        data = stream.read(size)
        if len(data) < size:
            raise BodyCut
        body += data
    return bytes(body)


def _drop_chunks(stream: _Stream, sizes: Iterable[int], total: int, discard_limit: int) -> bool:
    """Drop the chunks of `sizes` (the body so far: `total` bytes); False once they pass `discard_limit`."""
    for size in sizes:
        total += size
        if total > discard_limit:
            return False
        discard(stream, size)
    return True


def discard_chunked(stream: _Stream, discard_limit: int) -> bool:
    """Read and drop a chunked body of at most `discard_limit` bytes; False: it is longer, and left unread."""
    try:
        read_chunked(stream, 0, discard_limit)
    except BodyTooLarge as exc:
        return exc.drained
    return True


def _member(data: bytes, out: bytearray, limit: int) -> bytes:
    """Inflate one gzip member into `out`; returns the input that follows it."""
    inflater = zlib.decompressobj(_GZIP_WBITS)
    try:
        chunk = inflater.decompress(data, limit - len(out) + 1)
        while True:
            out += chunk
            if len(out) > limit:
                raise BodyTooLarge(f"the gzip body decompresses to more than {limit} bytes")
            if not inflater.unconsumed_tail:
                break
            chunk = inflater.decompress(inflater.unconsumed_tail, limit - len(out) + 1)
    except zlib.error as exc:
        raise BadPayload(f"Content-Encoding is gzip but the body is not valid gzip: {exc}") from None
    if not inflater.eof:
        raise BadPayload(
            f"truncated gzip body: the stream ends before its end marker (after {len(out)} decompressed bytes)"
        )
    return inflater.unused_data


def gunzip_bounded(data: bytes, limit: int) -> bytes:
    """Decompress a gzip body (one or more members) of at most `limit` bytes decompressed.

    Raises `BodyTooLarge` as soon as the output would pass `limit`, and `BadPayload` for data that is
    not gzip or is cut short.
    """
    out = bytearray()
    while data:
        data = _member(data, out, limit)
    return bytes(out)
