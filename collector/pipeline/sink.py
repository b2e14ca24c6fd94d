"""Where spans leave the pipeline: the `Sink` protocol and the enrichment added to a scored run span.

The engine never looks inside a carrier (the source's own span object: an SDK `ReadableSpan`
in-process, a protobuf `Span` in the collector); it hands carriers back through a sink, which knows
how to pass them on and how to build a run span with extra attributes and events.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["EventSpec", "ListSink", "RunEnrichment", "Sink"]

C = TypeVar("C")
C_contra = TypeVar("C_contra", contravariant=True)


@dataclass(frozen=True, slots=True)
class EventSpec:
    """One span event to add: OTel `Event(name, attributes, timestamp)` in source-neutral form."""

    name: str
    time_ns: int
    attributes: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RunEnrichment:
    """What a scored run span gains: attributes that are added (overriding equal keys) and events appended."""

    attributes: dict[str, Any] = field(default_factory=dict)
    events: tuple[EventSpec, ...] = ()


class Sink(Protocol[C_contra]):
    """Receives every carrier the engine was given, exactly once, on the engine's worker thread.

    One exception: spans still queued when `Engine.shutdown` gives up waiting for a stuck worker are
    released from the thread calling shutdown, possibly while the worker is inside a call here.

    Implementations must not raise (the engine logs and carries on if they do) and should not block
    for long: they run between scoring steps.
    """

    def release(self, carriers: Sequence[C_contra]) -> None:
        """Pass these spans on unchanged."""
        ...

    def release_run(self, carrier: C_contra, enrichment: RunEnrichment) -> None:
        """Pass a scored run span on, with `enrichment` merged into its attributes and events."""
        ...


@dataclass
class ListSink(Generic[C]):
    """A sink that keeps what it is given, in order; for tests and for callers that batch themselves."""

    released: list[C] = field(default_factory=list)
    enriched: list[tuple[C, RunEnrichment]] = field(default_factory=list)

    def release(self, carriers: Sequence[C]) -> None:
        self.released.extend(carriers)

    def release_run(self, carrier: C, enrichment: RunEnrichment) -> None:
        self.enriched.append((carrier, enrichment))
