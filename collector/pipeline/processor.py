"""`ToolscoreSpanProcessor`: the scoring engine as an OpenTelemetry SDK span processor, in front of another.

    provider.add_span_processor(ToolscoreSpanProcessor(registry=registry, next=BatchSpanProcessor(exporter)))

Every span reaches `next` exactly once. A span of a trace that has shown no agent marker yet (see
`markers`: HTTP, database and other spans no convention could read) goes on at once, on the thread that
ends it, unread; the pipeline never holds it. Spans that are no agent run's span go on at once (from the
pipeline's worker thread); a run span goes on when its run is scored, as a new `ReadableSpan` with
the score attributes and `gen_ai.evaluation.result` events added. `on_end` only queues the span; when
the queue is full, or after shutdown, the span goes straight to `next`, unscored, and a run that a
refused span belonged to is scored flagged `toolscore.run.incomplete`. When the privacy settings mask
anything (`pipeline.extract.privacy`), `next` gets every span with its content masked as the runs are
(`masked_spans`), as `serve` forwards it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import Event, ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import Tracer

from toolscore.collector.pipeline.config import PipelineConfig
from toolscore.collector.pipeline.engine import Engine
from toolscore.collector.pipeline.log_processor import ToolscoreLogProcessor
from toolscore.collector.pipeline.markers import AgentTraces, convention_markers
from toolscore.collector.pipeline.masked_spans import masking
from toolscore.collector.pipeline.match import Matcher
from toolscore.collector.pipeline.sink import RunEnrichment
from toolscore.collector.pipeline.span_gate import span_decoder, span_gate
from toolscore.collector.sources.sdk import frozen_attributes, record_from_readable
from toolscore.collector.telemetry import NoopTelemetry, PipelineTelemetry
from toolscore.scorers._llm_judge_trace import JUDGE_SCOPE

__all__ = ["ToolscoreSpanProcessor", "enriched_span"]

_log = logging.getLogger("toolscore.pipeline")
_SHUTDOWN_TIMEOUT_MS = 30_000


class _EnrichedSpan(ReadableSpan):
    """A run span rebuilt with its scores, reporting the counts the SDK's limits dropped from the original.

    A `ReadableSpan` built from plain collections reports 0 for each (the SDK keeps the counts in its
    bounded containers), so without these the exported run span (OTLP `dropped_*_count`) would claim
    that nothing was cut, unlike every other span of the application.
    """

    def __init__(self, span: ReadableSpan, attributes: dict[str, Any], events: tuple[Event, ...]) -> None:
        super().__init__(
            name=span.name,
            context=span.context,
            parent=span.parent,
            resource=span.resource,
            attributes=attributes,
            events=events,
            links=span.links,
            kind=span.kind,
            status=span.status,
            start_time=span.start_time,
            end_time=span.end_time,
            instrumentation_scope=span.instrumentation_scope,
        )
        self._dropped = (span.dropped_attributes, span.dropped_events, span.dropped_links)

    @property
    def dropped_attributes(self) -> int:
        return self._dropped[0]

    @property
    def dropped_events(self) -> int:
        return self._dropped[1]

    @property
    def dropped_links(self) -> int:
        return self._dropped[2]


def enriched_span(span: ReadableSpan, enrichment: RunEnrichment) -> ReadableSpan:
    """A copy of `span` with the enrichment's attributes merged in and its events appended."""
    frozen = frozen_attributes(span)
    attributes: dict[str, Any] = frozen.copy() if frozen is not None else dict(span.attributes or {})
    for key, value in enrichment.attributes.items():
        attributes[key] = tuple(value) if isinstance(value, list) else value  # the SDK keeps sequences as tuples
    events = (*span.events, *(Event(e.name, e.attributes, e.time_ns) for e in enrichment.events))
    return _EnrichedSpan(span, attributes, events)


class _NextSink:
    """Hands carriers to the next span processor (on the pipeline's worker thread)."""

    def __init__(self, next_processor: SpanProcessor) -> None:
        self.next = next_processor

    def release(self, carriers: Sequence[ReadableSpan]) -> None:
        on_end = self.next.on_end
        for span in carriers:
            on_end(span)

    def release_run(self, carrier: ReadableSpan, enrichment: RunEnrichment) -> None:
        self.next.on_end(enriched_span(carrier, enrichment))


def _default_telemetry() -> PipelineTelemetry:
    """The OTel telemetry on the global meter and logger providers (no-ops until the application sets them)."""
    try:
        from toolscore.collector.telemetry import create_telemetry

        return create_telemetry()
    except ImportError:  # the OTel implementation is not installed in this build
        return NoopTelemetry()


def _no_hook(span: Span) -> None:
    pass


def _failed(exc: BaseException) -> None:
    _log.error("toolscore span processor failed on span end", exc_info=exc)


class ToolscoreSpanProcessor(SpanProcessor):
    """Scores agent runs as their spans end, and passes every span on to `next` (see the module docstring).

    `registry` is a `toolscore.collector.registry.Registry` (anything with `match(run)`); `telemetry`
    defaults to the OTel implementation on the global meter and logger providers.
    """

    def __init__(
        self,
        registry: Matcher,
        next: SpanProcessor,
        config: PipelineConfig | None = None,
        telemetry: PipelineTelemetry | None = None,
        *,
        judge_tracer: Tracer | None = None,
    ) -> None:
        """`judge_tracer` traces each LLM-judge request as a GenAI `chat` span (`toolscore.instrument()` passes the
        instrumented provider's, so judge spans go where the application's spans go; default: the global
        provider's). Spans of its scope (`JUDGE_SCOPE`) pass straight on: toolscore never scores its own."""
        self.config = config or PipelineConfig()
        next = masking(next, self.config.extract.privacy)  # the spans passed on masked as the runs are
        self.next = next
        self.engine: Engine[ReadableSpan] = Engine(
            registry,
            _NextSink(next),
            span_decoder() or record_from_readable,
            self.config,
            telemetry or _default_telemetry(),
            tracer=judge_tracer,
        )
        self._markers = convention_markers() if self.config.prefilter else None
        self._agent_traces: AgentTraces[int] = AgentTraces(2 * self.config.max_pending_traces)
        self._agent_ids = self._agent_traces.ids  # read by `on_end` without a call per span
        self._skips = self.engine.intake.skips
        self.engine.start()
        self._shut_down = False
        self._logs: ToolscoreLogProcessor | None = None
        self._next_on_ending: Callable[[Span], None] = getattr(next, "_on_ending", _no_hook)  # SDKs < 1.31: none
        self._install_shortcuts()

    def _install_shortcuts(self) -> None:
        """The calls the SDK makes for every span the application starts and ends, with as little Python between
        as can be: `on_start` and `_on_ending` become `next`'s own, and with the pre-filter on, `on_end` the
        compiled gate (`span_gate`) where it is built, which passes plain spans on itself and hands every other
        span to the `on_end` below. Each is an instance attribute (the SDK's `processor.on_end(span)` calls
        it), installed only where a subclass did not override the method, which it would bypass."""
        cls = type(self)
        if cls.on_start is ToolscoreSpanProcessor.on_start:
            vars(self)["on_start"] = self.next.on_start
        if cls._on_ending is ToolscoreSpanProcessor._on_ending:
            vars(self)["_on_ending"] = self._next_on_ending
        if self._markers is None or cls.on_end is not ToolscoreSpanProcessor.on_end:
            return
        gate = span_gate(
            agent_ids=self._agent_ids,
            markers=self._markers,
            stop_scopes=frozenset({JUDGE_SCOPE}),
            passed=self.next.on_end,
            counted=self._skips,
            slow=self.on_end,
            failed=_failed,
        )
        if gate is not None:
            vars(self)["on_end"] = gate

    @property
    def is_shut_down(self) -> bool:
        """Whether `shutdown` has been called: spans then pass straight on, unscored."""
        return self._shut_down

    def log_record_processor(self) -> ToolscoreLogProcessor:
        """A log record processor feeding this processor's engine the GenAI events the application emits as
        log records (the GenAI conventions' default form); add it to the application's SDK `LoggerProvider`
        (`toolscore.instrument()` does when there is one). The same one each time."""
        if self._logs is None:
            self._logs = ToolscoreLogProcessor(self.engine)
        return self._logs

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.next.on_start(span, parent_context=parent_context)

    def _on_ending(self, span: Span) -> None:
        """The SDK's hook just before a span ends (it may still be changed): `next`'s, called as the SDK would."""
        self._next_on_ending(span)

    def on_end(self, span: ReadableSpan) -> None:
        """Never blocks, never raises: queue the span, or pass it straight on when that is impossible.

        This runs on the application's thread for every span it ends, so the fields of an SDK-ended span are
        read directly (each public property is a Python call): most spans of a service are no agent's, and for
        them the pre-filter's test (`markers`) is all toolscore costs. Where the compiled gate is installed
        (`_install_shortcuts`), it makes that test first and only the spans it does not pass on come here.
        """
        try:
            if type(span) is ReadableSpan:
                scope, context = span._instrumentation_scope, span._context
            else:
                scope, context = span.instrumentation_scope, span.context
            scope_name = scope.name if scope is not None else None
            if self._shut_down or scope_name == JUDGE_SCOPE:
                self.next.on_end(span)
                return
            markers = self._markers
            if markers is not None and context is not None and context.trace_id not in self._agent_ids:
                attributes = frozen_attributes(span)
                if not markers.marks(scope_name, span.attributes or () if attributes is None else attributes):
                    # no marker in its trace so far, nor on it: passed on unread
                    next(self._skips)
                    self.next.on_end(span)
                    return
                self._agent_traces.add(context.trace_id)
            if not self.engine.offer(span):  # a span without context too: the engine counts it and passes it on
                self._refused(span)
            elif self._shut_down:  # shutdown began meanwhile: its last drain may have come before our offer
                for stranded in self.engine.stranded():
                    self.next.on_end(stranded)
        except Exception:  # a processor must not break the application that ends the span
            _log.exception("toolscore span processor failed on span end")

    def _refused(self, span: ReadableSpan) -> None:
        """The queue is full: note the span, so that its run is scored flagged incomplete, and pass it on."""
        try:
            context, parent = span.context, span.parent
            if context is not None:
                parent_id = f"{parent.span_id:016x}" if parent is not None else None
                self.engine.note_refused(f"{context.trace_id:032x}", f"{context.span_id:016x}", parent_id)
        finally:
            self.next.on_end(span)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Score or release everything pending, then flush `next`; True when both finished in time."""
        deadline = time.monotonic() + timeout_millis / 1000
        flushed = self.engine.flush(timeout_millis / 1000)
        left_ms = max(0, int((deadline - time.monotonic()) * 1000))
        return self.next.force_flush(left_ms) and flushed

    def shutdown(self) -> None:
        """Score or release everything pending (up to 30 s), stop the worker, then shut `next` down. Idempotent."""
        if self._shut_down:
            return
        self._shut_down = True
        vars(self).pop("on_end", None)  # the gate: after shutdown every span goes straight on, uncounted
        self.engine.shutdown(_SHUTDOWN_TIMEOUT_MS / 1000)
        self.next.shutdown()
