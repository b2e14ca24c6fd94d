"""Every metric toolscore emits about itself, as one declarative table.

The instruments are created from this table (so a name or unit cannot drift from its documentation),
docs/metrics.md is rendered from it, and a test checks what the SDK really exports
against it. Attribute values are bounded: enumerated attributes list their values, and the ones that
come from names (scorers, expectations, agents, error types) are capped per attribute, with overflow
mapped to `OTHER_VALUE` and counted by `toolscore.attribute.overflow`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "ATTRIBUTES",
    "CAPPED_NOTE",
    "DELAY_BUCKETS_S",
    "METRICS",
    "OTHER_VALUE",
    "OVERLOAD_REASONS",
    "REFUSAL_REASONS",
    "SCORE_BUCKETS",
    "WAIT_BUCKETS_S",
    "AttributeSpec",
    "InstrumentKind",
    "MetricSpec",
    "metric",
]

OTHER_VALUE = "_other"
"""The value a capped attribute takes once its distinct-value budget is spent."""

InstrumentKind = Literal["counter", "histogram", "observable_gauge", "observable_counter"]

SCORE_BUCKETS: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""Explicit boundaries on 0..1: the built-in scorers' range, one bucket per tenth."""

DELAY_BUCKETS_S: tuple[float, ...] = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
"""From a millisecond (in-process, rule scorers) to a minute (settle windows plus a slow LLM judge)."""

WAIT_BUCKETS_S: tuple[float, ...] = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 10)
"""From one look for room (every 10 ms) to `overload_wait_ms`: finest up to its default of a second, and
up to the 10 s OTLP senders wait for an answer, which the setting should stay well under."""


@dataclass(frozen=True)
class AttributeSpec:
    """One metric attribute: either a closed set of values, or open names capped per attribute."""

    name: str
    description: str
    values: tuple[str, ...] | None = None
    """The allowed values; ``None`` means names from the registry or the spans, capped (see module doc)."""
    values_note: str | None = None
    """How docs/metrics.md describes the values, when not by the rule above."""

    @property
    def capped(self) -> bool:
        return self.values is None


@dataclass(frozen=True)
class MetricSpec:
    """One instrument: name, kind, UCUM unit, attributes, and what a healthy reading looks like."""

    name: str
    kind: InstrumentKind
    unit: str
    description: str
    attributes: tuple[str, ...]
    healthy: str
    buckets: tuple[float, ...] | None = None
    """Explicit histogram bucket boundaries (histograms only)."""


REFUSAL_REASONS: tuple[str, ...] = (
    "queue_full",
    "forward_queue_full",
    "shutdown",
    "too_many_connections",
    "too_many_calls",
    "too_many_spans",
    "too_large",
    "invalid",
    "unsupported",
    "unauthenticated",
    "timeout",
    "internal",
)
"""Every `toolscore.refusal.reason`; OTLP senders retry the first five (RESOURCE_EXHAUSTED, HTTP 429, 503)."""

OVERLOAD_REASONS: tuple[str, ...] = ("queue_full", "forward_queue_full", "too_many_connections", "too_many_calls")
"""The refusal reasons that mean `toolscore serve` is overloaded (the `ToolscoreRefusingExports` alert's)."""

CAPPED_NOTE = "names, at most `max_attribute_values` distinct values; then `_other`"
"""How docs/metrics.md describes a capped attribute's values."""

_VALUE_ATTRIBUTES: tuple[AttributeSpec, ...] = (
    AttributeSpec("gen_ai.evaluation.name", "The scorer's name, as in the `gen_ai.evaluation.result` event."),
    AttributeSpec("toolscore.expectation.name", "The expectation the run was scored against."),
    AttributeSpec("toolscore.expectation.severity", "The expectation's `severity` label; absent when it has none."),
    AttributeSpec("gen_ai.agent.name", "The agent's name from the run span; absent when the span has none."),
    AttributeSpec(
        "toolscore.agent.version",
        "The agent's version, read from the run (`pipeline.agent_version`): its `max_agent_versions` most recent "
        "versions per agent have series of their own, older ones count as `_other`.",
        values_note="versions, the latest `max_agent_versions` (default 5) per agent; then `_other`",
    ),
    AttributeSpec("gen_ai.evaluation.score.label", "The scorer's verdict.", ("pass", "fail")),
    AttributeSpec(
        "toolscore.run.verdict",
        "The run's verdict on the expectation: `pass` when every one of its scorers that scored the run passed, "
        "`fail` when one failed or could not score (as `toolscore eval` counts runs).",
        ("pass", "fail"),
    ),
    AttributeSpec("error.type", "Why a scorer could not score (`ScoreFailure.error_type`)."),
    AttributeSpec("toolscore.run.outcome", "How a run left the pipeline.", ("matched", "unmatched", "incomplete")),
    AttributeSpec(
        "toolscore.span.outcome",
        "What happened to spans (`dropped`: not scored; `refused`: `toolscore serve` did not take them).",
        ("received", "passed", "dropped", "refused"),
    ),
    AttributeSpec(
        "toolscore.drop.reason",
        "Why spans were not scored (only with `dropped`); `error`: extracting or scoring their trace raised "
        "(the log says why).",
        (
            "queue_full",
            "max_pending_traces",
            "max_pending_bytes",
            "max_spans_per_trace",
            "prefilter_hold_bytes",
            "shutdown",
            "error",
        ),
    ),
    AttributeSpec(
        "toolscore.call.drop.reason",
        "Why tool calls were left out of their run's score: the run had more than `extract.max_calls_per_run` "
        "(`calls_over_limit`; the run is scored on the first ones), or no run owns them and `extract.infer_runs` "
        "is off, or their run span ended before them (OpenLIT's Agno wrapper and a streamed `Agent.run`) "
        "(`call_without_run`).",
        ("calls_over_limit", "call_without_run"),
    ),
    AttributeSpec(
        "toolscore.convention",
        "The span convention that recognised a span but could not read it.",
        (
            "pydantic_ai",
            "logfire_openai_agents",
            "google_adk",
            "strands",
            "mastra",
            "langfuse",
            "mlflow",
            "openlit",
            "litellm",
            "traceloop",
            "vercel_ai",
            "openinference",
            "genai",
        ),
    ),
    AttributeSpec(
        "toolscore.forget.reason",
        "Which bound made the pipeline let go of finished traces' span ids: it remembers the latest "
        "`max_pending_traces` finished traces (`max_pending_traces`) within `max_finished_bytes` of memory "
        "(`max_finished_bytes`), and the latest `max_spans_per_trace` span ids of a trace that opens again and "
        "again (`max_spans_per_trace`).",
        ("max_pending_traces", "max_finished_bytes", "max_spans_per_trace"),
    ),
    AttributeSpec(
        "toolscore.judge.outcome", "How an LLM-judge call ended.", ("ok", "error", "timeout", "over_budget", "late")
    ),
    AttributeSpec(
        "toolscore.forward.outcome", "What became of spans `toolscore serve` forwards downstream.", ("sent", "dropped")
    ),
    AttributeSpec(
        "toolscore.forward.drop.reason",
        "Why forwarded spans were lost (only with `dropped`).",
        ("queue_full", "retries_exhausted", "rejected", "shutdown"),
    ),
    AttributeSpec(
        "toolscore.refusal.reason",
        "Why `toolscore serve` refused an export request, or spans of one. Senders retry `queue_full` and "
        "`forward_queue_full` (which queue had no room), `shutdown`, `too_many_connections` (HTTP 503 at "
        "`http_max_connections`) and `too_many_calls` (RESOURCE_EXHAUSTED at `grpc_max_concurrent_calls`). The "
        "other reasons lose the spans: `too_many_spans` (over `max_spans_per_request`), `too_large` (HTTP 413, "
        "or RESOURCE_EXHAUSTED for a gRPC message; see `toolscore.receiver.refused`), `invalid` (undecodable "
        "or badly framed; or spans with unusable ids left out of an accepted request), `unsupported` (HTTP "
        "415, 501; a gRPC call without a request message), `unauthenticated`, `timeout` (HTTP 408, "
        "`http_request_timeout_s`), `internal` (toolscore failed; see its log).",
        REFUSAL_REASONS,
    ),
    AttributeSpec(
        "toolscore.log_record.outcome",
        "What became of GenAI log records (events): `received` (read, to join their spans), `refused` (not "
        "read: see `toolscore.log_record.reason`), `late` (their span was already scored), `duplicate` (already "
        "joined), `dropped` (read, but not joined: see the reason).",
        ("received", "refused", "late", "duplicate", "dropped"),
    ),
    AttributeSpec(
        "toolscore.log_record.reason",
        "Why log records were refused or dropped. Refused: `not_genai_event` (not one of the GenAI events "
        "toolscore reads: toolscore is no logs pipeline and forwards no logs), `no_span_context` (a GenAI event "
        "without trace and span id), `evaluation_result` (toolscore's own events sent back), `invalid` (ids that "
        "are not hex). Dropped: `queue_full`, `max_pending_traces`, `max_pending_bytes`, `max_spans_per_trace` "
        "(events waiting for their spans, per trace), `span_never_came` (their trace finished without their "
        "span), `shutdown`, `error`.",
        (
            "not_genai_event",
            "no_span_context",
            "evaluation_result",
            "invalid",
            "queue_full",
            "max_pending_traces",
            "max_pending_bytes",
            "max_spans_per_trace",
            "span_never_came",
            "shutdown",
            "error",
        ),
    ),
    AttributeSpec(
        "toolscore.wait.outcome",
        "How an export request that waited for room ended: queued (`accepted`), refused for retry when its "
        "`overload_wait_ms` ran out (`refused`), or refused when shutdown began (`shutdown`).",
        ("accepted", "refused", "shutdown"),
    ),
    AttributeSpec(
        "toolscore.score_store.drop.reason",
        "Why results were not stored: the writer was behind (`queue_full`, `score_store.queue_size`), SQLite "
        "refused them (`write_failed`, the log says why), or they came after the store was closed (`shutdown`).",
        ("queue_full", "write_failed", "shutdown"),
    ),
    AttributeSpec(
        "toolscore.phoenix.outcome",
        "How a score posted to Phoenix as a span annotation ended: `sent`, or dropped because the queue was full "
        "(`queue_full`, `phoenix.queue_size`), Phoenix never received the run span within `phoenix.retry_for_s` "
        "(`span_not_found`), Phoenix refused the request (`rejected`, the log says why), it stayed unreachable "
        "(`unreachable`), or `toolscore serve` shut down first (`shutdown`).",
        ("sent", "queue_full", "span_not_found", "rejected", "unreachable", "shutdown"),
    ),
)
_OVERFLOW_ATTRIBUTE = AttributeSpec(
    "toolscore.attribute.name",
    "Which attribute had a value replaced by `_other`.",
    tuple(spec.name for spec in _VALUE_ATTRIBUTES),
)
ATTRIBUTES: dict[str, AttributeSpec] = {spec.name: spec for spec in (*_VALUE_ATTRIBUTES, _OVERFLOW_ATTRIBUTE)}
"""Every metric attribute, by name, in the order docs/metrics.md lists them."""

METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        "toolscore.evaluation.score",
        "histogram",
        "1",
        "Score values (0..1) of successful evaluations.",
        ("gen_ai.evaluation.name", "toolscore.expectation.name", "gen_ai.agent.name"),
        "Mass near 1 for agents that meet their expectations; a shift left after a deploy is a regression.",
        SCORE_BUCKETS,
    ),
    MetricSpec(
        "toolscore.evaluations",
        "counter",
        "{evaluation}",
        "Evaluations (one per scorer, run and expectation), by verdict (`gen_ai.evaluation.score.label`) or by "
        "failure (`error.type`): the scorer pass rate. A run's own verdict is `toolscore.expectation.runs`.",
        (
            "gen_ai.evaluation.name",
            "toolscore.expectation.name",
            "gen_ai.agent.name",
            "gen_ai.evaluation.score.label",
            "error.type",
        ),
        "Mostly `pass`; any `error.type` series means a scorer could not score (judge down, bad input).",
    ),
    MetricSpec(
        "toolscore.expectation.runs",
        "counter",
        "{run}",
        "Runs scored against an expectation, by the run's verdict (`toolscore.run.verdict`): the pass rate "
        "(passing runs / runs), which `toolscore eval` reports and the dashboard and alerts read. A run is counted "
        "once per expectation it matched, when the last of that expectation's scorers has given its result (an "
        "LLM judge's may come after the run span has gone on); a run none of whose scorers scored it (all "
        "sampled out) is not counted. `toolscore.evaluations` counts each scorer's verdicts: the scorer pass "
        "rate, which pools verdicts across scorers and is not the pass rate.",
        ("toolscore.expectation.name", "gen_ai.agent.name", "toolscore.run.verdict"),
        "Mostly `pass`; a drop after a deploy is a regression (`ToolscoreExpectationPassRateRegression`): the "
        "scorer pass rate per `gen_ai.evaluation.name` says which scorer fails.",
    ),
    MetricSpec(
        "toolscore.expectation.version.runs",
        "observable_counter",
        "{run}",
        "`toolscore.expectation.runs` per agent version (`toolscore.agent.version`), for runs whose version is "
        "known: the pass rate of each version, which the canary alert compares with the previous version's. "
        "Each agent keeps the series of its `max_agent_versions` most recently seen versions; when a newer one "
        "comes, the oldest's series ends (Prometheus keeps its last samples) and its later runs count as "
        "`_other` (counted in `toolscore.attribute.overflow`).",
        ("toolscore.expectation.name", "gen_ai.agent.name", "toolscore.agent.version", "toolscore.run.verdict"),
        "Mostly `pass` for every version; a version below the one before it is a release regression "
        "(`ToolscoreAgentVersionRegression`); `_other` growing means old versions still run.",
    ),
    MetricSpec(
        "toolscore.agent.version.first_seen",
        "observable_gauge",
        "s",
        "When this process counted the first run of each kept agent version (Unix time): the release order, "
        "from which the canary alert tells a version from the one before it (the minimum over replicas).",
        ("gen_ai.agent.name", "toolscore.agent.version"),
        "One series per kept version, at most `max_agent_versions` per agent; a new one appears with each deploy.",
    ),
    MetricSpec(
        "toolscore.expectation.info",
        "observable_gauge",
        "{expectation}",
        "1 per expectation of the registry that has scores, carrying its `severity` label (alert rules join on it).",
        ("toolscore.expectation.name", "toolscore.expectation.severity"),
        "One series per scored expectation; the alert rules take an alert's `severity` from it (default `warning`).",
    ),
    MetricSpec(
        "toolscore.registry.sync.age",
        "observable_gauge",
        "s",
        "Seconds since the registry last read its store: the expectations runs are matched against are at most "
        "this old. While the store is unreachable, scoring goes on with the expectations read last.",
        (),
        "Below `registry.poll_interval_s` plus a few seconds; a climb means the store is unreachable (the log "
        "says why, once) or, before the first read, that `/readyz` is waiting for it.",
    ),
    MetricSpec(
        "toolscore.registry.unreadable",
        "observable_gauge",
        "{expectation}",
        "Stored expectations this collector cannot read (written by a newer toolscore, or edited by hand): each "
        "keeps its last readable version or matches nothing, and the log names it.",
        (),
        "0; otherwise `toolscore expectations list` shows which (disabled, labelled `toolscore.unreadable`).",
    ),
    MetricSpec(
        "toolscore.runs",
        "counter",
        "{run}",
        "Agent runs that left the pipeline, by outcome and agent.",
        ("toolscore.run.outcome", "gen_ai.agent.name"),
        "`matched` grows with traffic; `incomplete` near 0 (else runs are cut: see dropped spans by reason, "
        "`trace_idle_timeout_s`, and trace routing across replicas); an agent whose runs turn `unmatched` is no longer "
        "selected by its expectations (agent or service renamed).",
    ),
    MetricSpec(
        "toolscore.spans",
        "counter",
        "{span}",
        "Spans received, passed on to the next processor, or dropped from scoring (they still pass on); "
        "`refused`: spans of export requests `toolscore serve` refused, when it had counted them (a refused "
        "request's retry counts again), and spans it left out of accepted ones.",
        ("toolscore.span.outcome", "toolscore.drop.reason", "toolscore.refusal.reason"),
        "`passed` catches up with `received`; `dropped` stays 0 (else raise the queue or pending limits); "
        "`refused` other than for overload means senders lose spans.",
    ),
    MetricSpec(
        "toolscore.spans.late",
        "counter",
        "{span}",
        "Spans that arrived after their trace had been scored (they are not scored).",
        (),
        "0, or a tiny fraction of received spans; growth means the settle window is too short.",
    ),
    MetricSpec(
        "toolscore.spans.duplicate",
        "counter",
        "{span}",
        "Spans received again (an at-least-once sender re-sent them, e.g. after an export timed out): they change "
        "no score and are not passed on (nor counted `passed`), since the first copy was or will be, scored if "
        "it is a run span. The pipeline remembers the span ids of the latest `max_pending_traces` finished "
        "traces (see `toolscore.dedupe.forgotten`); a copy that comes later passes on again.",
        (),
        "0 or near it; steady growth means senders re-send (export timeouts shorter than toolscore's answers).",
    ),
    MetricSpec(
        "toolscore.spans.forgotten",
        "counter",
        "{span}",
        "Spans the in-process queue refused (`queue_full`) that were let go before their trace was scored, "
        "so that a run missing one may lack `toolscore.run.incomplete`: more were refused between two worker "
        "steps than `queue_size`, or more traces had refused spans than `max_pending_traces`.",
        (),
        "0; it can only grow while spans are dropped with `queue_full` (raise `queue_size`).",
    ),
    MetricSpec(
        "toolscore.spans.unreadable",
        "counter",
        "{span}",
        "Spans a convention recognised but could not read (an attribute in a shape it does not expect), each "
        "counted once: an unreadable tool span's call is left out of its run, a run span's agent name and a "
        "model span's call order are lost; the rest of the run is scored.",
        ("toolscore.convention",),
        "0; growth means an instrumentation writes what that convention's reader does not expect (a new "
        "version): the `toolscore.collector.extract` debug log says why, per span.",
    ),
    MetricSpec(
        "toolscore.dedupe.forgotten",
        "counter",
        "{span}",
        "Span ids of finished traces the pipeline stopped remembering, to keep that memory bounded. It remembers "
        "them to recognise a span that comes again (an at-least-once sender's re-send, a straggler); once its id "
        "is forgotten, such a span is taken as new: a re-sent run span is scored a second time, without its calls.",
        ("toolscore.forget.reason",),
        "`max_pending_traces` follows the finished traces once that many have finished (the memory turns over); it "
        "matters only if senders re-send spans later than that. `max_finished_bytes` stays 0 unless finished "
        "traces average more than ~60 spans (it then turns the memory over instead). `max_spans_per_trace` stays 0 "
        "unless traces "
        "reopen past that many spans (long sessions with quiet spells over `trace_idle_timeout_s`).",
    ),
    MetricSpec(
        "toolscore.log_records",
        "counter",
        "{record}",
        "GenAI log records (events such as `gen_ai.choice`, sent as OTLP logs or emitted to the SDK's logger "
        "provider) read to join their spans, or refused, late, duplicate or dropped, by reason. Their events "
        "join the span whose trace and span id they carry, whichever comes first.",
        ("toolscore.log_record.outcome", "toolscore.log_record.reason"),
        "`received` follows the GenAI traffic; `refused` means a sender sends toolscore logs it does not read "
        "(filter them in the Collector's pipeline to toolscore); `late` and `dropped` stay near 0 (else raise "
        "the settle window or the pending limits).",
    ),
    MetricSpec(
        "toolscore.calls.dropped",
        "counter",
        "{call}",
        "Tool calls extracted from spans but left out of their runs' scores.",
        ("toolscore.call.drop.reason",),
        "0; `calls_over_limit` means runs longer than `extract.max_calls_per_run` are scored on their first "
        "calls only (raise it); `call_without_run` that runs are not recognised and `infer_runs` is off, or "
        "calls whose run span ended before them (OpenLIT's Agno wrapper and a streamed `Agent.run`: that run is "
        "flagged incomplete).",
    ),
    MetricSpec(
        "toolscore.pending.traces",
        "observable_gauge",
        "{trace}",
        "Traces held in memory waiting for their runs to settle.",
        (),
        "Flat, well under `max_pending_traces`; a steady climb means runs never settle.",
    ),
    MetricSpec(
        "toolscore.pending.traces.limit",
        "observable_gauge",
        "{trace}",
        "The configured `max_pending_traces` (summed over the process's pipelines): beyond it, traces are dropped.",
        (),
        "Constant; `toolscore.pending.traces` above 80% of it means traces are about to be dropped.",
    ),
    MetricSpec(
        "toolscore.pending.bytes",
        "observable_gauge",
        "By",
        "Span data held for pending traces, as counted against `max_pending_bytes` (summed over the process's "
        "pipelines): an estimate of the memory the kept spans take: their text (`toolscore serve`: their bytes "
        "as received) and a measured cost per attribute, event and span; a span kept without its attributes "
        "costs 700.",
        (),
        "Flat, well under `max_pending_bytes`, and back near 0 when traffic stops; close to it, the oldest traces "
        "are dropped unscored (`toolscore.spans`, drop reason `max_pending_bytes`).",
    ),
    MetricSpec(
        "toolscore.pending.bytes.limit",
        "observable_gauge",
        "By",
        "The configured `max_pending_bytes` (summed over the process's pipelines): beyond it, the oldest traces "
        "are dropped. On Prometheus `toolscore_pending_bytes_limit_bytes` (the exporter adds the unit).",
        (),
        "Constant; `toolscore.pending.bytes` above 90% of it means traces are about to be dropped.",
    ),
    MetricSpec(
        "toolscore.score.delay",
        "histogram",
        "s",
        "Time from a scored run span's arrival in the pipeline (in process: its end, `on_end`; in `toolscore serve`: "
        "when its export request was taken) to its going on with its scores, on this process's clock. Not from "
        "the span's end time: the sender's clock stamps it, and between hosts their skew would be added to the "
        "delay (or make it negative).",
        (),
        "Close to the settle window; a long tail is the LLM judge or a backlog.",
        DELAY_BUCKETS_S,
    ),
    MetricSpec(
        "toolscore.judge.calls",
        "counter",
        "{call}",
        "LLM-judge calls, by outcome.",
        ("toolscore.judge.outcome",),
        "Mostly `ok`; `over_budget` means the judge budget is spent, `late` that the run was scored without it.",
    ),
    MetricSpec(
        "toolscore.forward.spans",
        "counter",
        "{span}",
        "Spans `toolscore serve` sent downstream, or lost: the forward queue was full, retries ran out, "
        "the downstream refused them, or shutdown came first.",
        ("toolscore.forward.outcome", "toolscore.forward.drop.reason"),
        "`sent` follows the received spans; any `dropped` series means spans are missing downstream.",
    ),
    MetricSpec(
        "toolscore.forward.retries",
        "counter",
        "{request}",
        "Forward attempts that failed and were retried (downstream unavailable, throttling, timeouts).",
        (),
        "0, or short bursts while the downstream restarts; steady growth means it is down or too slow.",
    ),
    MetricSpec(
        "toolscore.receiver.refused",
        "counter",
        "{request}",
        "Export requests `toolscore serve` refused whole, by reason. Overload (RESOURCE_EXHAUSTED / HTTP 429 "
        "with a retry delay, read or not; HTTP 503 while every connection slot is taken) and shutdown are "
        "retried by the sender, so nothing is lost unless it gives up; any other reason is answered with an "
        "error saying why, and the request's spans are lost. A gRPC message over twice `max_message_bytes` is "
        "refused by grpc from its length prefix before toolscore sees it, and is not counted (to toolscore the "
        "call just ends, as when its sender cancels it).",
        ("toolscore.refusal.reason",),
        "0, or short bursts of overload; steady growth means the replica is short of CPU (`queue_full`: add "
        "replicas), the downstream is slow (`forward_queue_full`) or more senders export at once than "
        "`http_max_connections` / `grpc_max_concurrent_calls` (raise them or add replicas); any other reason "
        "means a sender is misconfigured or sends what toolscore cannot take.",
    ),
    MetricSpec(
        "toolscore.receiver.wait.duration",
        "histogram",
        "s",
        "Export requests that found `toolscore serve`'s queues full and waited for room (`overload_wait_ms`, at "
        "most `max_waiting_requests` at once), by outcome: seconds from the first look to the answer. Each one "
        "`refused` or refused at `shutdown` is also counted in `toolscore.receiver.refused`; a request refused "
        "without waiting (every waiting place taken, or `overload_wait_ms` 0) is counted only there.",
        ("toolscore.wait.outcome",),
        "No samples, or `accepted` ones well under `overload_wait_ms` during bursts; a steady rate of waits means "
        "the replica is near its capacity, and `refused` ones that it is past it (see `toolscore.receiver.refused`).",
        WAIT_BUCKETS_S,
    ),
    MetricSpec(
        "toolscore.score_store.dropped",
        "counter",
        "{result}",
        "Results (one per scorer, expectation and run) `toolscore serve` could not keep in its score store "
        "(`toolscore runs`); the scores still went out as metrics, events and span attributes.",
        ("toolscore.score_store.drop.reason",),
        "0; `queue_full` means the store's writer cannot keep up (a slow disk: raise `score_store.queue_size` "
        "or disable the store), `write_failed` a disk or database problem.",
    ),
    MetricSpec(
        "toolscore.phoenix.annotations",
        "counter",
        "{annotation}",
        "Scores posted to Arize Phoenix as span annotations (`phoenix.enabled`), by outcome.",
        ("toolscore.phoenix.outcome",),
        "Only `sent`; `span_not_found` means the run spans do not reach the Phoenix toolscore posts to (another "
        "project's Phoenix, or sampled out downstream), `unreachable` that Phoenix is down or `phoenix.endpoint` "
        "is wrong.",
    ),
    MetricSpec(
        "toolscore.attribute.overflow",
        "counter",
        "{measurement}",
        "Measurements whose attribute value was replaced by `_other` to keep cardinality bounded.",
        ("toolscore.attribute.name",),
        "0; growth means more distinct names than `max_attribute_values` (raise it or rename).",
    ),
)


def metric(name: str) -> MetricSpec:
    """The table row for `name` (KeyError on a name not in the table)."""
    for spec in METRICS:
        if spec.name == name:
            return spec
    raise KeyError(name)


def _check_table() -> None:
    """Fail at import when a metric names an attribute the table does not describe."""
    for spec in METRICS:
        unknown = [a for a in spec.attributes if a not in ATTRIBUTES]
        if unknown:
            raise RuntimeError(f"{spec.name}: attributes {unknown} are not in ATTRIBUTES")
        if (spec.kind == "histogram") != (spec.buckets is not None):
            raise RuntimeError(f"{spec.name}: buckets are for histograms, and every histogram has them")


_check_table()
