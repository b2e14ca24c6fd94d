"""`toolscore extract` and `toolscore eval` read OTLP logs exports beside trace files: their GenAI events join
their spans across files, so the default form's tool calls (on `gen_ai.choice` log records) are read."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.genai_log_exports import Captured, capture, otlp_json
from tests.openai_v2_events import MODEL_ORDER
from toolscore.collector.cli import main
from toolscore.collector.extract.conventions.genai import read_genai_issued
from toolscore.collector.sources import BODY_KEY, LogBatch, join_log_events, read_trace_file

START_ORDER = ["get_time", "get_weather"]
"""The tool spans' own order (same start; call ids `call_t` < `call_w`): what the spans alone give."""


@pytest.fixture(scope="module")
def captured() -> Captured:
    return capture()


def _calls(files: list[Path]) -> list[str]:
    result = CliRunner().invoke(main, ["extract", *map(str, files)])
    assert result.exit_code == 0, result.output
    runs = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(runs) == 1
    return [call["name"] for call in runs[0]["calls"]]


def test_the_choice_events_of_a_logs_file_give_the_models_order_to_extract(captured: Captured, tmp_path: Path) -> None:
    traces, logs = tmp_path / "c_parallel.pb", tmp_path / "c_parallel.logs.pb"
    traces.write_bytes(captured.traces_pb())
    logs.write_bytes(captured.logs_pb())
    assert _calls([traces]) == START_ORDER
    assert _calls([traces, logs]) == MODEL_ORDER
    assert _calls([logs, traces]) == MODEL_ORDER  # whichever file comes first


def test_logs_exports_are_read_as_otlp_json_json_lines_and_gzip(captured: Captured, tmp_path: Path) -> None:
    traces = tmp_path / "run.json"
    traces.write_text(otlp_json(ExportTraceServiceRequest.FromString(captured.traces_pb())))
    logs_json = otlp_json(ExportLogsServiceRequest.FromString(captured.logs_pb()))
    document, lines, zipped = tmp_path / "run.logs.json", tmp_path / "run.logs.jsonl", tmp_path / "run.logs.pb.gz"
    document.write_text(logs_json)
    lines.write_text(logs_json + "\n" + logs_json + "\n")  # the same records twice: joined once
    zipped.write_bytes(gzip.compress(captured.logs_pb()))
    for logs in (document, lines, zipped):
        assert _calls([traces, logs]) == MODEL_ORDER, logs.name
    mixed = tmp_path / "both.jsonl"  # JSON Lines of either signal, as one file exporter may write them
    mixed.write_text(traces.read_text() + "\n" + logs_json + "\n")
    assert _calls([mixed]) == MODEL_ORDER


def test_the_inference_span_reads_its_issued_calls_from_the_joined_choice_event(
    captured: Captured, tmp_path: Path
) -> None:
    traces, logs_file = tmp_path / "run.pb", tmp_path / "run.logs.pb"
    traces.write_bytes(captured.traces_pb())
    logs_file.write_bytes(captured.logs_pb())
    logs = LogBatch()
    spans = read_trace_file(traces, logs=logs) + read_trace_file(logs_file, logs=logs)
    assert [event.event.name for event in logs.events] == ["gen_ai.user.message", "gen_ai.choice"]
    assert join_log_events(spans, logs.events) == []
    chat = next(span for span in spans if span.attributes.get("gen_ai.operation.name") == "chat")
    assert "gen_ai.output.messages" not in chat.attributes  # the default form: nothing on the span
    choice = next(event for event in chat.events if event.name == "gen_ai.choice")
    assert choice.attributes[BODY_KEY]["finish_reason"] == "tool_calls"
    issued = read_genai_issued(chat).calls
    assert [(call.call_id, call.name, call.args) for call in issued] == [
        ("call_w", "get_weather", '{"city": "Paris"}'),
        ("call_t", "get_time", '{"zone": "CET"}'),
    ]


def test_eval_reads_logs_files_beside_traces(captured: Captured, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "c.pb").write_bytes(captured.traces_pb())
    (runs / "c.logs.pb").write_bytes(captured.logs_pb())
    expectations = tmp_path / "weather.yaml"
    expectations.write_text(
        "name: weather-in-order\n"
        "match:\n  agent: weather\n"
        "scorers:\n"
        "  - type: trajectory\n    mode: strict\n    expected:\n"
        + "".join(f"      - name: {name}\n" for name in MODEL_ORDER)
    )
    result = CliRunner().invoke(main, ["eval", "--traces", str(runs), "--expectations", str(expectations)])
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output


@pytest.mark.integration
def test_the_latest_forms_operation_details_event_gives_the_models_order(tmp_path: Path) -> None:
    """openai-v2 in the latest experimental conventions with content on events only: the chat span carries no
    messages, its `gen_ai.client.inference.operation.details` log record has `gen_ai.output.messages`."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY",
    }
    root = Path(__file__).resolve().parent.parent
    subprocess.run(
        [sys.executable, "-m", "tests.genai_log_exports", str(tmp_path)], cwd=root, env=env, check=True, timeout=120
    )
    logs = LogBatch()
    read_trace_file(tmp_path / "run.logs.pb", logs=logs)
    assert [item.event.name for item in logs.events] == ["gen_ai.client.inference.operation.details"]
    assert _calls([tmp_path / "run.pb"]) == START_ORDER
    assert _calls([tmp_path / "run.pb", tmp_path / "run.logs.pb"]) == MODEL_ORDER
