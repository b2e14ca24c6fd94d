"""The pipeline's self-telemetry protocol, its no-op, and the run-span reference scores hang off.

The pipeline stages only ever call this protocol, so they never import the OTel metrics or logs API
and a test can hand them a recording fake or `NoopTelemetry`. The real implementation lives in
`toolscore.collector.telemetry.otel`; `create_telemetry` is the one factory that picks between them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

from toolscore.scorers._model import ScoreResult

if TYPE_CHECKING:
    from opentelemetry._logs import LoggerProvider
    from opentelemetry.metrics import MeterProvider

__all__ = [
    "DropReason",
    "ExpectationInfo",
    "JudgeOutcome",
    "NoopTelemetry",
    "PipelineTelemetry",
    "RefusalReason",
    "RegistryState",
    "RunOutcome",
    "RunSpanRef",
    "WaitOutcome",
    "create_telemetry",
]

DropReason = str
"""Why spans were dropped: ``queue_full``, ``max_pending_traces``, ``max_pending_bytes``, ``max_spans_per_trace``,
``prefilter_hold_bytes``, ``shutdown``, ``error`` (each explained in `metrics_table.ATTRIBUTES`, under
`toolscore.drop.reason`)."""

RefusalReason = str
"""Why `toolscore serve` refused an export request, or spans of one: `metrics_table.REFUSAL_REASONS`."""

WaitOutcome = str
"""How an export request that waited for room ended: ``accepted``, ``refused`` (its wait ran out), ``shutdown``."""

RunOutcome = str
"""How a run ended: ``matched`` (an expectation applied), ``unmatched``, ``incomplete``."""

JudgeOutcome = str
"""How an LLM-judge call ended: ``ok``, ``error``, ``timeout``, ``over_budget``, ``late``."""

ExpectationInfo = tuple[str, str | None]
"""(name, `severity` label or None) of one expectation, for the `toolscore.expectation.info` gauge."""

RegistryState = tuple[float, int]
"""(seconds since the registry last read its store, stored expectations it cannot read), for the
`toolscore.registry.sync.age` and `toolscore.registry.unreadable` gauges."""


class RunSpanRef(NamedTuple):
    """The span an evaluation event is parented to: the agent run span being evaluated."""

    trace_id: str
    """32 lower-case hex digits."""
    span_id: str
    """16 lower-case hex digits."""
    trace_flags: int = 1
    """W3C trace flags; 1 = sampled (the run span reached us, so it was sampled)."""


@runtime_checkable
class PipelineTelemetry(Protocol):
    """What the pipeline reports about itself. Implementations must be cheap and never raise:
    they are called on the span-ending thread and inside the scoring loop."""

    def spans_received(self, n: int) -> None:
        """`n` spans entered the pipeline (before any filtering or queueing)."""

    def spans_passed(self, n: int) -> None:
        """`n` spans were handed on to the next processor/exporter."""

    def spans_dropped(self, n: int, reason: str) -> None:
        """`n` spans were not scored; `reason` is one of `DropReason`'s values."""

    def duplicate_spans(self, n: int) -> None:
        """`n` spans arrived again (`toolscore.spans.duplicate`)."""

    def late_spans(self, n: int) -> None:
        """`n` spans arrived after their trace had already been scored."""

    def spans_forgotten(self, n: int) -> None:
        """`n` spans refused by a full queue were let go before their trace was scored (see `pipeline.refused`)."""

    def calls_dropped(self, n: int, reason: str) -> None:
        """`n` tool calls were left out of their runs' scores: ``calls_over_limit``, ``call_without_run``."""

    def spans_unreadable(self, n: int, convention: str) -> None:
        """`n` spans `convention` recognised could not be read (each is told once)."""

    def dedupe_forgotten(self, n: int, reason: str) -> None:
        """The memory of finished traces let go of `n` span ids (``max_pending_traces``, ``max_spans_per_trace``):
        a span of theirs that comes again is taken as new."""

    def log_records(self, n: int, outcome: str, reason: str = "") -> None:
        """`n` GenAI log records: ``received`` (read as events), ``refused`` (not read: not a GenAI event, no span
        context), ``late``, ``duplicate``, or ``dropped`` (`reason`: a bound, ``span_never_came``, ...)."""

    def request_refused(self, reason: str, spans: int | None = None) -> None:
        """`toolscore serve` refused an export request whole; `reason` is a `RefusalReason`, `spans` the
        spans it held when they were counted (None: it was refused before they were)."""

    def request_waited(self, seconds: float, outcome: str) -> None:
        """An export request `toolscore serve` found no room for waited `seconds` for it; `outcome` is a
        `WaitOutcome` (a refused one is also told to `request_refused`). Not called for the requests that
        fit at once, so it may cost what it likes."""

    def spans_refused(self, n: int, reason: str) -> None:
        """`toolscore serve` left `n` spans out of a request it accepted (OTLP partial success)."""

    def run_finished(self, outcome: str, agent: str | None) -> None:
        """A run left the pipeline; `outcome` is one of `RunOutcome`'s values, `agent` the run's agent name
        (None when its span has none), so runs can be told apart per agent as the scores are."""

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
        """One scorer's result for one run against one expectation version; `agent_version` is the run's
        (`AgentVersionConfig`), None when unknown, and goes on the evaluation log record."""

    def run_verdict(self, expectation: str, agent: str | None, passed: bool, agent_version: str | None = None) -> None:
        """A run's verdict on one expectation it matched, once all of that expectation's scorers have given
        their results: passed when every one passed (a scorer that could not score fails it, as in
        `toolscore eval`). `agent_version` is the run's version (`AgentVersionConfig`), None when unknown."""

    def score_delay(self, seconds: float) -> None:
        """Time from the run span's arrival in the pipeline (this process's clock, not the span's end time,
        which another host's clock may have stamped) to its going on with its scores."""

    def judge_outcome(self, outcome: str) -> None:
        """One LLM-judge call ended; `outcome` is one of `JudgeOutcome`'s values."""

    def observe_pending(self, callback: Callable[[], int], limit: int | None = None) -> None:
        """Register a callback the metrics reader calls for the number of traces held in memory,
        and the `max_pending_traces` it is bounded by (None: unbounded or unknown, not reported)."""

    def observe_pending_bytes(self, callback: Callable[[], int], limit: int | None = None) -> None:
        """Register a callback the metrics reader calls for the bytes the pending traces' spans count for
        against `max_pending_bytes` (`TraceStore.size`): what bounds memory, where the trace count does not;
        and that `max_pending_bytes` (None: unknown, not reported), so alerts can warn before drops."""

    def observe_expectations(self, callback: Callable[[], Iterable[ExpectationInfo]]) -> None:
        """Register a callback the metrics reader calls for the registry's expectations; those the score
        metrics already name become info series, so alert rules can take an alert's severity from them."""

    def observe_registry(self, callback: Callable[[], RegistryState | None]) -> None:
        """Register a callback the metrics reader calls for the registry's state (None: a matcher that
        is not a `Registry`, nothing to report)."""


class NoopTelemetry:
    """Telemetry off: every method does nothing (the default when none is configured)."""

    def spans_received(self, n: int) -> None:
        pass

    def spans_passed(self, n: int) -> None:
        pass

    def spans_dropped(self, n: int, reason: str) -> None:
        pass

    def duplicate_spans(self, n: int) -> None:
        pass

    def late_spans(self, n: int) -> None:
        pass

    def spans_forgotten(self, n: int) -> None:
        pass

    def calls_dropped(self, n: int, reason: str) -> None:
        pass

    def spans_unreadable(self, n: int, convention: str) -> None:
        pass

    def dedupe_forgotten(self, n: int, reason: str) -> None:
        pass

    def log_records(self, n: int, outcome: str, reason: str = "") -> None:
        pass

    def request_refused(self, reason: str, spans: int | None = None) -> None:
        pass

    def request_waited(self, seconds: float, outcome: str) -> None:
        pass

    def spans_refused(self, n: int, reason: str) -> None:
        pass

    def run_finished(self, outcome: str, agent: str | None) -> None:
        pass

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
        pass

    def run_verdict(self, expectation: str, agent: str | None, passed: bool, agent_version: str | None = None) -> None:
        pass

    def score_delay(self, seconds: float) -> None:
        pass

    def judge_outcome(self, outcome: str) -> None:
        pass

    def observe_pending(self, callback: Callable[[], int], limit: int | None = None) -> None:
        pass

    def observe_pending_bytes(self, callback: Callable[[], int], limit: int | None = None) -> None:
        pass

    def observe_expectations(self, callback: Callable[[], Iterable[ExpectationInfo]]) -> None:
        pass

    def observe_registry(self, callback: Callable[[], RegistryState | None]) -> None:
        pass

    def spans_forwarded(self, n: int) -> None:
        pass

    def spans_forward_dropped(self, n: int, reason: str) -> None:
        pass

    def forward_retried(self) -> None:
        pass

    def score_results_dropped(self, n: int, reason: str) -> None:
        pass

    def annotations(self, n: int, outcome: str) -> None:
        pass


def create_telemetry(
    meter_provider: MeterProvider | None = None,
    logger_provider: LoggerProvider | None = None,
    enabled: bool = True,
    max_attribute_values: int | None = None,
    max_agent_versions: int | None = None,
) -> PipelineTelemetry:
    """The one factory: the OTel implementation, or `NoopTelemetry` when `enabled` is false.

    Providers are injected; ``None`` falls back to the global meter/logger provider (a no-op until the
    application configures one), so a library user pays nothing unless they opt in.
    """
    if not enabled:
        return NoopTelemetry()
    from toolscore.collector.telemetry.otel import OTelPipelineTelemetry

    return OTelPipelineTelemetry(
        meter_provider=meter_provider,
        logger_provider=logger_provider,
        max_attribute_values=max_attribute_values,
        max_agent_versions=max_agent_versions,
    )
