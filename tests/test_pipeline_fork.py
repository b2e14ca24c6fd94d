"""The in-process processor across `os.fork()`, as gunicorn `--preload`, Celery prefork and uWSGI use it.

Each test forks the real test process (`tests.forking`).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider

from tests.forking import FORK_MARKS, in_child
from tests.metric_reader import meters
from tests.openai_server import OpenAIServer
from tests.pipeline_builders import TRAVEL, agent_run, by_name, registry_with, traced
from tests.test_pipeline_judge import end_run, judged, verdict
from toolscore.collector.pipeline import PipelineConfig, ToolscoreSpanProcessor

pytestmark = [*FORK_MARKS, pytest.mark.integration]


def _summary(spans: tuple[ReadableSpan, ...]) -> dict[str, dict[str, Any]]:
    return {
        span.name: {key: list(v) if isinstance(v, tuple) else v for key, v in (span.attributes or {}).items()}
        for span in spans
    }


def test_a_forked_child_scores_its_own_runs() -> None:
    with registry_with(TRAVEL) as registry, traced(registry) as (tracer, processor, exporter):
        agent_run(tracer)
        assert processor.force_flush(5_000)
        exporter.clear()

        def child() -> Any:
            agent_run(tracer, tools=("search_flights",))
            flushed = processor.force_flush(5_000)
            return {"flushed": flushed, "spans": _summary(exporter.get_finished_spans())}

        seen = in_child(child)
    assert seen["flushed"] is True
    run = seen["spans"]["invoke_agent travel"]
    assert run["toolscore.expectations"] == ["travel"]
    assert run["toolscore.tool_calls"] == ["search_flights"]
    assert run["toolscore.evaluation.travel.tool_selection.label"] == "fail"
    assert set(seen["spans"]) == {"invoke_agent travel", "execute_tool search_flights"}


def test_runs_pending_at_the_fork_go_out_once_from_the_parent() -> None:
    config = PipelineConfig(settle_ms=60_000, max_hold_ms=60_000)
    with registry_with(TRAVEL) as registry, traced(registry, config) as (tracer, processor, exporter):
        agent_run(tracer)  # its run span is held: the run settles only in a minute

        def child() -> Any:
            flushed = processor.force_flush(5_000)
            return {"flushed": flushed, "names": [span.name for span in exporter.get_finished_spans()]}

        seen = in_child(child)
        assert processor.force_flush(5_000)
        parent = exporter.get_finished_spans()
    assert seen["flushed"] is True
    assert "invoke_agent travel" not in seen["names"], "the child passed on the parent's held run span"
    run = by_name(parent)["invoke_agent travel"]
    assert (run.attributes or {})["toolscore.evaluation.travel.trajectory.label"] == "pass"
    assert [span.name for span in parent].count("invoke_agent travel") == 1


class _SlowNext(SpanProcessor):
    """Sleeps in the first `on_end` the worker makes, to fork while the worker is mid-step."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.left = threading.Event()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        if not self.entered.is_set():
            self.entered.set()
            time.sleep(0.3)
            self.left.set()


def test_fork_waits_for_the_worker_to_finish_its_step() -> None:
    with registry_with(TRAVEL) as registry:
        slow = _SlowNext()
        processor = ToolscoreSpanProcessor(registry, slow, PipelineConfig(settle_ms=20))
        try:
            provider = TracerProvider()
            provider.add_span_processor(processor)
            tracer = provider.get_tracer("toolscore-tests")
            agent_run(tracer)
            assert slow.entered.wait(5)
            seen = in_child(lambda: {"left": slow.left.is_set(), "flushed": processor.force_flush(5_000)})
        finally:
            processor.shutdown()
    assert seen == {"left": True, "flushed": True}


def test_a_processor_shut_down_before_the_fork_stays_shut_down_in_the_child() -> None:
    with registry_with(TRAVEL) as registry, traced(registry) as (tracer, processor, _):
        processor.shutdown()

        def child() -> Any:
            started = time.monotonic()
            flushed = processor.force_flush(5_000)
            agent_run(tracer)  # goes straight to `next` (itself shut down), never queued
            return {
                "flushed": flushed,
                "flush_s": time.monotonic() - started,
                "threads": [t.name for t in threading.enumerate()],
                "queued": len(processor.engine.intake),
            }

        seen = in_child(child)
    assert seen == {"flushed": True, "flush_s": seen["flush_s"], "threads": seen["threads"], "queued": 0}
    assert seen["flush_s"] < 1.0
    assert "toolscore-pipeline" not in seen["threads"]


def test_the_child_counts_only_its_own_runs() -> None:
    with (
        meters() as m,
        registry_with(TRAVEL) as registry,
        traced(registry, telemetry=m.telemetry) as (tracer, processor, _),
    ):
        agent_run(tracer)
        agent_run(tracer)
        agent_run(tracer)  # scored, its count summed by toolscore but not yet collected by the SDK
        assert processor.force_flush(5_000)

        def child() -> Any:
            agent_run(tracer)
            processor.force_flush(5_000)
            return m.by("toolscore.runs", "toolscore.run.outcome")

        seen_in_child = in_child(child)
        in_parent = m.by("toolscore.runs", "toolscore.run.outcome")
    assert in_parent == {"matched": 3}
    assert seen_in_child == {"matched": 1}, "the child reported the parent's runs as its own"


def test_a_forked_child_runs_its_own_judge(openai_server: OpenAIServer) -> None:
    openai_server.push(verdict("search_flights", "book_flight"), verdict("book_flight"))
    with registry_with(judged(openai_server)) as registry, traced(registry) as (tracer, processor, exporter):
        end_run(tracer)  # the parent's judge loop, and litellm's clients on it, exist before the fork
        assert processor.force_flush(10_000)
        exporter.clear()

        def child() -> Any:
            end_run(tracer, ("book_flight",))  # another run: not the judge's cached verdict
            flushed = processor.force_flush(10_000)
            return {"flushed": flushed, "run": _summary(exporter.get_finished_spans())["invoke_agent travel"]}

        seen = in_child(child)
    assert seen["flushed"] is True
    assert seen["run"]["toolscore.evaluation.travel.llm_judge.score"] == 1.0
    assert len(openai_server.requests) == 2, "the child's judge never asked the model"
