"""One tool call traced at several layers (a framework's tool span, an MCP client span, an MCP server span) is one call.

Spans from the real OTel SDK, with the attributes the MCP semantic conventions give `tools/call` spans
(semantic-conventions-genai, model/mcp): both the client and the server span are `execute_tool` spans of
the tool, with the JSON-RPC request id and the MCP session, the server's in a service of its own.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.trace import Span, SpanKind

from toolscore.collector.extract import ExtractStats, rebuild_runs
from toolscore.scorers import AgentRun

from .test_extract_support import Traces, genai_run, genai_tool, hex_id

SESSION = "8267461134f24305af708e66b8eda71a"


def mcp_call(name: str, request_id: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """A `tools/call` span's attributes, client or server side; arguments only when capture is on (opt-in)."""
    attrs: dict[str, Any] = {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "jsonrpc.request.id": request_id,
        "mcp.session.id": SESSION,
        "mcp.protocol.version": "2025-06-18",
        "network.transport": "pipe",
    }
    if args is not None:
        attrs["gen_ai.tool.call.arguments"] = json.dumps(args)
    return attrs


def through_mcp(
    agent: Traces, server: Traces, parent: Span, name: str, *, start: float, args: dict[str, Any] | None = None
) -> tuple[Span, Span]:
    """An MCP client span under `parent` and the server's span under it, in the server's own service."""
    client_span = agent.span(
        f"tools/call {name}",
        mcp_call(name, "3", args),
        parent=parent,
        start=start,
        end=start + 30,
        kind=SpanKind.CLIENT,
    )
    server_span = server.span(
        f"tools/call {name}",
        mcp_call(name, "3", args),
        parent=client_span,
        start=start + 1,
        end=start + 29,
        kind=SpanKind.SERVER,
    )
    return client_span, server_span


def _shape(runs: list[AgentRun]) -> list[tuple[str, bool, list[tuple[str, str | None, str]]]]:
    return [(r.span_id, r.inferred, [(c.name, c.call_id, c.span_id) for c in r.calls]) for r in runs]


def test_a_framework_tool_call_made_through_mcp_is_one_call_of_one_run() -> None:
    agent, server = Traces("travel-agent"), Traces("weather-mcp")
    run = agent.span("invoke_agent weather", genai_run("weather"), start=0, end=100)
    tool = agent.span("execute_tool get_weather", genai_tool("get_weather", "call_1"), parent=run, start=10, end=50)
    through_mcp(agent, server, tool, "get_weather", start=11)
    stats = ExtractStats()

    runs = rebuild_runs(agent.records() + server.records(), stats=stats)

    assert _shape(runs) == [(hex_id(run), False, [("get_weather", "call_1", hex_id(tool))])]
    assert (stats.runs, stats.inferred_runs, stats.calls) == (1, 0, 1)
    assert stats.skipped == {"tool_layer": 2}


def test_an_mcp_client_span_under_the_agent_is_the_call_and_the_server_span_a_layer_of_it() -> None:
    """The conventions' own example: an agent runs an MCP tool it does not trace itself."""
    agent, server = Traces("travel-agent"), Traces("weather-mcp")
    run = agent.span("invoke_agent weather", genai_run("weather"), start=0, end=100)
    client_span, _ = through_mcp(agent, server, run, "get_weather", start=10)
    stats = ExtractStats()

    runs = rebuild_runs(server.records() + agent.records(), stats=stats)

    assert _shape(runs) == [(hex_id(run), False, [("get_weather", None, hex_id(client_span))])]
    assert stats.skipped == {"tool_layer": 1}


@pytest.mark.parametrize(
    ("scope", "failed"),
    [("openinference.instrumentation.autogen_agentchat", True), ("openinference.instrumentation.crewai", False)],
)
def test_a_call_whose_span_cannot_show_a_failure_takes_the_failure_of_its_layer(scope: str, failed: bool) -> None:
    # openinference-instrumentation-autogen-agentchat sets its TOOL span OK before it checks the result (the SDK then
    # ignores its ERROR); AutoGen's own execute_tool span below it failed. Another instrumentation's OK span is
    # taken at its word. Either way the call takes the call id only the layer below records.
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    oi = {"openinference.span.kind": "TOOL", "tool.name": "get_weather", "input.value": '{"city": "Atlantis"}'}
    tool = t.span("a.get_weather", oi, parent=run, start=10, end=50, scope=scope)
    core = genai_tool("get_weather", "call_1", None) | {"error.type": "ToolFailure"}
    t.span("execute_tool get_weather", core, parent=tool, start=11, end=49, error="ToolFailure: unknown city")

    (result,) = rebuild_runs(t.records())

    assert [(c.name, c.args, c.call_id, c.error, c.error_type) for c in result.calls] == [
        ("get_weather", {"city": "Atlantis"}, "call_1", failed, "ToolFailure" if failed else None)
    ]


def test_a_same_named_tool_of_a_sub_agent_is_a_call_of_that_sub_agent() -> None:
    """A run span between two `search` spans: a sub-agent called `search`, not a layer of the outer call."""
    t = Traces()
    outer = t.span("invoke_agent outer", genai_run("outer"), start=0, end=100)
    search = t.span("execute_tool search", genai_tool("search"), parent=outer, start=10, end=60)
    helper = t.span("invoke_agent helper", genai_run("helper"), parent=search, start=11, end=59)
    inner = t.span("execute_tool search", genai_tool("search"), parent=helper, start=20)
    stats = ExtractStats()

    runs = rebuild_runs(t.records(), stats=stats)

    assert _shape(runs) == [
        (hex_id(outer), False, [("search", None, hex_id(search))]),
        (hex_id(helper), False, [("search", None, hex_id(inner))]),
    ]
    assert runs[1].parent_span_id == hex_id(outer)
    assert not stats.skipped


@pytest.mark.parametrize(
    ("name", "call_id"), [("search", "c_2"), ("lookup", None)], ids=["other-call-id", "other-name"]
)
def test_a_tool_under_another_named_tool_or_call_id_is_a_call_of_its_own(name: str, call_id: str | None) -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    outer = t.span("execute_tool search", genai_tool("search", "c_1"), parent=run, start=10, end=60)
    inner = t.span(f"execute_tool {name}", genai_tool(name, call_id), parent=outer, start=20)
    stats = ExtractStats()

    runs = rebuild_runs(t.records(), stats=stats)

    assert _shape(runs) == [
        (hex_id(run), False, [("search", "c_1", hex_id(outer))]),
        (hex_id(outer), True, [(name, call_id, hex_id(inner))]),  # the outer tool ran what made the call
    ]
    assert not stats.skipped


@pytest.mark.parametrize(
    ("captured", "expected"),
    [(None, ({"city": "Paris"}, "value")), ({"city": "Paris, FR"}, ({"city": "Paris, FR"}, "value"))],
    ids=["outer-not-captured", "outer-captured"],
)
def test_a_call_without_arguments_takes_those_its_mcp_server_recorded(
    captured: dict[str, Any] | None, expected: tuple[Any, str]
) -> None:
    agent, server = Traces("travel-agent"), Traces("weather-mcp")
    run = agent.span("invoke_agent weather", genai_run("weather"), start=0, end=100)
    tool = agent.span(
        "execute_tool get_weather", genai_tool("get_weather", "call_1", captured), parent=run, start=10, end=50
    )
    client_span = agent.span(
        "tools/call get_weather", mcp_call("get_weather", "3"), parent=tool, start=11, end=49, kind=SpanKind.CLIENT
    )
    server.span(
        "tools/call get_weather",
        mcp_call("get_weather", "3", {"city": "Paris"}),
        parent=client_span,
        start=12,
        end=48,
        kind=SpanKind.SERVER,
    )

    ((call,),) = [r.calls for r in rebuild_runs(agent.records() + server.records())]

    assert (call.span_id, (call.args, call.args_state)) == (hex_id(tool), expected)


def test_an_agent_run_by_an_mcp_tool_is_linked_to_the_agent_that_called_the_tool() -> None:
    agent, server = Traces("travel-agent"), Traces("helper-mcp")
    run = agent.span("invoke_agent travel", genai_run("travel"), start=0, end=100)
    _, served = through_mcp(agent, server, run, "ask_helper", start=10)
    helper = server.span("invoke_agent helper", genai_run("helper"), parent=served, start=12, end=38)
    server.span("execute_tool search", genai_tool("search", "c_s"), parent=helper, start=13)
    worker = server.span("worker", parent=served, start=14, end=37)
    server.span("execute_tool book", genai_tool("book", "c_b"), parent=worker, start=15)

    runs = {r.span_id: r for r in rebuild_runs(agent.records() + server.records())}

    assert sorted((r.agent_name, r.inferred, r.parent_span_id) for r in runs.values()) == [
        ("helper", False, hex_id(run)),
        ("travel", False, None),
        ("worker", True, hex_id(run)),
    ]
    assert [c.name for c in runs[hex_id(run)].calls] == ["ask_helper"]
