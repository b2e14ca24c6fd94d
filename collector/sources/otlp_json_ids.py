"""Trace and span ids in OTLP/JSON: hex, as the OTLP spec writes them, or base64, as the protobuf JSON mapping does.

The OTLP/JSON spec departs from the protobuf JSON mapping for ids: `traceId` and `spanId` are hex strings
(case-insensitive), not base64. But the Python tools write the mapping's form: protobuf's `MessageToJson`
(and `json_format` everywhere) gives a 16-byte trace id as 24 base64 characters with padding. Both are read,
told apart by the spec's lengths, which never overlap:

    trace id (16 bytes): hex 32 characters;  base64 24 (22 without padding)
    span id   (8 bytes): hex 16 characters;  base64 12 (11 without padding)

Base64 as the mapping's parsers accept it: standard or URL-safe alphabet, padding optional. A value of
another length, or outside both alphabets, identifies nothing. One rule for spans, links and log records,
whether read from a file or a request body (`otlp_json`, `otlp_logs`, `serve.otlp_json_request`).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Literal

__all__ = ["HEX", "IdEncoding", "id_problem", "json_id", "json_link_id"]

IdEncoding = Literal["hex", "base64"]
HEX: IdEncoding = "hex"
BASE64: IdEncoding = "base64"

_HEX = {16: re.compile(r"[0-9a-fA-F]{32}").fullmatch, 8: re.compile(r"[0-9a-fA-F]{16}").fullmatch}
_ANY_HEX = re.compile(r"(?:[0-9a-fA-F]{2})*").fullmatch
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}").fullmatch
_FIELD_BYTES = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


def _base64_length(size: int) -> tuple[int, int]:
    """(padded, unpadded) base64 length of `size` bytes."""
    return 4 * -(-size // 3), -(-size * 4 // 3)


def _from_base64(value: str, size: int | None) -> bytes | None:
    if size is not None and len(value) not in _base64_length(size):
        return None
    if not _BASE64(value):
        return None
    text = value.rstrip("=").replace("-", "+").replace("_", "/")
    try:
        decoded = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except binascii.Error:
        return None
    return decoded if size is None or len(decoded) == size else None


def json_id(value: Any, size: int) -> tuple[str, IdEncoding] | None:
    """The id of `size` bytes in `value` as lowercase hex, and how it was written; None when it is neither
    hex nor base64 of that many bytes. Zeros are returned as such: whether they may stand is the caller's rule."""
    if type(value) is not str:
        return None
    if _HEX[size](value):
        return value.lower(), HEX
    decoded = _from_base64(value, size)
    return None if decoded is None else (decoded.hex(), BASE64)


def json_link_id(value: Any, size: int) -> bytes | None:
    """A link's id as bytes, or None when it is not an id at all. Checked no further than the protobuf path
    checks a binary one (any even run of hex digits, zeros included), or base64 of `size` bytes."""
    if type(value) is not str:
        return None
    if _ANY_HEX(value):
        return bytes.fromhex(value)
    return _from_base64(value, size)


def id_problem(name: str, shown: str) -> str:
    """Why the `name` field (`traceId`, `spanId`, `parentSpanId`, `links[0].spanId`), quoted as `shown`, is no id."""
    size = _FIELD_BYTES.get(name.rsplit(".", 1)[-1], 8)
    padded = _base64_length(size)[0]
    return (
        f"{name} {shown} is not {size * 2} hex digits (OTLP/JSON) nor {padded} base64 characters "
        f"(the protobuf JSON mapping) of a {size}-byte id"
    )
