"""Issue #33's evidence for the in-process processor: what it passes on, logs and measures holds no masked value.

`ToolscoreSpanProcessor` in front of an in-memory exporter, with real SDK logger and meter providers: the spans
`next` gets (the application's, and the run spans with the scores toolscore adds), the evaluation log records
and the metrics are searched byte for byte. The same runs without masking are the control.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.privacy_runs import MASKING, SECRETS, VALUES, expectation_file, record_runs
from toolscore.collector.extract import ExtractConfig
from toolscore.collector.extract.privacy import PrivacyConfig
from toolscore.collector.pipeline import PipelineConfig, ToolscoreSpanProcessor
from toolscore.collector.registry import Registry
from toolscore.collector.registry.stores import MemoryStore
from toolscore.collector.telemetry import create_telemetry


def _in_process(
    tmp_path: Path, privacy: dict[str, Any] | None
) -> tuple[dict[str, bytes], dict[tuple[int, str], Any], list[Any]]:
    """(place: bytes) of every output, the scores by (trace, attribute), and the run spans `next` got."""
    tmp_path.mkdir()
    settings = PrivacyConfig.model_validate(privacy or {})
    doc = yaml.safe_load(expectation_file(tmp_path, one_of=settings.content != "names_only").read_text())
    spans, logs, metrics = InMemorySpanExporter(), InMemoryLogRecordExporter(), InMemoryMetricReader()
    loggers = LoggerProvider()
    loggers.add_log_record_processor(SimpleLogRecordProcessor(logs))
    telemetry = create_telemetry(logger_provider=loggers, meter_provider=MeterProvider(metric_readers=[metrics]))
    config = PipelineConfig(settle_ms=20, extract=ExtractConfig(privacy=settings))
    provider = TracerProvider()
    with Registry(MemoryStore()) as registry:
        registry.put(doc)
        processor = ToolscoreSpanProcessor(registry, SimpleSpanProcessor(spans), config, telemetry)
        provider.add_span_processor(processor)
        record_runs(provider.get_tracer("privacy-test"))
        assert processor.force_flush(10_000)
        provider.shutdown()
    loggers.shutdown()
    finished = spans.get_finished_spans()
    places = {
        "spans passed on": encode_spans(finished).SerializeToString(),
        "evaluation log records": json.dumps(
            [{"body": str(d.log_record.body), **dict(d.log_record.attributes or {})} for d in logs.get_finished_logs()],
            ensure_ascii=False,
        ).encode(),
        "metrics": metrics.get_metrics_data().to_json().encode(),  # type: ignore[union-attr]
    }
    runs = sorted(
        (span for span in finished if span.name == "invoke_agent payer"), key=lambda span: span.start_time or 0
    )
    scores = {
        (i, key): value
        for i, span in enumerate(runs)  # in the order recorded: trace ids differ from one recording to the next
        for key, value in (span.attributes or {}).items()
        if key.startswith("toolscore.evaluation.") and key.endswith(".score")
    }
    assert len(scores) == 4, scores  # two runs, two scorers
    return places, scores, runs


def _holding(places: dict[str, bytes], values: tuple[str, ...]) -> dict[str, list[str]]:
    found = {place: [v for v in values if v.encode() in data] for place, data in places.items()}
    return {place: held for place, held in found.items() if held}


def test_masking_in_process_keeps_every_secret_out_of_what_it_passes_on_logs_and_measures(tmp_path: Path) -> None:
    plain, plain_scores, _ = _in_process(tmp_path / "plain", None)
    masked, masked_scores, runs = _in_process(tmp_path / "masked", MASKING)

    assert set(_holding(plain, SECRETS)) == {"spans passed on", "evaluation log records"}, "the control"
    assert _holding(masked, SECRETS) == {}
    assert masked_scores == plain_scores
    assert sorted(masked_scores.values()) == [0.0, 0.0, 1.0, 1.0]  # the other card fails equality
    assert b"\xc2\xabmasked:" in masked["spans passed on"]
    assert all(run.attributes["toolscore.tool_calls"] == ("charge",) for run in runs)


def test_names_only_in_process_leaves_no_argument_value_or_request_text_in_any_output(tmp_path: Path) -> None:
    places, scores, runs = _in_process(tmp_path / "names_only", {"content": "names_only", "hash_key": "k"})

    assert _holding(places, VALUES) == {}
    assert all(run.attributes["toolscore.tool_calls"] == ("charge",) for run in runs)  # names are kept
    assert b"gen_ai.evaluation.result" in places["spans passed on"]
    assert len(scores) == 4
