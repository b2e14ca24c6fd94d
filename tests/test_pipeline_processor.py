"""The in-process processor with the real SDK: what the run span carries, and that every span goes on once."""

from __future__ import annotations

import threading
from collections import Counter

from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanContext, TraceFlags

import toolscore.collector
from tests.pipeline_builders import (
    COLLIDING,
    COLLIDING_LABELS,
    TRAVEL,
    Recording,
    agent_run,
    by_name,
    registry_with,
    run_attrs,
    tool_attrs,
    traced,
)
from toolscore.collector.pipeline import PipelineConfig, ToolscoreSpanProcessor, attribute_key
from toolscore.collector.pipeline.emit import RunScores, build_enrichment
from toolscore.scorers import AgentRun, ToolCall


def test_scored_run_span_carries_expectations_calls_and_scores() -> None:
    with registry_with(TRAVEL) as registry, traced(registry) as (tracer, processor, exporter):
        agent_run(tracer, tools=("search_flights", "book_flight"))
        assert processor.force_flush(5_000)
        run = by_name(exporter.get_finished_spans())["invoke_agent travel"]
    attributes = dict(run.attributes or {})
    assert attributes["toolscore.expectations"] == ("travel",)
    assert attributes["toolscore.tool_calls"] == ("search_flights", "book_flight")
    assert attributes["toolscore.evaluation.travel.tool_selection.score"] == 1.0
    assert attributes["toolscore.evaluation.travel.tool_selection.label"] == "pass"
    assert attributes["toolscore.evaluation.travel.trajectory.label"] == "pass"
    assert attributes["gen_ai.agent.name"] == "travel"


def test_each_score_is_one_evaluation_event_on_the_run_span() -> None:
    with registry_with(TRAVEL) as registry, traced(registry) as (tracer, processor, exporter):
        agent_run(tracer, tools=("search_flights",))
        processor.force_flush(5_000)
        run = by_name(exporter.get_finished_spans())["invoke_agent travel"]
    events = [dict(e.attributes or {}) for e in run.events if e.name == "gen_ai.evaluation.result"]
    assert [e["gen_ai.evaluation.name"] for e in events] == ["tool_selection", "trajectory"]
    selection = events[0]
    assert selection["gen_ai.evaluation.score.value"] == 0.0
    assert selection["gen_ai.evaluation.score.label"] == "fail"
    assert "book_flight" in str(selection["gen_ai.evaluation.explanation"])
    assert selection["toolscore.expectation.name"] == "travel"
    assert selection["toolscore.expectation.version"] == 1
    assert all(e.timestamp == run.end_time for e in run.events)


def test_span_events_can_be_turned_off_attributes_stay() -> None:
    with (
        registry_with(TRAVEL) as registry,
        traced(registry, PipelineConfig(settle_ms=20, emit_span_events=False)) as (
            tracer,
            processor,
            exporter,
        ),
    ):
        agent_run(tracer)
        processor.force_flush(5_000)
        run = by_name(exporter.get_finished_spans())["invoke_agent travel"]
    assert run.events == ()
    assert (run.attributes or {})["toolscore.evaluation.travel.trajectory.score"] == 1.0


def test_enriched_span_keeps_identity_times_status_and_resource() -> None:
    with registry_with(TRAVEL) as registry, traced(registry) as (tracer, processor, exporter):
        original = agent_run(tracer)
        processor.force_flush(5_000)
        run = by_name(exporter.get_finished_spans())["invoke_agent travel"]
    assert run.context == original.get_span_context()
    assert isinstance(original, ReadableSpan)
    assert (run.parent, run.start_time, run.end_time) == (original.parent, original.start_time, original.end_time)
    assert run.resource is original.resource
    assert run.instrumentation_scope == original.instrumentation_scope
    assert run.kind == original.kind
    assert run.status.status_code == original.status.status_code


def test_enriched_span_keeps_the_counts_the_sdk_limits_dropped() -> None:
    """A run span cut by the application's `SpanLimits` says so downstream (OTLP `dropped_*_count`) once enriched."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=3, max_events=1, max_links=1))
    with registry_with(TRAVEL) as registry:
        processor = ToolscoreSpanProcessor(registry, SimpleSpanProcessor(exporter), PipelineConfig(settle_ms=20))
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("toolscore-tests")
        link = Link(SpanContext(1, 2, is_remote=False, trace_flags=TraceFlags(1)))
        try:
            with tracer.start_as_current_span(
                "invoke_agent travel", links=[link, link], attributes={"cut": 1, "kept": 2, **run_attrs("travel")}
            ) as original:
                original.add_event("cut")
                original.add_event("kept")
                tracer.start_span("execute_tool book_flight", attributes=tool_attrs("book_flight", "c")).end()
            assert processor.force_flush(5_000)
        finally:
            provider.shutdown()
    run = by_name(exporter.get_finished_spans())["invoke_agent travel"]
    assert "toolscore.expectations" in (run.attributes or {})
    assert (original.dropped_attributes, original.dropped_events, original.dropped_links) == (1, 1, 1)
    assert (run.dropped_attributes, run.dropped_events, run.dropped_links) == (1, 1, 1)


def test_unmatched_run_is_marked_with_no_expectations_and_no_scores() -> None:
    with registry_with(TRAVEL) as registry, traced(registry) as (tracer, processor, exporter):
        agent_run(tracer, agent="support", tools=("lookup_order",))
        processor.force_flush(5_000)
        run = by_name(exporter.get_finished_spans())["invoke_agent support"]
    attributes = dict(run.attributes or {})
    assert attributes["toolscore.expectations"] == ()
    assert attributes["toolscore.tool_calls"] == ("lookup_order",)
    assert not [k for k in attributes if k.startswith("toolscore.evaluation.")]


def test_every_span_reaches_next_exactly_once_run_span_last() -> None:
    with registry_with(TRAVEL) as registry, traced(registry) as (tracer, processor, exporter):
        with tracer.start_as_current_span("http request"):
            with tracer.start_as_current_span("db query"):
                pass
            agent_run(tracer)
            agent_run(tracer, agent="support", tools=("lookup_order",))
        processor.force_flush(5_000)
        spans = exporter.get_finished_spans()
    ids = Counter(span.context.span_id for span in spans if span.context is not None)
    assert len(spans) == 7
    assert set(ids.values()) == {1}
    names = [span.name for span in spans]
    assert names.index("execute_tool book_flight") < names.index("invoke_agent travel")


def test_children_go_on_before_the_run_is_scored() -> None:
    config = PipelineConfig(settle_ms=60_000, max_hold_ms=60_000)
    with registry_with(TRAVEL) as registry, traced(registry, config) as (tracer, processor, exporter):
        agent_run(tracer)
        with tracer.start_as_current_span("unrelated"):
            pass
        seen = _wait_for(exporter, 3)
        assert sorted(seen) == ["execute_tool book_flight", "execute_tool search_flights", "unrelated"]
        processor.force_flush(5_000)
        assert "invoke_agent travel" in [s.name for s in exporter.get_finished_spans()]


def _wait_for(exporter: InMemorySpanExporter, count: int, timeout_s: float = 5.0) -> list[str]:
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        names = [s.name for s in exporter.get_finished_spans()]
        if len(names) >= count:
            return names
        time.sleep(0.005)
    return [s.name for s in exporter.get_finished_spans()]


def test_attribute_names_are_reduced_to_lowercase_alnum_and_underscore() -> None:
    assert attribute_key("Checkout-Canary.v2") == "checkout_canary_v2"
    assert attribute_key("judge (gpt-4o)") == "judge_gpt_4o"
    exp = {
        **TRAVEL,
        "name": "Travel-Canary.v2",
        "scorers": [{"type": "tool_selection", "expected_tool": "x", "name": "Pick X"}],
    }
    with registry_with(exp) as registry, traced(registry) as (tracer, processor, exporter):
        agent_run(tracer)
        processor.force_flush(5_000)
        run = by_name(exporter.get_finished_spans())["invoke_agent travel"]
    assert (run.attributes or {})["toolscore.evaluation.travel_canary_v2.pick_x.label"] == "fail"


def test_names_that_reduce_to_one_key_get_suffixes_and_no_score_overwrites_another() -> None:
    with registry_with(TRAVEL, *COLLIDING) as registry, traced(registry) as (tracer, processor, exporter):
        agent_run(tracer, tools=("book_flight",))
        assert processor.force_flush(5_000)
        run = by_name(exporter.get_finished_spans())["invoke_agent travel"]
    attributes = dict(run.attributes or {})
    labels = {key: value for key, value in attributes.items() if key.endswith(".label")}
    assert labels == {**COLLIDING_LABELS, "toolscore.evaluation.travel.trajectory.label": "fail"}
    assert attributes["toolscore.evaluation.travel_book_flight.tool_selection_6572fe.score"] == 1.0
    assert attributes["toolscore.evaluation.travel_book_flight.tool_selection_fb8cb1.score"] == 0.0
    assert len([e for e in run.events if e.name == "gen_ai.evaluation.result"]) == 6


def test_a_colliding_key_keeps_its_suffix_whatever_results_are_present_and_their_order() -> None:
    """Collisions are decided by the matched expectations' scorers: a result sampled out, or a judge's that
    comes after the span went on, does not change the other results' keys; nor does the order they came in."""
    with registry_with(*COLLIDING) as registry:
        expectations = [registry.get(doc["name"]) for doc in COLLIDING]
    run = AgentRun(agent_name="travel", calls=[ToolCall(name="book_flight")])
    results = [(exp, scorer.scorer.score(run)) for exp in expectations for scorer in exp.scorers]
    enrichments = [
        build_enrichment(RunScores(run, expectations, chosen), 0, with_events=False).attributes
        for chosen in (results, results[::-1], results[:1])
    ]
    assert enrichments[0] == enrichments[1]
    labels = {key: value for key, value in enrichments[0].items() if key.endswith(".label")}
    assert labels == {k: v for k, v in COLLIDING_LABELS.items() if "travel_book_flight" in k}
    assert enrichments[2]["toolscore.evaluation.travel_book_flight.tool_selection_6572fe.label"] == "pass"


def test_scores_are_reported_to_telemetry_with_the_run_span() -> None:
    telemetry = Recording()
    with registry_with(TRAVEL) as registry, traced(registry, telemetry=telemetry) as (tracer, processor, _):
        run = agent_run(tracer)
        processor.force_flush(5_000)
    context = run.get_span_context()
    assert [(r.name, e, v, a) for r, e, v, a, _ in telemetry.scores] == [
        ("tool_selection", "travel", 1, "travel"),
        ("trajectory", "travel", 1, "travel"),
    ]
    assert {ref for *_, ref in telemetry.scores} == {(f"{context.trace_id:032x}", f"{context.span_id:016x}", 1)}
    assert telemetry.outcomes == {"matched": 1}
    assert telemetry.counts["received"] == telemetry.counts["passed"] == 3
    assert len(telemetry.delays) == 1


class _Collecting(SpanProcessor):
    """A next processor that keeps every span it is handed, even after shutdown."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []
        self.shutdowns = 0

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)

    def shutdown(self) -> None:
        self.shutdowns += 1

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def test_shutdown_scores_pending_runs_once_and_later_spans_pass_straight_on() -> None:
    collecting = _Collecting()
    with registry_with(TRAVEL) as registry:
        config = PipelineConfig(settle_ms=60_000, max_hold_ms=60_000)
        processor = ToolscoreSpanProcessor(registry, collecting, config, Recording())
        provider = TracerProvider()
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("t")
        agent_run(tracer)
        processor.shutdown()
        processor.shutdown()
        run = by_name(collecting.spans)["invoke_agent travel"]
        assert (run.attributes or {})["toolscore.evaluation.travel.trajectory.label"] == "pass"
        assert collecting.shutdowns == 1
        assert processor.force_flush(1_000) is True
        collecting.spans.clear()
        tracer.start_span("after").end()
    assert [s.name for s in collecting.spans] == ["after"]


def test_a_span_ended_while_shutdown_runs_on_another_thread_reaches_next_once() -> None:
    """The ending thread passes the shutdown check, then shutdown drains the queue before the span is queued.

    The pause is widened by holding that thread at the engine's `offer` (which then runs as usual).
    """
    collecting = _Collecting()
    with registry_with(TRAVEL) as registry:
        processor = ToolscoreSpanProcessor(registry, collecting, PipelineConfig(settle_ms=5), Recording())
        provider = TracerProvider()
        provider.add_span_processor(processor)
        # an agent's span: the pre-filter passes a span no convention reads straight on, never to the engine
        span = provider.get_tracer("t").start_span(
            "ended during shutdown", attributes={"gen_ai.operation.name": "chat"}
        )
        offer, at_offer, resume = processor.engine.offer, threading.Event(), threading.Event()

        def held_offer(carrier: ReadableSpan) -> bool:
            at_offer.set()
            resume.wait(5)
            return offer(carrier)

        processor.engine.offer = held_offer  # type: ignore[method-assign]
        ending = threading.Thread(target=span.end)
        ending.start()
        assert at_offer.wait(5)
        processor.shutdown()  # drains the queue and stops the worker: the span is not in it yet
        resume.set()
        ending.join(5)
    assert [s.name for s in collecting.spans] == ["ended during shutdown"]
    assert len(processor.engine.intake) == 0


class _Exploding(SpanProcessor):
    def on_end(self, span: ReadableSpan) -> None:
        raise RuntimeError("exporter bug")

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def test_on_end_never_raises_even_when_next_does() -> None:
    with registry_with(TRAVEL) as registry:
        processor = ToolscoreSpanProcessor(registry, _Exploding(), PipelineConfig(settle_ms=0, queue_size=1))
        provider = TracerProvider()
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("t")
        for _ in range(50):
            agent_run(tracer)
        assert processor.force_flush(5_000)
        provider.shutdown()


def test_processor_and_config_are_exported_from_the_collector_package() -> None:
    assert toolscore.collector.ToolscoreSpanProcessor is ToolscoreSpanProcessor
    assert toolscore.collector.PipelineConfig is PipelineConfig
