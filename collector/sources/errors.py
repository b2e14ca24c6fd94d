"""What can go wrong while decoding spans: errors that stop a document, and counted skips that do not.

A malformed document (bytes that are not protobuf, text that is not JSON, a field of the wrong type)
raises, because nothing in it can be trusted. A single span with an unusable id is skipped and
counted instead: one bad span must not cost the other spans of a batch.
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_ECHO_CHARS",
    "MAX_MESSAGE_CHARS",
    "MAX_SKIP_EXAMPLES",
    "DecodeStats",
    "SpanDecodeError",
    "TraceFileError",
    "capped",
    "echo",
]

MAX_SKIP_EXAMPLES = 10
"""How many skipped spans keep a description, so a report can show some without unbounded memory."""

MAX_ECHO_CHARS = 64
"""Longest piece of a sender's value (an id, a name) quoted in an error message; the rest is its length."""

MAX_MESSAGE_CHARS = 2048
"""Longest error message answered to a sender. OTLP's `error_message` is a short human-readable
explanation, and an answer larger than the client's receive limit (4 MiB for gRPC) fails as
RESOURCE_EXHAUSTED, which OTLP exporters retry: the accepted spans would be sent again."""

_REPR = reprlib.Repr()  # bounded by construction: a few items of a few levels, however large the value
_REPR.maxlevel, _REPR.maxdict, _REPR.maxlist, _REPR.maxstring = 2, 4, 4, MAX_ECHO_CHARS


def echo(value: Any) -> str:
    """A sender's value as quoted in an error message: bytes as hex, anything else as its repr, cut to
    about `MAX_ECHO_CHARS` characters with an ellipsis and the value's full length.

    Only the part shown is converted, so a 2 MB id costs 64 characters, not a 4 MB hex string.
    """
    if isinstance(value, bytes | bytearray):
        shown = value[: MAX_ECHO_CHARS // 2].hex()
        return shown if len(value) <= MAX_ECHO_CHARS // 2 else f"{shown}… ({len(value)} bytes)"
    if isinstance(value, str):
        shown = repr(value[:MAX_ECHO_CHARS])
        return shown if len(value) <= MAX_ECHO_CHARS else f"{shown}… ({len(value)} characters)"
    return capped(_REPR.repr(value), MAX_ECHO_CHARS)


def capped(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`message` cut to `limit` characters, saying how much was left out."""
    if len(message) <= limit:
        return message
    return f"{message[:limit]}… and {len(message) - limit} more characters"


def _located(message: str, offset: int | None, line: int | None) -> str:
    if line is not None:
        return f"line {line}: {message}"
    if offset is not None:
        return f"byte {offset}: {message}"
    return message


class SpanDecodeError(ValueError):
    """A document that cannot be decoded; the message names the field or position that is wrong.

    `offset` is a byte offset into the decoded payload, `line` a 1-based line number (JSON Lines,
    JSON syntax errors); either may be None when it does not apply. `field` is the path of the field at
    fault (`resourceSpans[0].scopeSpans[1].spans[3].kind`), which `message` begins with; `reason` is the
    message without it, for a caller that places the field itself (the receivers' `BadPayload`).
    """

    def __init__(
        self, message: str, *, offset: int | None = None, line: int | None = None, field: str | None = None
    ) -> None:
        self.reason = message
        self.message = f"{field}: {message}" if field else message
        super().__init__(_located(self.message, offset, line))
        self.offset = offset
        self.line = line
        self.field = field


class TraceFileError(ValueError):
    """A trace file, or part of one, that could not be read: names the file and where in it."""

    def __init__(self, path: str, message: str, *, offset: int | None = None, line: int | None = None) -> None:
        self.path = path
        self.message = message
        self.offset = offset
        self.line = line
        super().__init__(f"{path}: {_located(message, offset, line)}")


@dataclass(slots=True)
class DecodeStats:
    """Counters a source adds to as it decodes; share one across calls to total a whole input."""

    spans: int = 0
    """Spans converted into records."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Spans skipped, by reason (`bad_trace_id`, `bad_span_id`, `bad_parent_span_id`)."""
    examples: list[str] = field(default_factory=list)
    """Descriptions of the first `MAX_SKIP_EXAMPLES` skipped spans."""
    id_encodings: dict[str, int] = field(default_factory=dict)
    """OTLP/JSON spans read, by how their ids were written: `hex` (the OTLP/JSON spec) or `base64` (the
    protobuf JSON mapping, as `MessageToJson` writes it). Protobuf input counts in neither."""

    def read_ids(self, encoding: str) -> None:
        self.id_encodings[encoding] = self.id_encodings.get(encoding, 0) + 1

    def skip(self, reason: str, detail: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        if len(self.examples) < MAX_SKIP_EXAMPLES:
            self.examples.append(f"{reason}: {detail}")

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())
