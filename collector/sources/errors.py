"""What can go wrong while decoding spans: errors that stop a document, and counted skips that do not.

A malformed document (bytes that are not protobuf, text that is not JSON, a field of the wrong type)
raises, because nothing in it can be trusted. A single span with an unusable id is skipped and
counted instead: one bad span must not cost the other spans of a batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MAX_SKIP_EXAMPLES", "DecodeStats", "SpanDecodeError", "TraceFileError"]

MAX_SKIP_EXAMPLES = 10
"""How many skipped spans keep a description, so a report can show some without unbounded memory."""


def _located(message: str, offset: int | None, line: int | None) -> str:
    if line is not None:
        return f"line {line}: {message}"
    if offset is not None:
        return f"byte {offset}: {message}"
    return message


class SpanDecodeError(ValueError):
    """A document that cannot be decoded; the message names the field or position that is wrong.

    `offset` is a byte offset into the decoded payload, `line` a 1-based line number (JSON Lines,
    JSON syntax errors); either may be None when it does not apply.
    """

    def __init__(self, message: str, *, offset: int | None = None, line: int | None = None) -> None:
        super().__init__(_located(message, offset, line))
        self.message = message
        self.offset = offset
        self.line = line


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

    def skip(self, reason: str, detail: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        if len(self.examples) < MAX_SKIP_EXAMPLES:
            self.examples.append(f"{reason}: {detail}")

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())
