"""The scoring engine: the one place the stages are wired together, shared by every span source."""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from opentelemetry.trace import Tracer

from toolscore.collector.pipeline.agent_version import agent_version
from toolscore.collector.pipeline.config import PipelineConfig
from toolscore.collector.pipeline.counted_stats import CountedStats
from toolscore.collector.pipeline.emit import RunScores, build_enrichment
from toolscore.collector.pipeline.group import Admission, Admit, HeldRun, PendingTrace, TraceStore
from toolscore.collector.pipeline.judge import AsyncScorer, JudgePool
from toolscore.collector.pipeline.match import Matcher, ScorePlan, expectation_infos, plan_scores, registry_state
from toolscore.collector.pipeline.receive import Intake
from toolscore.collector.pipeline.refused import Refusals
from toolscore.collector.pipeline.runs import runs_of_trace, runs_under
from toolscore.collector.pipeline.sink import Sink
from toolscore.collector.pipeline.timers import Deadlines
from toolscore.collector.pipeline.verdict import RunVerdicts
from toolscore.collector.pipeline.worker import Worker
from toolscore.collector.registry import Expectation
from toolscore.collector.registry._sampling import sampled_scorers
from toolscore.collector.sources.log_events import LogEvent
from toolscore.collector.spans import SpanRecord
from toolscore.collector.telemetry import NoopTelemetry, PipelineTelemetry, RunSpanRef
from toolscore.scorers._model import AgentRun, Score, ScoreResult

__all__ = ["Engine"]

C = TypeVar("C")
RunKey = tuple[str, str]
"""(trace id, run span id); a trace's own finish uses span id ``""``."""

_log = logging.getLogger("toolscore.pipeline")
_MS = 1_000_000
_STEP_SPANS = 1024
"""Most spans taken from the intake per step: with a backlog, deadlines are still served every ~30 ms.

Draining a full queue at once (16,384 spans in `serve`) took half a second before any run settled or
any span went on, and the pending state grew meanwhile (measured on the `collector.ingest` load
with 77,000-span rounds: 43.1 µs of CPU per span against 38.5 with 25,600-span rounds)."""
# Admit members as module constants: in Python 3.11 every `Admit.X` goes through `EnumType.__getattr__`'s
# lookup hook (about 60 ns, ten times a global), and these are read per span.
_STORED, _HELD, _LATE, _OVER_CAP, _CANDIDATE = Admit.STORED, Admit.HELD, Admit.LATE, Admit.OVER_CAP, Admit.CANDIDATE
_DUPLICATE = Admit.DUPLICATE
_CAP = "max_spans_per_trace"


@dataclass(slots=True)
class _InFlight(Generic[C]):
    """A scored run whose judge results are outstanding; `held` is None once its span has gone on."""

    scores: RunScores
    held: HeldRun[C] | None
    verdicts: RunVerdicts
    outstanding: dict[Hashable, Expectation] = field(default_factory=dict)
    released: bool = False
    """Its results so far have been emitted; judge results from now on are late."""


_IN_FLIGHT_NS = 3600 * 10**9
"""How long before the engine started a run may have started and still be taken as in flight then (see
`flag_runs_begun_elsewhere`): an agent run lasts minutes; traces older than this are a replay."""


class Engine(Worker, Generic[C]):
    """Receives spans from any source, scores the agent runs in them, and hands every span on.

        source ─offer(carrier)─→ Intake ─(worker thread)─→ decode → TraceStore.admit ─┬─ other spans ──→ Sink.release
        (never blocks; full → caller                        (group by trace, classify, │
         passes on, note_refused)                            slim, bound, dedupe)      └─ run spans held
        settle / idle / hold Deadlines ─→ runs_under / runs_of_trace (rebuild_runs) ─→ plan_scores (registry.match,
        sampling) ─→ inline scorers ─┬─────────────────────────────────────────────→ emit ─→ Sink.release_run
                                     └─ JudgePool (asyncio thread, budget) ─deliver→ ┘        + telemetry

    GenAI log events (`offer_event`, `offer_events`) come through a queue of their own, `events`, bounded
    alike, and join their spans in the store (`TraceStore.admit_event`), whichever comes first: an event
    starts its run's settle time again as a span does, and is counted (`log_records`) when it is late, a
    duplicate, or dropped with its trace or because its span never came.

    Time: the worker thread (`start`) steps when woken and at the next deadline; an engine built without
    it is stepped by hand (`step(now)`), which is how the tests of settle, idle and hold choose the time.

    Consistency: one worker thread owns every structure here (store, deadlines, in-flight runs);
    the span-ending threads touch only the intake deque, and the judge thread only appends results
    to `_judged` — both then set `_wake`; a span the full queue refused is noted in the intake
    (`note_refused`) and kept in `Refusals` until its trace finishes. A run is scored once: its span
    id enters `trace.scored` before scoring, and the store turns re-deliveries and stragglers into
    pass-through. Every carrier offered leaves through the sink exactly once: as pass-through, as a
    scored run span, or back to the caller: refused by a full queue, or queued behind shutdown's
    last drain (`stranded`).

    Failure: each deadline, judge result and flushed trace is handled on its own (`_guarded`). When
    extracting or scoring a trace raises, that trace's held spans go on unscored and its spans are
    counted dropped (`error`); the other deadlines popped in the same step are served as usual. A run
    span leaves the trace's `held` only once its runs are built, and `_score` passes it on before
    letting an exception out, so a failure never strands a carrier.
    """

    def __init__(
        self,
        registry: Matcher,
        sink: Sink[C],
        decode: Callable[[C], SpanRecord | None],
        config: PipelineConfig | None = None,
        telemetry: PipelineTelemetry | None = None,
        *,
        on_scored: Callable[[AgentRun, Expectation, ScoreResult, str | None], None] | None = None,
        on_sampled_out: Callable[[AgentRun, Expectation, str | None], None] | None = None,
        hold: Callable[[C], C] | None = None,
        size: Callable[[C, SpanRecord], int] | None = None,
        tracer: Tracer | None = None,
        flag_runs_begun_elsewhere: bool = False,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        """Builds the engine without starting its thread: `start()` it, or drive it by hand with `step(now)`.

        Both entry points (`ToolscoreSpanProcessor`, `serve`) start it at once. Without the thread nothing
        happens between calls to `step(now_ns)`: settle, idle and hold deadlines are served when `now_ns`
        passes them, so a test chooses the times; `clock` (monotonic ns) stamps the spans' arrival for
        such an engine (max_hold_ms counts from it). `flush` and `shutdown` work either way.

        `on_scored` sees every result (late judge results too) with the run's agent version (None when it
        has none) on the worker thread; it must not block. `on_sampled_out` sees, alike, each expectation the run
        matched whose every scorer was sampled out of it (`sample_rate`): it gives no result to see otherwise.

        `flag_runs_begun_elsewhere` (`toolscore serve`): a run whose run span started in the hour before this
        engine did, in a trace whose first span came within `trace_idle_timeout_s` of that, is flagged
        incomplete. Such a
        run was in flight when this replica started or joined the gateway's ring, so spans of it that ended
        before may have gone to the replica that had its trace before (which scores them as a fragment,
        flagged incomplete too): its calls here may be short, and a score that looks whole would mislead.

        `tracer` traces each LLM-judge request as a GenAI `chat` span (default: the global provider's).

        `hold` is what a carrier becomes while it waits for its run's scores, and `size` what a kept span
        counts for against `max_pending_bytes` (see `TraceStore`).
        """
        self.config = config = config or PipelineConfig()
        self.registry, self.sink, self.decode = registry, sink, decode
        self.on_scored = on_scored
        self.on_sampled_out = on_sampled_out
        self.telemetry: PipelineTelemetry = telemetry or NoopTelemetry()
        self._held_as, self._size = hold, size
        self._tracer = tracer
        self._begun: tuple[int, int] | None = None
        """(wall clock, monotonic clock) when this engine started, with `flag_runs_begun_elsewhere`."""
        if flag_runs_begun_elsewhere:
            self._begun = (time.time_ns(), clock())
        super().__init__("toolscore-pipeline", clock)
        self._fresh_state()
        self.telemetry.observe_pending(lambda: len(self.store), config.max_pending_traces)
        self.telemetry.observe_pending_bytes(lambda: self.store.size, config.max_pending_bytes)
        self.telemetry.observe_expectations(lambda: expectation_infos(registry))
        self.telemetry.observe_registry(lambda: registry_state(registry))

    def _fresh_state(self) -> None:
        config = self.config
        self.intake: Intake[C] = Intake(config.queue_size, self._wake, self._clock)
        self.events: Intake[LogEvent] = Intake(config.queue_size, self._wake, self._clock)
        self.store: TraceStore[C] = TraceStore(
            config.max_pending_traces,
            config.max_spans_per_trace,
            self._held_as,
            self.telemetry.dedupe_forgotten,
            max_bytes=config.max_pending_bytes,
            size=self._size,
            max_finished_bytes=config.max_finished_bytes,
        )
        self.stats = CountedStats(self.telemetry, self.store.traces)
        self.refusals = Refusals(config.max_pending_traces)
        self._settle: Deadlines[RunKey] = Deadlines(int(config.settle_ms * _MS))
        self._idle: Deadlines[str] = Deadlines(int(config.trace_idle_timeout_s * 1000 * _MS))
        self._hold: Deadlines[RunKey] = Deadlines(int(config.max_hold_ms * _MS))
        self._in_flight: dict[RunKey, _InFlight[C]] = {}
        self._judged: deque[tuple[Hashable, ScoreResult]] = deque()
        self._judges = JudgePool(config.judge, self._deliver, self._tracer)

    def after_fork(self) -> None:
        """A forked child starts empty: the spans pending at the fork are the parent's to score and pass on.

        (The child's copies of them would otherwise go out twice, and its copy of the judges' event
        loop has no thread.)
        """
        self._fresh_state()

    # -- the worker's step, deadlines and flush ----------------------------------------------------

    def offer(self, carrier: C) -> bool:
        """Hand a finished span to the pipeline; never blocks. False: the queue is full, pass it on yourself."""
        return self.intake.offer(carrier)

    def note_refused(self, trace_id: str, span_id: str, parent_id: str | None) -> None:
        """`offer` refused this span and the caller passed it on: its run is to be scored flagged incomplete.

        Any thread; never blocks (see `Intake.note_refused` and `refused`).
        """
        self.intake.note_refused(trace_id, span_id, parent_id)

    def stranded(self) -> list[C]:
        """After `shutdown` has begun: the spans queued behind its last drain, for the caller to pass on.

        For a caller whose `offer` succeeded but which then saw shutdown begin; any thread. Empty while
        the intake is still open (shutdown's own drain will take them), and each span goes to one caller.
        """
        if not self.intake.closed:
            return []
        return [carrier for carrier, _ in self.intake.take_all()]

    def offer_all(self, carriers: Sequence[C]) -> None:
        """Queue a whole request's spans, never refusing: the caller bounds the queue per request (`Intake.extend`)."""
        self.intake.extend(carriers)

    def offer_event(self, item: LogEvent) -> bool:
        """Hand a GenAI log event to the pipeline; never blocks. False: the queue is full (it is counted dropped)."""
        return self.events.offer(item)

    def offer_events(self, items: Sequence[LogEvent]) -> None:
        """Queue a whole request's events, never refusing: the caller bounds the queue per request (`serve`)."""
        self.events.extend(items)

    def next_deadline_ns(self) -> int | None:
        found = [d for d in (self._settle.next_ns(), self._idle.next_ns(), self._hold.next_ns()) if d is not None]
        return min(found) if found else None

    def step(self, now: int) -> None:
        self._step(now, _STEP_SPANS)

    def backlog(self) -> bool:
        return len(self.intake) > 0 or len(self.events) > 0

    def _step(self, now: int, spans: int) -> None:
        self._take_refusals()
        self._receive(self.intake.drain(spans), now)
        self._receive_events(self.events.drain(spans), now)
        while self._judged:
            key, result = self._judged.popleft()
            assert isinstance(key, tuple)
            self._guarded(key[0], self._apply_judged, key, result, now)
        for trace_id, span_id in self._settle.pop_due(now):
            self._guarded(trace_id, self._settled, trace_id, span_id, now)
        for trace_id in self._idle.pop_due(now):
            if (trace := self.store.traces.get(trace_id)) is not None:  # whole if its root came (one ending early)
                self._guarded(trace_id, self._finish_trace, trace, trace.root_seen, now)
        for key in self._hold.pop_due(now):
            self._guarded(key[0], self._hold_expired, key, now)

    def flush_begin(self, now: int) -> None:
        """Score every pending run and trace now; judges already running may still finish in time."""
        self._step(now, max(len(self.intake), len(self.events)))
        for trace in list(self.store.traces.values()):
            self._guarded(trace.trace_id, self._finish_trace, trace, trace.root_seen, now)

    def flush_waiting(self) -> bool:
        return any(not flight.released for flight in self._in_flight.values())

    def flush_give_up(self, now: int) -> None:
        for flight in list(self._in_flight.values()):
            if not flight.released:
                self._emit(flight, now)

    def shutdown(self, timeout_s: float) -> bool:
        """Flush, stop the worker and the judges; spans offered after this are the caller's to pass on.

        A span offered while this runs may land after the last drain: its caller takes it back with
        `stranded` (the intake is closed first, so either that drain or the caller finds it).
        """
        start = time.monotonic()
        ok = self.stop(timeout_s)
        self.intake.close()
        left = self.intake.take_all()
        if left:  # the worker has stopped, or is stuck past the timeout: nothing else would pass them on
            self._release([carrier for carrier, _ in left])
            self.telemetry.spans_dropped(len(left), "shutdown")
        self.events.close()
        if events_left := self.events.take_all():
            self.telemetry.log_records(len(events_left), "dropped", "shutdown")
        self._judges.close(max(0.0, timeout_s - (time.monotonic() - start)))
        return ok

    # -- receive and group -------------------------------------------------------------------------

    def _take_refusals(self) -> None:
        """Keep the spans refused since the last step, before any run they may belong to is scored."""
        notes, unnoted = self.intake.refused_since_last()
        forgotten = unnoted + self.refusals.add(notes) if notes else unnoted
        if forgotten:
            self.telemetry.spans_forgotten(forgotten)

    def _receive(self, items: list[tuple[C, int]], now: int) -> None:
        offered, dropped = self.intake.counts_since_last()
        skipped = self.intake.skipped_since_last()
        if skipped:  # passed on unread by the pre-filter: received and passed, never queued
            self.telemetry.spans_received(skipped)
            self.telemetry.spans_passed(skipped)
        if offered:
            self.telemetry.spans_received(offered)
        if dropped:
            self.telemetry.spans_dropped(dropped, "queue_full")
            self.telemetry.spans_passed(dropped)
        passing: list[C] = []
        late = over_cap = duplicate = 0
        for carrier, arrived in items:
            record = self._decode(carrier)
            if record is None:
                passing.append(carrier)
                continue
            try:
                admission = self.store.admit(record, carrier, arrived)
                for evicted in admission.evicted:
                    self._evict(evicted, "max_pending_traces")
                for evicted in admission.evicted_for_bytes:
                    self._evict(evicted, "max_pending_bytes")
                kind, trace = admission.kind, admission.trace
                passing.extend(admission.released)
                late += kind is _LATE
                over_cap += kind is _OVER_CAP
                if trace is not None and kind in (_STORED, _HELD, _CANDIDATE):
                    self._arm(admission, record, arrived, now)
                if kind is _DUPLICATE:  # its first copy went or goes on (scored, if a run span): once is enough
                    duplicate += 1
                    continue
                if kind is not _HELD and kind is not _CANDIDATE:
                    passing.append(carrier)
            except Exception:  # a bug must cost this span's trace only, not the rest of the batch
                self._not_admitted(record, carrier, passing)
        self._release(passing)
        if late:
            self.telemetry.late_spans(late)
        if duplicate:
            self.telemetry.duplicate_spans(duplicate)
        if over_cap:
            self.telemetry.spans_dropped(over_cap, "max_spans_per_trace")

    def _receive_events(self, items: list[tuple[LogEvent, int]], now: int) -> None:
        """Join each event to its span, or keep it for its span, in the store (`TraceStore.admit_event`)."""
        offered, dropped = self.events.counts_since_last()
        if offered:
            self.telemetry.log_records(offered, "received")
        if dropped:
            self.telemetry.log_records(dropped, "dropped", "queue_full")
        late = duplicate = over_cap = 0
        for item, arrived in items:
            try:
                admission = self.store.admit_event(item, arrived)
                for evicted in admission.evicted:
                    self._evict(evicted, "max_pending_traces")
                for evicted in admission.evicted_for_bytes:
                    self._evict(evicted, "max_pending_bytes")
            except Exception:  # a bug must cost this event, not the rest of the batch
                _log.exception("GenAI log event of span %s could not be joined; dropped", item.span_id)
                self.telemetry.log_records(1, "dropped", "error")
                continue
            kind = admission.kind
            if kind is _STORED:
                self._arm(admission, None, arrived, now)
            late += kind is _LATE
            duplicate += kind is _DUPLICATE
            over_cap += kind is _OVER_CAP
        for n, outcome, reason in ((late, "late", ""), (duplicate, "duplicate", ""), (over_cap, "dropped", _CAP)):
            if n:
                self.telemetry.log_records(n, outcome, reason)

    def _drop_early(self, trace: PendingTrace[C], reason: str) -> None:
        """Count the log events still waiting for their spans in a trace that goes."""
        if trace.early_count:
            self.telemetry.log_records(trace.early_count, "dropped", reason)
            trace.early_count = 0

    def _not_admitted(self, record: SpanRecord, carrier: C, passing: list[C]) -> None:
        """Admitting the span raised: its trace goes on unscored (`_abandon`), and so does the span."""
        _log.exception(
            "span %s of trace %s could not be grouped; its trace goes on unscored", record.span_id, record.trace_id
        )
        trace = self.store.traces.get(record.trace_id)
        span_id = record.span_id  # compared, not hashed: a span id that cannot be a key may be why
        held = trace is not None and any(span_id == key for key in trace.held)  # then `_abandon` passes it on
        counted = trace is not None and any(span_id == key for key in trace.records)  # and counts it dropped
        self._abandon(record.trace_id)
        if not held:
            passing.append(carrier)
        if not counted:
            self.telemetry.spans_dropped(1, "error")

    def _decode(self, carrier: C) -> SpanRecord | None:
        try:
            return self.decode(carrier)
        except Exception:
            _log.exception("span not decoded; passed on unscored")
            return None

    def _arm(self, admission: Admission[C], record: SpanRecord | None, arrived: int, now: int) -> None:
        """Start the settle and idle times again for what arrived (a span, or a log event: `record` None)."""
        trace = admission.trace
        assert trace is not None
        trace_id = trace.trace_id
        self._idle.arm(trace_id, now)
        for run_id in admission.touched:
            self._settle.arm((trace_id, run_id), now)
        if admission.kind is _HELD:
            assert record is not None
            self._settle.arm((trace_id, record.span_id), now)
            self._hold.arm_once((trace_id, record.span_id), arrived)
        elif admission.kind is _CANDIDATE:  # waits for its trace to finish, never longer than a run span
            assert record is not None
            self._hold.arm_once((trace_id, record.span_id), arrived)
        if trace.root_settles:
            self._settle.arm((trace_id, ""), now)

    def _guarded(self, trace_id: str, action: Callable[..., None], *args: object) -> None:
        """`action(*args)`; if it raises, the trace is given up (`_abandon`) and the step goes on."""
        try:
            action(*args)
        except Exception:
            _log.exception("scoring trace %s failed; its spans go on unscored", trace_id)
            self._abandon(trace_id)

    def _abandon(self, trace_id: str) -> None:
        """Pass on unscored every span the trace still holds, count its spans dropped, and forget it."""
        trace = self.store.traces.get(trace_id)
        if trace is None:
            return
        self._cancel(trace)
        self._release([held.carrier for held in trace.held.values()])
        trace.held.clear()
        self.store.finish(trace)
        self.refusals.forget(trace_id)
        self.telemetry.spans_dropped(len(trace.records), "error")
        self._drop_early(trace, "error")

    def _evict(self, trace: PendingTrace[C], reason: str) -> None:
        self._cancel(trace)
        self.refusals.forget(trace.trace_id)
        self._release([held.carrier for held in trace.held.values()])
        self.telemetry.spans_dropped(len(trace.records), reason)
        self._drop_early(trace, reason)

    def _cancel(self, trace: PendingTrace[C]) -> None:
        self._idle.cancel(trace.trace_id)
        self._settle.cancel((trace.trace_id, ""))
        for span_id in trace.held:
            self._settle.cancel((trace.trace_id, span_id))
            self._hold.cancel((trace.trace_id, span_id))

    # -- split into runs ---------------------------------------------------------------------------

    def _settled(self, trace_id: str, span_id: str, now: int) -> None:
        trace = self.store.traces.get(trace_id)
        if trace is None:
            return
        if span_id:
            self._finish_run(trace, span_id, incomplete=False, now=now)
        if trace.root_settles and not trace.holds_runs and (trace_id, "") not in self._settle:
            self._finish_trace(trace, complete=True, now=now)

    def _finish_run(self, trace: PendingTrace[C], span_id: str, incomplete: bool, now: int) -> None:
        held = trace.held.get(span_id)
        if held is None:
            return
        self._settle.cancel((trace.trace_id, span_id))
        refused = self.refusals.get(trace.trace_id)
        ready = runs_under(trace, span_id, incomplete, self.config.extract, self.stats, refused=refused)  # type: ignore[arg-type]
        del trace.held[span_id]  # only now: had extraction raised, `_abandon` would pass it on
        if not ready or ready[0][0].span_id != span_id:
            self._hold.cancel((trace.trace_id, span_id))
            self._release([held.carrier])
        for run, is_held in ready:
            own = run.span_id == span_id
            self._score(run, held if own else trace.held.pop(run.span_id or "", None) if is_held else None, now)
        trace.scored.add(span_id)
        steps = self.store.held_steps_under(trace, span_id)  # tool spans held for a run that was not inferred
        for step in steps:
            self._hold.cancel((trace.trace_id, step))
        self._release([trace.held.pop(step).carrier for step in steps])

    def _finish_trace(self, trace: PendingTrace[C], complete: bool, now: int) -> None:
        self._cancel(trace)
        refused = self.refusals.get(trace.trace_id)
        ready = runs_of_trace(trace, complete, self.config.extract, self.stats, refused=refused)  # type: ignore[arg-type]
        for run, is_held in ready:
            self._score(run, trace.held.pop(run.span_id) if is_held else None, now)
        self._release([held.carrier for held in trace.held.values()])
        trace.held.clear()
        self.store.finish(trace)
        self.refusals.forget(trace.trace_id)
        self._drop_early(trace, "span_never_came")

    # -- match, score, emit ------------------------------------------------------------------------

    def _plan(self, run: AgentRun) -> ScorePlan:
        try:
            return plan_scores(run, self.registry, self.config.extract.privacy)
        except Exception:
            _log.exception("matching expectations failed for run %s", run.run_id)
            return ScorePlan()

    def _score(self, run: AgentRun, held: HeldRun[C] | None, now: int) -> None:
        """Score the run and send its span on; if scoring raises, the span goes on unscored first."""
        trace = self.store.traces.get(run.trace_id)
        if trace is not None:
            trace.scored.add(run.span_id)
            if self._begun_elsewhere(run, trace):
                run = run.model_copy(update={"incomplete": True})
        try:
            flight = self._scored(run, held)
        except Exception:
            if held is not None:  # the caller took it from the trace: `_abandon` cannot see it
                self._hold.cancel((run.trace_id, run.span_id))
                self._release([held.carrier])
            raise
        matched = flight.scores.expectations
        outcome = "incomplete" if run.incomplete else "matched" if matched else "unmatched"
        self.telemetry.run_finished(outcome, run.agent_name)
        if flight.outstanding:
            self._in_flight[(run.trace_id, run.span_id)] = flight
        else:
            self._emit(flight, now)

    def _begun_elsewhere(self, run: AgentRun, trace: PendingTrace[C]) -> bool:
        """Whether the run was in flight when this engine started (see `flag_runs_begun_elsewhere`)."""
        if self._begun is None or run.incomplete or run.start_ns is None:
            return False
        wall, mono = self._begun
        in_flight = wall - _IN_FLIGHT_NS <= run.start_ns < wall  # older: a replay, not a run cut by the start
        return in_flight and trace.opened_ns - mono < self.config.trace_idle_timeout_s * 1e9

    def _scored(self, run: AgentRun, held: HeldRun[C] | None) -> _InFlight[C]:
        """The run's inline results and its judges started; nothing has left the engine yet."""
        plan = self._plan(run)
        version = agent_version(run, self.config.agent_version)
        flight = _InFlight(RunScores(run, plan.expectations, agent_version=version), held, RunVerdicts(plan))
        flight.scores.results.extend((exp, scorer.scorer.score(run)) for exp, scorer in plan.inline)
        for index, (exp, scorer) in enumerate(plan.judged):
            key = (run.trace_id, run.span_id, index)
            failure = self._judges.submit(key, _async(scorer.scorer), run)
            if failure is None:
                flight.outstanding[key] = exp
            else:
                flight.scores.results.append((exp, failure))
                self.telemetry.judge_outcome("over_budget")
        return flight

    def _deliver(self, key: Hashable, result: ScoreResult) -> None:
        """Called on the judge thread."""
        self._judged.append((key, result))
        self._wake.set()

    def _apply_judged(self, key: tuple[str, str, int], result: ScoreResult, now: int) -> None:
        flight = self._in_flight.get((key[0], key[1]))
        if flight is None or key not in flight.outstanding:
            return
        exp = flight.outstanding.pop(key)
        error = None if isinstance(result, Score) else result.error_type
        outcome = "ok" if error is None else "timeout" if error == "judge_timeout" else "error"
        self.telemetry.judge_outcome("late" if flight.released else outcome)
        if flight.released:
            self._record(flight, exp, result)  # its span has gone on: logs and metrics only
        else:
            flight.scores.results.append((exp, result))
        if not flight.outstanding:
            del self._in_flight[(key[0], key[1])]
            if not flight.released:
                self._emit(flight, now)

    def _hold_expired(self, key: RunKey, now: int) -> None:
        trace = self.store.traces.get(key[0])
        candidate = self.store.drop_candidate(trace, key[1]) if trace is not None else None
        if candidate is not None:
            self._release([candidate.carrier])
        elif trace is not None and key[1] in trace.held:
            self._finish_run(trace, key[1], incomplete=True, now=now)
        flight = self._in_flight.get(key)
        if flight is not None and not flight.released:
            self._emit(flight, now)

    def _emit(self, flight: _InFlight[C], now: int) -> None:
        """Record the results so far and, if the run span is still held, send it on with them."""
        run, held = flight.scores.run, flight.held
        flight.released = True
        for exp, result in flight.scores.results:
            self._record(flight, exp, result)
        if self.on_sampled_out is not None:
            _report_sampled_out(flight.scores, self.on_sampled_out)
        if held is None:
            return
        self._hold.cancel((run.trace_id, run.span_id))
        enrichment = build_enrichment(flight.scores, held.end_ns, self.config.emit_span_events)
        try:
            self.sink.release_run(held.carrier, enrichment)
        except Exception:
            _log.exception("sink failed to take a scored run span")
        self.telemetry.spans_passed(1)
        self.telemetry.score_delay(max(0, now - held.arrived_ns) / 1e9)

    def _record(self, flight: _InFlight[C], exp: Expectation, result: ScoreResult) -> None:
        run = flight.scores.run
        ref = RunSpanRef(run.trace_id, run.span_id)
        version = flight.scores.agent_version
        self.telemetry.score_recorded(result, exp.name, exp.version, run.agent_name, ref, agent_version=version)
        passed = flight.verdicts.add(exp.name, result)
        if passed is not None:
            self.telemetry.run_verdict(exp.name, run.agent_name, passed, version)
        if self.on_scored is not None:
            try:
                self.on_scored(run, exp, result, version)
            except Exception:
                _log.exception("on_scored callback failed for run %s", run.run_id)

    def _release(self, carriers: list[C]) -> None:
        if not carriers:
            return
        try:
            self.sink.release(carriers)
        except Exception:
            _log.exception("sink failed to take %d spans", len(carriers))
        self.telemetry.spans_passed(len(carriers))


def _report_sampled_out(scores: RunScores, report: Callable[[AgentRun, Expectation, str | None], None]) -> None:
    """Each matched expectation none of whose scorers scored the run (see `Engine.on_sampled_out`)."""
    run = scores.run
    for exp in scores.expectations:
        if exp.scorers and not sampled_scorers(exp, run.trace_id):
            try:
                report(run, exp, scores.agent_version)
            except Exception:
                _log.exception("on_sampled_out callback failed for run %s", run.run_id)


def _async(scorer: object) -> AsyncScorer:
    """A judge scorer (`plan_scores` put it among the judged because it has an async `ascore`)."""
    return scorer  # type: ignore[return-value]
