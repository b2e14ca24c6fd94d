"""`toolscore extract` as a user runs it: a real subprocess over trace files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import use_span

pytestmark = pytest.mark.integration  # every test here starts a process

TRACES = Path(__file__).parent / "testdata" / "traces"
TRUTH = Path(__file__).parent / "testdata" / "truth"
CAPTURES = sorted(p.with_suffix("") for p in TRACES.glob("*/*.pb") if not p.name.endswith(".logs.pb"))
LOGS = sorted(TRACES.glob("*/*.logs.pb"))
"""The logs exports beside some captures (their GenAI events carry the calls), given to extract with them."""
EPOCH_NS = 1_767_225_600_000_000_000
LINE_KEYS = {"trace_id", "run_span_id", "agent_name", "request", "convention", "inferred", "incomplete", "calls"}


def run_cli(*args: str) -> tuple[int, list[dict[str, Any]], str]:
    proc = subprocess.run(
        [sys.executable, "-m", "toolscore.collector.cli", "extract", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


def truth_runs(captures: list[Path]) -> dict[str, dict[str, Any]]:
    runs = {}
    for capture in captures:
        for run in json.loads((TRUTH / capture.parent.name / f"{capture.name}.truth.json").read_text())["runs"]:
            runs[run["agent_span_id"]] = run
    return runs


def neutral_calls(calls: list[dict[str, Any]], like: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Calls as a truth file writes them: `final` (the shared captures' `final_answer`, `finish`) only when set; no
    `error` where the truth call at the same place (`like`, default `calls`) says its outcome is not captured."""
    like = calls if like is None else like
    out = []
    for i, call in enumerate(calls):
        neutral = {key: call.get(key) for key in ("name", "args", "call_id", "error")}
        if i < len(like) and like[i].get("outcome_captured") is False:
            del neutral["error"]
        if call.get("final") or call.get("final_answer") or call.get("finish"):
            neutral["final"] = True
        out.append(neutral)
    return out


def test_every_capture_yields_its_truth_runs_in_stable_order() -> None:
    code, lines, stderr = run_cli(*(str(c.with_suffix(".pb")) for c in CAPTURES), *map(str, LOGS))
    assert code == 0, stderr
    truth = truth_runs(CAPTURES)
    assert {line["run_span_id"] for line in lines} == set(truth)
    for line in lines:
        assert set(line) == LINE_KEYS
        expected = truth[line["run_span_id"]]
        assert line["trace_id"] == expected["trace_id"]
        assert line["agent_name"] == expected["agent_name"]
        assert line["request"] is None or isinstance(line["request"], str)
        assert line["incomplete"] == expected.get("incomplete", False)  # flagged where the trace is not whole
        assert neutral_calls(line["calls"], like=expected["calls"]) == neutral_calls(expected["calls"])
    assert [line["trace_id"] for line in lines] == sorted(line["trace_id"] for line in lines)
    inferred = sum(
        json.loads((TRUTH / c.parent.name / f"{c.name}.truth.json").read_text()).get("inferred_runs", 0)
        for c in CAPTURES
    )
    assert sum(line["inferred"] for line in lines) == inferred
    assert f"{len(CAPTURES) + len(LOGS)} file(s)" in stderr


def test_the_summary_names_what_extraction_skipped() -> None:
    """The MCP capture's server spans are layers of the agent's calls: the summary counts them by reason."""
    mcp = TRACES.parent / "mcp" / "a_tools_through_mcp.pb"
    plain = TRACES / "pydantic-ai" / "a_single_tool.pb"
    _, _, with_layers = run_cli(str(mcp))
    _, _, without = run_cli(str(plain))
    assert with_layers.strip().endswith("1 file(s), 13 spans, 1 runs, 2 calls; skipped: tool_layer=2")
    assert "skipped" not in without


def test_json_captures_give_the_same_output_as_protobuf(tmp_path: Path) -> None:
    out = tmp_path / "runs.jsonl"
    code, lines, _ = run_cli("--output", str(out), *(str(c.with_suffix(".json")) for c in CAPTURES))
    assert code == 0
    assert lines == []
    _, from_pb, _ = run_cli(*(str(c.with_suffix(".pb")) for c in CAPTURES))
    assert [json.loads(line) for line in out.read_text().splitlines()] == from_pb


def test_two_runs_of_one_trace_come_out_in_start_order() -> None:
    capture = TRACES / "vercel-ai" / "g_two_runs_one_trace"
    code, lines, _ = run_cli(str(capture.with_suffix(".pb")))
    assert code == 0
    assert [line["agent_name"] for line in lines] == ["triage-agent", "followup-agent"]
    assert [line["convention"] for line in lines] == ["vercel_ai", "vercel_ai"]


DEFAULT_TOOLS = (("lookup", '{"id": 1}'), ("lookup", "{broken"), ("ping", None))


def write_genai_trace(path: Path, tools: tuple[tuple[str, str | None], ...] = DEFAULT_TOOLS) -> None:
    """A GenAI-convention run with parsed, raw and uncaptured arguments, made and encoded by the real SDK."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bot"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")
    root = tracer.start_span("invoke_agent bot", start_time=EPOCH_NS)
    root.set_attributes({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bot"})
    with use_span(root, end_on_exit=False):
        for i, (name, args) in enumerate(tools):
            span = tracer.start_span(f"execute_tool {name}", start_time=EPOCH_NS + 10 * (i + 1))
            span.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name})
            span.set_attribute("gen_ai.tool.call.id", f"c{i}")
            if args is not None:
                span.set_attribute("gen_ai.tool.call.arguments", args)
            span.end(end_time=EPOCH_NS + 10 * (i + 1) + 5)
    root.end(end_time=EPOCH_NS + 100)
    provider.shutdown()
    path.write_bytes(encode_spans(exporter.get_finished_spans()).SerializeToString())


def test_raw_and_uncaptured_arguments_are_marked(tmp_path: Path) -> None:
    write_genai_trace(tmp_path / "genai.pb")
    code, lines, _ = run_cli(str(tmp_path / "genai.pb"))
    assert code == 0
    (line,) = lines
    assert (line["agent_name"], line["convention"], line["inferred"]) == ("bot", "genai", False)
    assert line["calls"] == [
        {"name": "lookup", "args": {"id": 1}, "call_id": "c0", "error": False},
        {"name": "lookup", "args": "{broken", "args_raw": True, "call_id": "c1", "error": False},
        {"name": "ping", "args_captured": False, "call_id": "c2", "error": False},
    ]


def test_arguments_nested_deeper_than_the_encoder_goes_are_written_raw(tmp_path: Path) -> None:
    """1,000 levels decode (orjson), but writing the line back failed with a RecursionError traceback."""
    deep = "[" * 1_000 + "]" * 1_000
    write_genai_trace(tmp_path / "deep.pb", (("lookup", deep), ("ping", '{"n": 1}')))
    code, lines, stderr = run_cli(str(tmp_path / "deep.pb"))
    assert code == 0, stderr
    (line,) = lines
    assert [(call["args"], call.get("args_raw", False)) for call in line["calls"]] == [(deep, True), ({"n": 1}, False)]


def test_a_bad_file_is_reported_and_the_good_ones_still_extracted(tmp_path: Path) -> None:
    good = TRACES / "pydantic-ai" / "a_single_tool.pb"
    cut = tmp_path / "cut.pb"
    cut.write_bytes((TRACES / "vercel-ai" / "a_single_tool.pb").read_bytes()[:300])
    lines_file = tmp_path / "export.jsonl"
    doc = json.loads((TRACES / "openai-agents" / "a_single_tool.json").read_text())
    lines_file.write_text("{oops\n" + json.dumps(doc) + "\n")
    missing = tmp_path / "missing.pb"
    code, lines, stderr = run_cli(str(good), str(cut), str(lines_file), str(missing))
    assert code == 1
    truth = truth_runs([good.with_suffix(""), TRACES / "openai-agents" / "a_single_tool"])
    assert sorted(line["run_span_id"] for line in lines) == sorted(truth)
    assert f"{cut}: byte 1: " in stderr
    assert f"{lines_file}: line 1: invalid JSON" in stderr
    assert f"{missing}: No such file" in stderr
    assert str(good) + ":" not in stderr


def test_calls_seen_only_in_the_model_output_say_so() -> None:
    code, lines, stderr = run_cli(str(TRACES / "openai-v2-latest" / "c_parallel.json"))

    assert code == 0, stderr
    (line,) = lines
    assert [(c["name"], c.get("model_only")) for c in line["calls"]] == [
        ("get_weather", True),
        ("get_time", True),
        ("get_stock_price", True),
    ]
    pydantic = run_cli(str(TRACES / "pydantic-ai" / "c_parallel.pb"))[1]
    assert all("model_only" not in call for run in pydantic for call in run["calls"])
