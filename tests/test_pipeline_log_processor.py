"""In process: the GenAI events openai-v2 emits as log records reach the engine through `ToolscoreLogProcessor`
on the application's SDK `LoggerProvider`, and join the chat span they were emitted in."""

from __future__ import annotations

import logging

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.openai_server import OpenAIServer
from tests.openai_v2_events import MODEL_ORDER, openai_v2, run_agent
from tests.pipeline_builders import TRAVEL, NotingRegistry, Recording, registry_with
from toolscore.collector import instrument
from toolscore.collector.pipeline import PipelineConfig, ToolscoreLogProcessor

START_ORDER = ["get_time", "get_weather"]


def _runs(*, with_logs: bool) -> tuple[list[list[str]], Recording, list[str]]:
    """Run the openai-v2 agent in a process `instrument()`ed with (or without) an SDK logger provider: the
    calls of the runs scored, the telemetry, and the event names the application's own log export got."""
    telemetry, spans, logs = Recording(), InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider = TracerProvider()
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    with registry_with(TRAVEL) as registry:
        noting = NotingRegistry(registry)
        processor = instrument(
            noting,
            tracer_provider=tracer_provider,
            exporter=spans,
            config=PipelineConfig(settle_ms=20),
            telemetry=telemetry,
            logger_provider=logger_provider if with_logs else None,
        )
        with OpenAIServer() as server, openai_v2(tracer_provider, logger_provider):
            run_agent(tracer_provider, server)
        logger_provider.get_logger("app").emit(body="a plain log line")  # not looked at
        assert processor.force_flush(5_000)
        tracer_provider.shutdown()
        logger_provider.shutdown()
    names = [record.log_record.event_name or "" for record in logs.get_finished_logs()]
    return [[call.name for call in run.calls] for run in noting.runs], telemetry, names


def test_instrument_reads_the_choice_events_the_application_emits_as_logs() -> None:
    runs, telemetry, exported = _runs(with_logs=True)
    assert runs == [MODEL_ORDER]
    assert telemetry.counts["log_records:received"] == 2  # gen_ai.user.message, gen_ai.choice
    assert exported == ["gen_ai.user.message", "gen_ai.choice", ""]  # the application's export is unchanged


def test_without_a_logger_provider_the_run_has_what_its_spans_say(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="toolscore.collector.instrumentation"):
        runs, telemetry, _ = _runs(with_logs=False)
    assert runs == [START_ORDER]
    assert telemetry.counts["log_records:received"] == 0
    assert "no SDK LoggerProvider" in caplog.text


def test_the_log_processor_never_raises_on_the_emitting_thread() -> None:
    class _Broken:
        def offer_event(self, item: object) -> bool:
            raise RuntimeError("engine gone")

    processor = ToolscoreLogProcessor(_Broken())  # type: ignore[arg-type]
    provider = LoggerProvider()
    provider.add_log_record_processor(processor)
    tracer = TracerProvider().get_tracer("t")
    with tracer.start_as_current_span("chat"):
        provider.get_logger("app").emit(event_name="gen_ai.choice", body={"index": 0})  # logged, not raised
    assert processor.force_flush() is True
    provider.shutdown()
