"""The run's tool catalog (`AgentRun.available_tools`): every shape the conventions record, union, bounds, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolscore.collector.extract import ExtractConfig, ExtractStats, rebuild_runs
from toolscore.collector.sources import read_trace_file
from toolscore.scorers import AgentRun, ToolSpec

from .test_extract_support import Traces, genai_run, genai_tool

TESTDATA = Path(__file__).parent / "testdata"
TRACES = TESTDATA / "traces"
KIND = "openinference.span.kind"
ADK_WEATHER_DOC = (
    'Get the current weather for a city.\n\nArgs:\n    city: The city name, for example "Paris".\n'
    '    unit: The temperature unit, "celsius" or "fahrenheit".'
)
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def _tools(run: AgentRun) -> list[tuple[str, str | None, list[str] | None]]:
    return [
        (t.name, t.description, None if t.parameters is None else sorted(t.parameters.get("properties", {})))
        for t in run.available_tools
    ]


def _only_run(path: Path) -> AgentRun:
    (run,) = rebuild_runs(read_trace_file(path))
    return run


@pytest.mark.parametrize(
    ("capture", "expected"),
    [
        ("pydantic-ai/a_single_tool", [("get_weather", "Current weather for a city.", ["city", "unit"])]),
        ("openai-agents/a_single_tool", [("get_weather", "Current weather for a city.", ["city", "unit"])]),
        ("crewai/a_single_tool", [("get_weather", "Current weather for a city.", ["city", "unit"])]),
        (
            "smolagents/a_single_tool",  # names on the run span, filled in by the model span's definitions
            [
                ("get_weather", "Current weather for a city.", ["city", "unit"]),
                ("final_answer", "Provides a final answer to the given problem.", ["answer"]),
            ],
        ),
        ("openai-v2-latest/c_parallel", []),
        (  # ADK: gen_ai.tool.definitions on its generate_content spans, the whole docstring as description
            "adk/a_single_tool",
            [("get_weather", ADK_WEATHER_DOC, ["city", "unit"])],
        ),
        # ADK schema v1: the function declarations of call_llm's gcp.vertex.agent.llm_request
        ("adk-legacy/a_single_tool", [("get_weather", ADK_WEATHER_DOC, ["city", "unit"])]),
        # Strands default: names on the run span, description and schema from the tool span
        ("strands/a_single_tool", [("get_weather", "Get the current weather for a city.", ["city", "unit"])]),
        # Strands opt-in definitions: the schema inside Bedrock's `inputSchema: {"json": ...}`
        ("strands-latest/a_single_tool", [("get_weather", "Get the current weather for a city.", ["city", "unit"])]),
        # Mastra: names on the run span (`gen_ai.tool.definitions`), descriptions from the tool spans, no schema
        ("mastra/a_single_tool", [("get_weather", "Get the current weather for a city.", None)]),
        ("mastra/d_no_tool", [("get_weather", None, None)]),
    ],
)
def test_captures_give_the_tools_their_model_was_offered(capture: str, expected: list[Any]) -> None:
    assert _tools(_only_run(TRACES / f"{capture}.pb")) == expected


def test_vercel_definitions_read_their_input_schema_and_mcp_tools_have_no_description() -> None:
    vercel = _only_run(TRACES / "vercel-ai" / "a_single_tool.pb")
    mcp = _only_run(TESTDATA / "mcp" / "a_tools_through_mcp.pb")

    assert _tools(vercel)[:2] == [
        ("get_weather", "Get the current weather for a city", ["city", "unit"]),
        ("get_time", "Get the current time in a timezone", ["tz"]),
    ]
    assert len(vercel.available_tools) == 7
    assert _tools(mcp) == [("get_weather", None, ["city"]), ("get_time", None, ["timezone"])]


def test_openai_nested_definitions_and_later_duplicates_keep_the_first_definition() -> None:
    t = Traces()
    run_attrs = {**genai_run("a"), "gen_ai.tool.definitions": json.dumps([{"name": "w", "description": "run's"}])}
    run = t.span("invoke_agent a", run_attrs, start=0, end=100)
    later = [{"type": "function", "name": "z", "description": "z"}]
    first = [
        {"type": "function", "function": {"name": "w", "description": "model's", "parameters": WEATHER}},
        {"type": "function", "function": {"name": "v", "description": "v", "parameters": WEATHER}},
    ]
    t.span("chat", {"gen_ai.operation.name": "chat", "gen_ai.tool.definitions": json.dumps(later)}, parent=run, start=9)
    t.span("chat", {"gen_ai.operation.name": "chat", "gen_ai.tool.definitions": json.dumps(first)}, parent=run, start=2)

    (built,) = rebuild_runs(t.records())

    assert _tools(built) == [("w", "run's", None), ("v", "v", ["city"]), ("z", "z", None)]


def test_vercel_prompt_tools_openllmetry_functions_and_strands_names() -> None:
    t = Traces()
    run = t.span("ai.generateText", {"ai.operationId": "ai.generateText"}, start=0, end=10, scope="ai")
    prompt_tools = [json.dumps({"type": "function", "name": "w", "description": "d", "parameters": WEATHER})]
    model = {"ai.operationId": "ai.generateText.doGenerate", "ai.prompt.tools": prompt_tools}
    t.span("ai.generateText.doGenerate", model, parent=run, start=1, scope="ai")
    agent = t.span("agent", {"traceloop.span.kind": "agent", "traceloop.entity.name": "ol"}, start=20, end=30)
    functions = {
        "llm.request.type": "chat",
        "llm.request.functions.0.name": "w",
        "llm.request.functions.0.description": "weather",
        "llm.request.functions.0.parameters": json.dumps(WEATHER),
        "llm.request.functions.1.name": "v",
    }
    t.span("openai.chat", functions, parent=agent, start=21)
    strands = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.tools": json.dumps(["w", "v"])}
    t.span("invoke_agent s", strands, start=40, end=50, scope="strands.telemetry.tracer")

    runs = {r.convention: _tools(r) for r in rebuild_runs(t.records())}

    assert runs == {
        "vercel_ai": [("w", "d", ["city"])],
        "traceloop": [("w", "weather", ["city"]), ("v", None, None)],
        "strands": [("w", None, None), ("v", None, None)],
    }


def test_pydantic_request_parameters_stand_in_for_missing_definitions() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=10, scope="pydantic-ai")
    function_tools = [{"name": "w", "description": "d", "parameters_json_schema": WEATHER}]
    params = {"function_tools": function_tools, "output_tools": []}
    chat = {"gen_ai.operation.name": "chat", "model_request_parameters": json.dumps(params)}
    t.span("chat m", chat, parent=run, start=1, scope="pydantic-ai")

    (built,) = rebuild_runs(t.records())

    assert _tools(built) == [("w", "d", ["city"])]


def test_tool_spans_describe_the_tools_the_catalog_lacks() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    offered = {"gen_ai.operation.name": "chat", "gen_ai.tool.definitions": json.dumps([{"name": "w"}])}
    t.span("chat", offered, parent=run, start=1)
    t.span("execute_tool w", {**genai_tool("w", "c1"), "gen_ai.tool.description": "weather"}, parent=run, start=2)
    t.span("execute_tool v", {**genai_tool("v", "c2"), "gen_ai.tool.description": "first v"}, parent=run, start=3)
    t.span("execute_tool v", {**genai_tool("v", "c3"), "gen_ai.tool.description": "second v"}, parent=run, start=4)
    t.span("execute_tool u", genai_tool("u", "c4"), parent=run, start=5)
    agent = t.span("triage", {KIND: "AGENT", "agent.name": "triage"}, start=200, end=300)
    oi_tool = {KIND: "TOOL", "tool.name": "x", "tool.description": "x does", "tool.parameters": json.dumps(WEATHER)}
    t.span("x", oi_tool, parent=agent, start=201)
    old_args = {KIND: "TOOL", "tool.name": "y", "tool.parameters": json.dumps({"city": "Oslo"})}  # arguments, no schema
    t.span("y", old_args, parent=agent, start=202)

    runs = {r.agent_name: _tools(r) for r in rebuild_runs(t.records())}

    assert runs == {"a": [("w", "weather", None), ("v", "first v", None)], "triage": [("x", "x does", ["city"])]}


def test_malformed_definitions_are_skipped_and_counted_never_raising() -> None:
    t = Traces()
    run = t.span("invoke_agent a", {**genai_run("a"), "gen_ai.tool.definitions": "not json ["}, start=0, end=100)
    bad = [
        "{broken",
        42,
        {"description": "no name"},
        {"name": 7},
        {"name": "d", "description": ["not", "text"]},
        {"name": "p", "parameters": "not json"},
        {"name": "q", "parameters": [1, 2]},
        {"name": "ok", "parameters": json.dumps(WEATHER)},
    ]
    t.span("chat", {"gen_ai.operation.name": "chat", "gen_ai.tool.definitions": json.dumps(bad)}, parent=run, start=1)
    t.span("chat", {"gen_ai.operation.name": "chat", "gen_ai.tool.definitions": '{"name": "x"}'}, parent=run, start=2)
    t.span("chat", {"gen_ai.operation.name": "chat", "gen_ai.tool.definitions": 3}, parent=run, start=3)
    stats = ExtractStats()

    (built,) = rebuild_runs(t.records(), stats=stats)

    assert _tools(built) == [("ok", None, ["city"])]
    assert stats.skipped["tool_definition_malformed"] == 10


def test_each_definition_and_the_whole_catalog_stay_within_max_attribute_bytes() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    definitions = [
        {"name": "big", "parameters": WEATHER},  # its schema alone is over the bound: left out
        {"name": "aaaa", "description": "é" * 30, "parameters": {"type": "object"}},  # description cut to fit
        {"name": "b"},  # nothing is left: this tool and every later one are left out
        {"name": "c", "description": "x"},
        {"name": "d"},
    ]
    chat = {"gen_ai.operation.name": "chat", "gen_ai.tool.definitions": json.dumps(definitions)}
    t.span("chat", chat, parent=run, start=1)
    stats = ExtractStats()

    (built,) = rebuild_runs(t.records(), ExtractConfig(max_attribute_bytes=40), stats)

    assert [(t.name, t.description, t.parameters) for t in built.available_tools] == [
        ("big", None, None),
        ("aaaa", "é" * 8, {"type": "object"}),  # 3 + 4 + 17 (compact schema) + 16 bytes: 40
    ]
    assert stats.tool_specs_cut == 5  # every definition: cut, or left out


def test_tool_span_descriptions_alone_are_bounded_as_definitions_are() -> None:
    # Only tool spans describe the tools (GenAI `gen_ai.tool.description`), as most traces do: kept whole while
    # they fit in bytes, though not in 4 bytes a character, then cut and counted as definitions would be.
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    for start, (name, description) in enumerate([("w", "weather"), ("v", "v" * 20), ("w", "again"), ("u", "x" * 30)]):
        attrs = {**genai_tool(name, f"c{start}"), "gen_ai.tool.description": description}
        t.span(f"execute_tool {name}", attrs, parent=run, start=start + 1)
    stats = ExtractStats()

    (built,) = rebuild_runs(t.records(), ExtractConfig(max_attribute_bytes=40), stats)

    assert [(t.name, t.description, t.parameters) for t in built.available_tools] == [
        ("w", "weather", None),
        ("v", "v" * 20, None),
        ("u", "x" * 10, None),  # 1 + 7 + 1 + 20 + 1 bytes before it: 10 left
    ]
    assert stats.tool_specs_cut == 1


def test_tool_specs_are_exported_frozen_and_built_as_validated() -> None:
    (built,) = rebuild_runs(read_trace_file(TRACES / "pydantic-ai" / "a_single_tool.pb"))
    spec = built.available_tools[0]

    validated = ToolSpec(name=spec.name, description=spec.description, parameters=spec.parameters)
    assert spec == validated
    assert spec.model_fields_set == validated.model_fields_set
    assert spec.model_dump_json() == validated.model_dump_json()
    assert AgentRun(**built.model_dump()).available_tools == built.available_tools
    with pytest.raises(ValueError, match="frozen"):
        spec.name = "other"  # type: ignore[misc]
