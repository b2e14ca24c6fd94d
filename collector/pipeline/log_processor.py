"""`ToolscoreLogProcessor`: the GenAI events an application emits as log records, fed to the scoring engine.

    logger_provider.add_log_record_processor(span_processor.log_record_processor())

The GenAI conventions' default form emits message content, tool calls included, as log records (events)
in the context of the chat span, not on the span (`toolscore.collector.sources.log_events`). This processor
hands each one to the engine of a `ToolscoreSpanProcessor`, which joins it to its span, whichever comes first
(the record is emitted while its span is open, so mostly first). It passes nothing on and changes nothing:
the application's own log processors still export every record. `on_emit` runs on the emitting thread and
never blocks or raises: a name check (most records are plain logs, not looked at further), a copy of the
event's attributes and body, and a bounded queue that counts what it cannot take
(`toolscore.log_records`, outcome `dropped`, reason `queue_full`).
"""

from __future__ import annotations

import logging
from typing import Any

from opentelemetry.sdk._logs import LogRecordProcessor

from toolscore.collector.pipeline.engine import Engine
from toolscore.collector.sources.sdk_logs import event_from_log_record

__all__ = ["ToolscoreLogProcessor"]

_log = logging.getLogger("toolscore.pipeline")


class ToolscoreLogProcessor(LogRecordProcessor):
    """Feeds GenAI log events to `engine` (a `ToolscoreSpanProcessor`'s); its lifecycle is the span processor's."""

    def __init__(self, engine: Engine[Any]) -> None:
        self.engine = engine

    def on_emit(self, log_record: Any) -> None:
        """Never blocks, never raises: queue the record's GenAI event, if it is one (see the module docstring)."""
        try:
            event = event_from_log_record(getattr(log_record, "log_record", log_record))
            if event is not None and not self.engine.events.closed:  # after shutdown, no worker would take it
                self.engine.offer_event(event)
        except Exception:  # a processor must not break the application that emits the record
            _log.exception("toolscore log record processor failed on emit")

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Nothing of its own to flush: the span processor's `force_flush` scores what the events joined."""
        return True

    def shutdown(self) -> None:
        """Nothing of its own to stop: the span processor's `shutdown` stops the engine."""
