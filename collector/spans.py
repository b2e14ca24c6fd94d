"""The one span record every source is converted to, and every extractor reads.

A plain slotted class rather than a pydantic model: one is built per received span on the hot path,
so construction must cost no validation. Sources (OTLP protobuf, OTLP/JSON, SDK `ReadableSpan`)
convert into it in `toolscore.collector.sources`; nothing downstream sees the wire formats.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Attributes", "SpanEvent", "SpanRecord", "StatusCode"]

Attributes = Mapping[str, Any]
"""Attribute values as decoded from OTLP: str, bool, int, float, bytes, list of those, or nested dicts."""


class StatusCode:
    """OTLP `Status.code` values."""

    UNSET = 0
    OK = 1
    ERROR = 2


@dataclass(slots=True)
class SpanEvent:
    name: str
    time_ns: int
    attributes: Attributes


@dataclass(slots=True)
class SpanRecord:
    """A finished span, reduced to what extraction and emission need.

    Ids are lowercase hex (32 digits for traces, 16 for spans); `parent_id` is None for a root span.
    `kind` uses the OTLP numbering (INTERNAL = 1, SERVER = 2, CLIENT = 3), not the SDK's `SpanKind`.
    `resource` is shared by every span of one resource block: never mutate it. `events` is a tuple, the
    empty one for the many spans without events: one object less per pending span for the garbage
    collector to scan.
    """

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: int = 0
    start_ns: int = 0
    end_ns: int = 0
    status_code: int = StatusCode.UNSET
    status_message: str = ""
    attributes: Attributes = field(default_factory=dict)
    events: tuple[SpanEvent, ...] = ()
    resource: Attributes = field(default_factory=dict)
    scope: str = ""

    @property
    def service_name(self) -> str | None:
        value = self.resource.get("service.name")
        return value if isinstance(value, str) else None
