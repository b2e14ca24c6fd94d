"""Reading an OTLP/HTTP request body safely: its length, which encoding it is in, and gzip within a hard
size cap.

The length is strict (RFC 9112 §6.3): ASCII digits only, and several Content-Length values must agree,
since a body whose framing is in doubt cannot be told from the next request on the connection. A
chunked body (RFC 9112 §7.1; OpenTelemetry Java sends one with gzip, and for http/json) is read chunk
by chunk against the same limit, refused as soon as the announced sizes pass it, and its trailers are
read and ignored; framing that breaks the grammar is an error, as the rest of the connection is then
unreadable.

A gzip body is decompressed incrementally, never more than the cap plus one byte, so a few kilobytes
that would expand to gigabytes (a gzip bomb) cost no more memory than an honest request at the limit.
A body that stops before the gzip end marker is an error, not a shorter request: what was cut off is
unknown, so nothing in it can be trusted.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from typing import Literal, Protocol

from toolscore.collector.serve.otlp_export import BadPayload

__all__ = [
    "PROTOBUF",
    "BodyCut",
    "BodyTooLarge",
    "Encoding",
    "content_length",
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

Encoding = Literal["proto", "json"]


class BodyTooLarge(ValueError):
    """The body, or what it decompresses to, is over the configured limit: HTTP 413."""


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


def read_chunked(stream: _Stream, limit: int) -> bytes:
    """A chunked body of at most `limit` bytes, from just after the headers to the end of its trailers.

    Raises `BodyTooLarge` once the chunk sizes add up past `limit` (before that chunk is read),
    `BadPayload` for framing that is not RFC 9112 chunked, and `BodyCut` when the stream ends first.
    """
    body = bytearray()
    while size := _chunk_size(_line(stream, "chunk size")):
        if len(body) + size > limit:
            raise BodyTooLarge(f"the chunked body is over the {limit}-byte limit")
        data = stream.read(size)
        if len(data) < size:
            raise BodyCut
        body += data
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
    return bytes(body)


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
