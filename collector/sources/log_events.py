"""GenAI log events: which OTLP log records toolscore reads, and how each becomes an event of its span.

The GenAI conventions' default form (opentelemetry-instrumentation-openai-v2 with content capture on and
no opt-in, for one) sends message content, tool calls included, as log records (`gen_ai.*` events)
emitted in the context of the chat span, not on the span. toolscore reads such a record as an event of
that span (`LogEvent`): its name is the record's event name (OTLP `LogRecord.event_name`, else the
`event.name` attribute older emitters set), its time the record's time (else its observed time), its
attributes the record's with the decoded body under `BODY_KEY`. Extraction then reads events from spans
alike, whether they came on the span or as log records (`merge_events` is the one join).

Which records are read: the GenAI events of `GENAI_EVENT_NAMES` that carry a valid trace and span id.
Every other record is refused, not forwarded: toolscore is not a logs pipeline. A deployment fans a copy
of its GenAI logs out to toolscore from its Collector (as it does its traces) and sends its logs to their
store as before; forwarding logs would make toolscore a second, lossy route for them. A refused record is
answered in OTLP's partial success (`rejected_log_records` and an `error_message` saying why) and counted
(`toolscore.log_records`, outcome `refused`) under its `refusal` reason: `not_genai_event` (any other
record, plain logs included), `no_span_context` (a GenAI event without a trace and span id: nothing to
join it to), `evaluation_result` (toolscore's own `gen_ai.evaluation.result` coming back).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from toolscore.collector.spans import SpanEvent, SpanRecord

__all__ = [
    "BODY_KEY",
    "EVENT_NAME_ATTRIBUTE",
    "GENAI_EVENT_NAMES",
    "REFUSAL_TEXT",
    "LogBatch",
    "LogEvent",
    "LogRefusals",
    "event_name",
    "event_of",
    "join_log_events",
    "merge_events",
    "refusal",
]

GENAI_EVENT_NAMES: Final = frozenset(
    {
        "gen_ai.system.message",
        "gen_ai.user.message",
        "gen_ai.assistant.message",
        "gen_ai.tool.message",
        "gen_ai.choice",
        "gen_ai.client.inference.operation.details",
    }
)
"""The GenAI events read: the per-message events (semantic conventions up to v1.36) and the one
per-operation event that replaced them (`gen_ai.client.inference.operation.details`)."""
EVALUATION_RESULT: Final = "gen_ai.evaluation.result"
EVENT_NAME_ATTRIBUTE: Final = "event.name"
"""Where emitters older than OTLP's `LogRecord.event_name` field (proto 1.5) put the event's name."""
BODY_KEY: Final = "body"
"""The key under which a record's body (an AnyValue, usually a map) is kept among its event's attributes."""

REFUSAL_TEXT: Final = {
    "not_genai_event": "not a GenAI event toolscore reads (toolscore takes only the gen_ai.* message and "
    "inference events; send other logs to your logs store)",
    "no_span_context": "a GenAI event without a valid trace and span id: there is no span to join it to",
    "evaluation_result": "toolscore's own gen_ai.evaluation.result events are not read back",
    "invalid": "ids that are neither hex (OTLP/JSON) nor base64 (the protobuf JSON mapping) of an id's size",
}
"""What the partial-success answer says for each refusal reason."""


@dataclass(frozen=True, slots=True)
class LogEvent:
    """A GenAI log record as an event of the span (`trace_id`, `span_id`: lowercase hex) it belongs to."""

    trace_id: str
    span_id: str
    event: SpanEvent


@dataclass(slots=True)
class LogRefusals:
    """The records of one export that were not read, by reason (`refusal`), with a few examples."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def refuse(self, reason: str, name: str) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + 1
        if len(self.examples) < 3:
            self.examples.append(f"{name or '(no event name)'}: {reason}")

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def message(self) -> str:
        """The partial-success `error_message`: how many, why, and a few of them."""
        if not self.counts:
            return ""
        reasons = "; ".join(f"{n} {REFUSAL_TEXT.get(reason, reason)}" for reason, n in sorted(self.counts.items()))
        return f"{self.total} log record(s) not read: {reasons} (e.g. {', '.join(self.examples)})"


@dataclass(slots=True)
class LogBatch:
    """What was read from logs exports: the GenAI events, and the records refused."""

    events: list[LogEvent] = field(default_factory=list)
    refusals: LogRefusals = field(default_factory=LogRefusals)


def event_name(name: str, attributes: Mapping[str, Any]) -> str:
    """The record's event name: OTLP's `event_name` field, else its `event.name` attribute."""
    if name:
        return name
    value = attributes.get(EVENT_NAME_ATTRIBUTE)
    return value if isinstance(value, str) else ""


def refusal(name: str, has_span: bool) -> str | None:
    """Why a record with this event name (and span context or not) is not read; None: it is read."""
    if name not in GENAI_EVENT_NAMES:
        return "evaluation_result" if name == EVALUATION_RESULT else "not_genai_event"
    return None if has_span else "no_span_context"


def event_of(name: str, time_ns: int, attributes: dict[str, Any], body: Any) -> SpanEvent:
    """The span event a read record becomes; `attributes` is the record's own dict, taken (not copied)."""
    if body is not None:
        attributes[BODY_KEY] = body
    return SpanEvent(name, time_ns, attributes)


def merge_events(record: SpanRecord, events: Iterable[SpanEvent]) -> list[SpanEvent]:
    """Add `events` to the span's own, in time order, leaving out any it already has (a re-sent record):
    the one join of log events to spans, for the pipeline and the batch tools alike. Returns those added."""
    have = record.events
    added: list[SpanEvent] = []
    for event in events:
        if event not in have and event not in added:
            added.append(event)
    if added:
        record.events = tuple(sorted((*have, *added), key=_time))
    return added


def _time(event: SpanEvent) -> int:
    return event.time_ns


def join_log_events(spans: Sequence[SpanRecord], events: Iterable[LogEvent]) -> list[LogEvent]:
    """Join each event to its span among `spans` (files read by the batch tools); returns the events whose
    span is not there."""
    by_span: dict[tuple[str, str], list[SpanEvent]] = {}
    for item in events:
        by_span.setdefault((item.trace_id, item.span_id), []).append(item.event)
    for span in spans:
        found = by_span.pop((span.trace_id, span.span_id), None)
        if found:
            merge_events(span, found)
    return [LogEvent(trace_id, span_id, event) for (trace_id, span_id), found in by_span.items() for event in found]
