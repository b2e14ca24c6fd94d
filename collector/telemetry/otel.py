"""Self-telemetry over the OTel API: metrics from the table, one `gen_ai.evaluation.result` event per score.

Instruments are created from `metrics_table.METRICS`, so names, units, kinds and histogram buckets
come from the same rows docs/metrics.md is rendered from. Metric attributes go through an
`AttributeLimiter`; the evaluation event is a log record (the semconv carrier for events), parented to
the run span by an explicit context, and carries the unbounded parts: explanation, version, scores.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from importlib import metadata

from opentelemetry import _logs, metrics
from opentelemetry._logs import LoggerProvider, SeverityNumber
from opentelemetry.context import Context
from opentelemetry.metrics import CallbackOptions, Counter, MeterProvider, Observation
from opentelemetry.trace import INVALID_SPAN, NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context
from opentelemetry.util.types import AttributeValue

from toolscore.collector.forks import on_fork
from toolscore.collector.telemetry._histogram_tally import Attributes, HistogramTally, TalliedMeterProvider
from toolscore.collector.telemetry.base import ExpectationInfo, RegistryState, RunSpanRef
from toolscore.collector.telemetry.direct_logs import (
    DirectLogger,
    encode_attributes,
    encode_ids,
    encode_record,
    encode_score_record,
)
from toolscore.collector.telemetry.limits import DEFAULT_MAX_ATTRIBUTE_VALUES, AttributeLimiter
from toolscore.collector.telemetry.metrics_table import METRICS, MetricSpec
from toolscore.collector.telemetry.unexported import UnexportedCheck
from toolscore.collector.telemetry.versions import DEFAULT_MAX_AGENT_VERSIONS, VersionRuns
from toolscore.collector.utf8 import valid_utf8, valid_utf8_values
from toolscore.scorers._model import Score, ScoreResult

__all__ = ["EVALUATION_EVENT", "SCOPE_NAME", "OTelPipelineTelemetry", "run_span_context", "toolscore_version"]

SCOPE_NAME = "toolscore.collector"
"""Instrumentation scope of every metric and event toolscore emits about itself."""

EVALUATION_EVENT = "gen_ai.evaluation.result"

_SEVERITY = "toolscore.expectation.severity"

_log = logging.getLogger(__name__)


def toolscore_version() -> str | None:
    try:
        return metadata.version("toolscore")
    except metadata.PackageNotFoundError:
        return None


def run_span_context(run_span: RunSpanRef | None) -> Context:
    """A context whose span is the run span, so a record emitted in it is parented to that span.

    Without a run span (or with malformed ids) the context holds the invalid span rather than being
    empty: an empty context would make the Logs API fall back to whatever span is current.
    """
    if run_span is not None:
        try:
            span_context = SpanContext(
                trace_id=int(run_span.trace_id, 16),
                span_id=int(run_span.span_id, 16),
                is_remote=True,
                trace_flags=TraceFlags(run_span.trace_flags),
            )
        except ValueError:
            span_context = None
        if span_context is not None and span_context.is_valid:
            return set_span_in_context(NonRecordingSpan(span_context))
    return set_span_in_context(INVALID_SPAN)


_HeadKey = tuple[str, str, int, "str | None", "str | None"]
"""(evaluation name, expectation, version, agent, agent version): what an evaluation record's first attributes say."""
_HEADS = 4096
_INFO = SeverityNumber.INFO.value
"""As a module constant: on Python 3.11 each enum member read through its class costs ~60 ns, its `.value` more."""
"""Encoded attribute heads kept (`OTelPipelineTelemetry._emit_encoded`); cleared when full."""


def _event_head(
    name: str, expectation: str, version: int, agent: str | None, agent_version: str | None
) -> dict[str, AttributeValue]:
    """The evaluation record's first attributes, in the order the record carries them."""
    attributes: dict[str, AttributeValue] = {
        "gen_ai.evaluation.name": name,
        "toolscore.expectation.name": expectation,
        "toolscore.expectation.version": version,
    }
    if agent:
        attributes["gen_ai.agent.name"] = agent
    if agent_version:
        attributes["toolscore.agent.version"] = agent_version
    return attributes


def _event_tail(result: ScoreResult, attributes: dict[str, AttributeValue]) -> SeverityNumber:
    """Add the result's own attributes to `attributes`; the record's severity."""
    if isinstance(result, Score):
        attributes["gen_ai.evaluation.score.value"] = float(result.value)
        attributes["gen_ai.evaluation.score.label"] = result.label
        explanation = result.explanation
        severity = SeverityNumber.INFO
    else:
        attributes["error.type"] = result.error_type
        explanation = result.message
        severity = SeverityNumber.WARN
    if explanation:
        attributes["gen_ai.evaluation.explanation"] = explanation
    return severity


def _run_span_ids(run_span: RunSpanRef | None) -> bytes:
    """The run span's trace id, span id and trace flags encoded for a record (`encode_ids`), as
    `run_span_context` reads them; empty when not valid."""
    if run_span is None:
        return b""
    try:
        trace_id, span_id = bytes.fromhex(run_span.trace_id), bytes.fromhex(run_span.span_id)
    except ValueError:
        return b""
    if not any(trace_id) or not any(span_id):
        return b""
    return encode_ids(trace_id, span_id, run_span.trace_flags & 0xFF)


@contextlib.contextmanager
def _never_raise(what: str) -> Iterator[None]:
    """Telemetry runs on the span-ending thread and in the scoring loop: a failure is logged, not raised."""
    try:
        yield
    except Exception:
        _log.debug("toolscore telemetry: %s failed", what, exc_info=True)


class _Tally:
    """Counter increments summed between collections, for the counters that move once per run, score or batch.

    The SDK cleans, sorts and hashes the attributes of every measurement, about 6 µs per `add`: with
    two scores per run that was a tenth of the collector's CPU. Summed here, a collection costs one
    `add` per attribute set. `flush` runs first thing in a gauge callback, and the SDK calls gauge
    callbacks at the start of each collection, before it reads the counters: no collection (and no
    shutdown, which collects a last time) misses a count. Keys are bounded by the attribute limiter.
    """

    def __init__(self) -> None:
        self._counts: dict[tuple[Counter, tuple[tuple[str, AttributeValue], ...]], int] = {}
        self._lock = threading.Lock()
        on_fork(after_in_child=self._after_fork)

    def _after_fork(self) -> None:
        """A forked child counts afresh, on a lock no thread of the parent can hold (`toolscore.collector.forks`)."""
        self._counts, self._lock = {}, threading.Lock()

    def add(self, counter: Counter, attributes: tuple[tuple[str, AttributeValue], ...], n: int = 1) -> None:
        key = (counter, attributes)
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + n

    def flush(self) -> None:
        with self._lock:
            counts, self._counts = self._counts, {}
        for (counter, attributes), n in counts.items():
            counter.add(n, dict(attributes))


_PASSED: tuple[tuple[str, AttributeValue], ...] = (("toolscore.span.outcome", "passed"),)
_RECEIVED: tuple[tuple[str, AttributeValue], ...] = (("toolscore.span.outcome", "received"),)
_SENT: tuple[tuple[str, AttributeValue], ...] = (("toolscore.forward.outcome", "sent"),)


def _refused(reason: str) -> tuple[tuple[str, AttributeValue], ...]:
    return (("toolscore.span.outcome", "refused"), ("toolscore.refusal.reason", reason))


def _recorder(
    meter: metrics.Meter, spec: MetricSpec, tally: HistogramTally | None
) -> Callable[[float, Attributes], None]:
    """How histogram `spec` records a value with its attributes: into the provider's tally when it has one
    (`_histogram_tally`), else through an SDK instrument."""
    if tally is not None:
        return functools.partial(tally.record, spec.name)
    histogram = meter.create_histogram(
        spec.name, spec.unit, spec.description, explicit_bucket_boundaries_advisory=spec.buckets
    )

    def record(value: float, attributes: Attributes) -> None:
        histogram.record(value, dict(attributes))

    return record


class OTelPipelineTelemetry:
    """`PipelineTelemetry` over an OTel `MeterProvider` and `LoggerProvider` (global ones when None)."""

    _heads: dict[_HeadKey, bytes]
    """Encoded attribute heads of evaluation records, by what they say (`_emit_encoded`)."""
    _last_ids: tuple[RunSpanRef | None, bytes] | None
    """The last run span an evaluation record was parented to, and its ids encoded (`encode_ids`)."""
    _pending: dict[str, list[tuple[Callable[[], int], int | None]]]
    """Per measure of what the pipelines hold: their callbacks and the limits that bound them."""

    def __init__(
        self,
        meter_provider: MeterProvider | None = None,
        logger_provider: LoggerProvider | None = None,
        max_attribute_values: int | None = None,
        max_agent_versions: int | None = None,
    ) -> None:
        version = toolscore_version()
        self._versions = VersionRuns(
            DEFAULT_MAX_AGENT_VERSIONS if max_agent_versions is None else max_agent_versions,
            lambda: self._count_overflow("toolscore.agent.version"),
        )
        meter = metrics.get_meter(SCOPE_NAME, version or "", meter_provider=meter_provider)
        self._logger = _logs.get_logger(SCOPE_NAME, version or "", logger_provider=logger_provider)
        # Given the no-op provider (`toolscore serve` without a logs exporter), skip building each event.
        self._direct = self._logger if isinstance(self._logger, DirectLogger) else None
        self._events = self._direct is not None or not isinstance(self._logger, _logs.NoOpLogger)
        self._heads, self._last_ids, self._pending = {}, None, {"traces": [], "bytes": []}
        self._expectations: list[Callable[[], Iterable[ExpectationInfo]]] = []
        self._registries: list[Callable[[], RegistryState | None]] = []
        self._callbacks_lock = threading.Lock()
        on_fork(after_in_child=self._after_fork)
        gauges = {
            "toolscore.pending.traces": self._observe_pending_traces,
            "toolscore.pending.traces.limit": lambda options: self._observe_pending_limit("traces"),
            "toolscore.pending.bytes": lambda options: self._observe_pending("bytes"),
            "toolscore.pending.bytes.limit": lambda options: self._observe_pending_limit("bytes"),
            "toolscore.expectation.info": self._observe_expectations,
            "toolscore.registry.sync.age": lambda options: self._observe_registry(0),
            "toolscore.agent.version.first_seen": self._observe_first_seen,
            "toolscore.registry.unreadable": lambda options: self._observe_registry(1),
        }
        counters: dict[str, Counter] = {}
        histograms: dict[str, Callable[[float, Attributes], None]] = {}
        tally = meter_provider.tally if isinstance(meter_provider, TalliedMeterProvider) else None
        for spec in METRICS:
            if spec.kind == "counter":
                counters[spec.name] = meter.create_counter(spec.name, spec.unit, spec.description)
            elif spec.kind == "histogram":
                histograms[spec.name] = _recorder(meter, spec, tally)
            elif spec.kind == "observable_counter":
                meter.create_observable_counter(spec.name, [self._observe_versions], spec.unit, spec.description)
            else:
                meter.create_observable_gauge(spec.name, [gauges[spec.name]], spec.unit, spec.description)
        self._score = histograms["toolscore.evaluation.score"]
        self._delay = histograms["toolscore.score.delay"]
        self._wait = histograms["toolscore.receiver.wait.duration"]
        self._evaluations = counters["toolscore.evaluations"]
        self._runs = counters["toolscore.runs"]
        self._run_verdicts = counters["toolscore.expectation.runs"]
        self._spans = counters["toolscore.spans"]
        self._late = counters["toolscore.spans.late"]
        self._duplicate = counters["toolscore.spans.duplicate"]
        self._forgotten = counters["toolscore.spans.forgotten"]
        self._calls_dropped = counters["toolscore.calls.dropped"]
        self._dedupe_forgotten = counters["toolscore.dedupe.forgotten"]
        self._unreadable = counters["toolscore.spans.unreadable"]
        self._judge = counters["toolscore.judge.calls"]
        self._overflow = counters["toolscore.attribute.overflow"]
        self._forward = counters["toolscore.forward.spans"]
        self._retries = counters["toolscore.forward.retries"]
        self._refused = counters["toolscore.receiver.refused"]
        self._store_dropped, self._annotations = (
            counters["toolscore.score_store.dropped"],
            counters["toolscore.phoenix.annotations"],
        )
        self._log_records = counters["toolscore.log_records"]
        limit = DEFAULT_MAX_ATTRIBUTE_VALUES if max_attribute_values is None else max_attribute_values
        self._limiter = AttributeLimiter(limit, self._count_overflow)
        self._tally = _Tally()
        self._unexported: UnexportedCheck | None = None
        if meter_provider is None or logger_provider is None:
            self._unexported = UnexportedCheck(
                metrics_global=meter_provider is None, events_global=logger_provider is None
            )
        """Checked at the first result recorded, then dropped: a warning if it is exported nowhere."""

    def _after_fork(self) -> None:
        """A forked child's lock: the parent's may be held by its metric reader, a thread the child lacks."""
        self._callbacks_lock = threading.Lock()

    def _count_overflow(self, attribute: str) -> None:
        self._overflow.add(1, {"toolscore.attribute.name": attribute})

    def _observe_pending_traces(self, options: CallbackOptions) -> Iterable[Observation]:
        with _never_raise("counter flush"):
            self._tally.flush()  # a collection has begun: see `_Tally`
        return self._observe_pending("traces")

    def _observe_pending(self, measure: str) -> Iterable[Observation]:
        """What the pipelines hold adds up (one process may run several)."""
        with self._callbacks_lock:
            callbacks = [callback for callback, _ in self._pending[measure]]
        if not callbacks:
            return []
        total = 0
        for callback in callbacks:
            with _never_raise(f"pending-{measure} callback"):
                total += callback()
        return [Observation(total)]

    def _observe_pending_limit(self, measure: str) -> Iterable[Observation]:
        """The pipelines' limits add up, as what they hold does; none reported while any is unknown."""
        with self._callbacks_lock:
            limits = [limit for _, limit in self._pending[measure]]
        if not limits or None in limits:
            return []
        return [Observation(sum(limit for limit in limits if limit is not None))]

    def _observe_expectations(self, options: CallbackOptions) -> Iterable[Observation]:
        """One observation per expectation the score metrics already name, with its (bounded) severity.

        Alert rules only join this on names that have score series, and a registry of thousands of
        expectations must not spend the name budget (`max_attribute_values`) the score metrics need.
        """
        with self._callbacks_lock:
            callbacks = list(self._expectations)
        seen: set[tuple[str, str | None]] = set()
        for callback in callbacks:
            with _never_raise("expectations callback"):
                for name, severity in callback():
                    if self._limiter.admitted("toolscore.expectation.name", name):
                        seen.add((name, None if severity is None else self._limiter.bound(_SEVERITY, severity)))
        observations = []
        for name, severity in sorted(seen, key=lambda pair: (pair[0], pair[1] or "")):
            attributes: dict[str, AttributeValue] = {"toolscore.expectation.name": name}
            if severity is not None:
                attributes[_SEVERITY] = severity
            observations.append(Observation(1, attributes))
        return observations

    def _observe_registry(self, field: int) -> Iterable[Observation]:
        """The worst value over the registries observed (usually one, shared by the pipelines)."""
        with self._callbacks_lock:
            callbacks = list(self._registries)
        values: list[float] = []
        for callback in callbacks:
            with _never_raise("registry callback"):
                state = callback()
                if state is not None:
                    values.append(state[field])
        return [Observation(max(values))] if values else []

    def spans_received(self, n: int) -> None:
        self._tally.add(self._spans, _RECEIVED, n)  # once per request, batch or run span

    def spans_passed(self, n: int) -> None:
        self._tally.add(self._spans, _PASSED, n)  # once per run span, besides the batches

    def spans_dropped(self, n: int, reason: str) -> None:
        reason = self._limiter.bound("toolscore.drop.reason", reason)
        self._spans.add(n, {"toolscore.span.outcome": "dropped", "toolscore.drop.reason": reason})

    def late_spans(self, n: int) -> None:
        self._late.add(n)

    def duplicate_spans(self, n: int) -> None:
        self._duplicate.add(n)

    def spans_forgotten(self, n: int) -> None:
        self._forgotten.add(n)

    def calls_dropped(self, n: int, reason: str) -> None:
        reason = self._limiter.bound("toolscore.call.drop.reason", reason)
        self._tally.add(self._calls_dropped, (("toolscore.call.drop.reason", reason),), n)

    def spans_unreadable(self, n: int, convention: str) -> None:
        convention = self._limiter.bound("toolscore.convention", convention)
        self._unreadable.add(n, {"toolscore.convention": convention})

    def dedupe_forgotten(self, n: int, reason: str) -> None:
        reason = self._limiter.bound("toolscore.forget.reason", reason)
        self._tally.add(self._dedupe_forgotten, (("toolscore.forget.reason", reason),), n)  # once per finished trace

    def log_records(self, n: int, outcome: str, reason: str = "") -> None:
        attributes: tuple[tuple[str, AttributeValue], ...] = (
            ("toolscore.log_record.outcome", self._limiter.bound("toolscore.log_record.outcome", outcome)),
        )
        if reason:
            attributes += (("toolscore.log_record.reason", self._limiter.bound("toolscore.log_record.reason", reason)),)
        self._tally.add(self._log_records, attributes, n)  # once per request, and per worker step

    def request_refused(self, reason: str, spans: int | None = None) -> None:
        reason = self._limiter.bound("toolscore.refusal.reason", reason)
        self._tally.add(self._refused, (("toolscore.refusal.reason", reason),))  # a sender may retry every few ms
        if spans:
            self._tally.add(self._spans, _refused(reason), spans)

    def request_waited(self, seconds: float, outcome: str) -> None:
        outcome = self._limiter.bound("toolscore.wait.outcome", outcome)
        self._wait(max(seconds, 0.0), (("toolscore.wait.outcome", outcome),))  # only after 10 ms or more

    def spans_refused(self, n: int, reason: str) -> None:
        self._tally.add(self._spans, _refused(self._limiter.bound("toolscore.refusal.reason", reason)), n)

    def run_finished(self, outcome: str, agent: str | None) -> None:
        bound = self._limiter.bound
        attributes: tuple[tuple[str, AttributeValue], ...] = (
            ("toolscore.run.outcome", bound("toolscore.run.outcome", outcome)),
        )
        if agent:
            attributes += (("gen_ai.agent.name", bound("gen_ai.agent.name", agent)),)
        self._tally.add(self._runs, attributes)

    def run_verdict(self, expectation: str, agent: str | None, passed: bool, agent_version: str | None = None) -> None:
        bound = self._limiter.bound
        attributes: tuple[tuple[str, AttributeValue], ...] = (
            ("toolscore.expectation.name", bound("toolscore.expectation.name", expectation)),
        )
        if agent:
            attributes += (("gen_ai.agent.name", bound("gen_ai.agent.name", agent)),)
        attributes += (("toolscore.run.verdict", "pass" if passed else "fail"),)
        self._tally.add(self._run_verdicts, attributes)  # once per run and expectation
        if agent and agent_version:
            self._versions.add(str(attributes[0][1]), str(attributes[1][1]), valid_utf8(agent_version), passed)

    def _observe_first_seen(self, options: CallbackOptions) -> Iterable[Observation]:
        for (agent, version), seconds in self._versions.first_seen().items():
            yield Observation(seconds, {"gen_ai.agent.name": agent, "toolscore.agent.version": version})

    def _observe_versions(self, options: CallbackOptions) -> Iterable[Observation]:
        for (expectation, agent, version, verdict), n in self._versions.snapshot().items():
            yield Observation(
                n,
                {
                    "toolscore.expectation.name": expectation,
                    "gen_ai.agent.name": agent,
                    "toolscore.agent.version": version,
                    "toolscore.run.verdict": verdict,
                },
            )

    def score_delay(self, seconds: float) -> None:
        self._delay(max(seconds, 0.0), ())

    def judge_outcome(self, outcome: str) -> None:
        outcome = self._limiter.bound("toolscore.judge.outcome", outcome)
        self._tally.add(self._judge, (("toolscore.judge.outcome", outcome),))

    def spans_forwarded(self, n: int) -> None:
        self._tally.add(self._forward, _SENT, n)  # once per forwarded batch

    def spans_forward_dropped(self, n: int, reason: str) -> None:
        reason = self._limiter.bound("toolscore.forward.drop.reason", reason)
        self._forward.add(n, {"toolscore.forward.outcome": "dropped", "toolscore.forward.drop.reason": reason})

    def forward_retried(self) -> None:
        self._retries.add(1)

    def score_results_dropped(self, n: int, reason: str) -> None:
        reason = self._limiter.bound("toolscore.score_store.drop.reason", reason)
        self._tally.add(self._store_dropped, (("toolscore.score_store.drop.reason", reason),), n)  # once per result

    def annotations(self, n: int, outcome: str) -> None:
        self._annotations.add(n, {"toolscore.phoenix.outcome": outcome})  # once per batch

    def observe_pending(self, callback: Callable[[], int], limit: int | None = None) -> None:
        with self._callbacks_lock:
            self._pending["traces"].append((callback, limit))

    def observe_pending_bytes(self, callback: Callable[[], int], limit: int | None = None) -> None:
        with self._callbacks_lock:
            self._pending["bytes"].append((callback, limit))

    def observe_expectations(self, callback: Callable[[], Iterable[ExpectationInfo]]) -> None:
        with self._callbacks_lock:
            self._expectations.append(callback)

    def observe_registry(self, callback: Callable[[], RegistryState | None]) -> None:
        with self._callbacks_lock:
            self._registries.append(callback)

    def score_recorded(
        self,
        result: ScoreResult,
        expectation: str,
        version: int,
        agent: str | None,
        run_span: RunSpanRef | None,
        *,
        agent_version: str | None = None,
    ) -> None:
        if self._unexported is not None:
            check, self._unexported = self._unexported, None
            with _never_raise("unexported check"):
                check.check()
        # try/except rather than `_never_raise`: a generator context manager costs ~1.5 µs, twice per score.
        try:
            self._score_metrics(result, expectation, agent)
        except Exception:
            _log.debug("toolscore telemetry: score metrics failed", exc_info=True)
        if self._events:
            try:
                if self._direct is not None:  # the record written as bytes, the common case of `serve`
                    head_key = (result.name, expectation, version, agent, agent_version)
                    self._emit_encoded(self._direct, result, head_key, run_span)
                else:
                    self._emit_event(result, expectation, version, agent, run_span, agent_version=agent_version)
            except Exception:
                _log.debug("toolscore telemetry: evaluation event failed", exc_info=True)

    def _score_metrics(self, result: ScoreResult, expectation: str, agent: str | None) -> None:
        bound = self._limiter.bound
        names: Attributes = (
            ("gen_ai.evaluation.name", bound("gen_ai.evaluation.name", result.name)),
            ("toolscore.expectation.name", bound("toolscore.expectation.name", expectation)),
        )
        if agent:
            names += (("gen_ai.agent.name", bound("gen_ai.agent.name", agent)),)
        if isinstance(result, Score):
            self._score(result.value, names)
            outcome = ("gen_ai.evaluation.score.label", bound("gen_ai.evaluation.score.label", result.label))
        else:
            outcome = ("error.type", bound("error.type", result.error_type))
        self._tally.add(self._evaluations, (*names, outcome))

    def _emit_event(
        self,
        result: ScoreResult,
        expectation: str,
        version: int,
        agent: str | None,
        run_span: RunSpanRef | None,
        *,
        agent_version: str | None,
    ) -> None:
        context = run_span_context(run_span)
        if not self._logger.enabled(context=context, event_name=EVALUATION_EVENT):
            return
        attributes = _event_head(result.name, expectation, version, agent, agent_version)
        severity = _event_tail(result, attributes)
        self._logger.emit(
            timestamp=time.time_ns(),
            context=context,
            severity_number=severity,
            attributes=valid_utf8_values(attributes),  # the explanation may quote names read from JSON
            event_name=EVALUATION_EVENT,
        )

    def _emit_encoded(
        self, logger: DirectLogger, result: ScoreResult, head_key: _HeadKey, run_span: RunSpanRef | None
    ) -> None:
        """The record `_emit_event` emits through the SDK, written as bytes (`direct_logs`); the attributes that
        repeat from one result to the next (names, versions) are encoded once."""
        heads = self._heads
        head = heads.get(head_key)
        if head is None:
            head = encode_attributes(_event_head(*head_key))
            if len(heads) >= _HEADS:
                heads.clear()
            heads[head_key] = head
        last = self._last_ids
        if last is not None and last[0] is run_span:  # a run's results come one after another
            ids = last[1]
        else:
            ids = _run_span_ids(run_span)
            self._last_ids = (run_span, ids)
        if isinstance(result, Score):  # the common case, its value written without a dict
            record = encode_score_record(
                time.time_ns(),
                _INFO,
                head,
                ids,
                value=float(result.value),
                label=result.label,
                explanation=result.explanation,
            )
        else:
            attributes: dict[str, AttributeValue] = {}
            severity = _event_tail(result, attributes).value
            record = encode_record(
                time.time_ns(), severity, head + encode_attributes(attributes), EVALUATION_EVENT, ids
            )
        logger.emit_encoded(record)
