"""Logfire's OpenAI Agents SDK spans (`logfire.instrument_openai_agents()`), one test per reading rule.

The spans are built as Logfire 5.4 writes them (tests/captures/openai-agents-logfire/NOTES.md): span name =
message template, the SDK's span data as attributes, objects as JSON text; real captures are in
tests/testdata/traces/openai-agents-logfire*/. Parallel calls start together and in another order than the
model's, so only the model span can order them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.trace import Span

from toolscore.collector.extract import ExtractStats, rebuild_runs
from toolscore.collector.extract.conventions import Role, classify
from toolscore.collector.spans import SpanRecord
from toolscore.scorers import AgentRun

from .test_extract_support import Traces

SCOPE = "logfire.openai_agents"
NULL_SCHEMA = '{"type":"object","properties":{"name":{},"input":{"type":"null"},"output":{"type":"null"}}}'


def _run(name: str) -> dict[str, Any]:
    return {
        "logfire.msg_template": "Agent run: {name!r}",
        "logfire.msg": f"Agent run: {name!r}",
        "logfire.span_type": "span",
        "name": name,
        "handoffs": "[]",
        "tools": '["get_weather", "get_time"]',
        "output_type": "str",
        "gen_ai.system": "openai",
    }


def _tool(name: str, args: Any, output: str = "ok") -> dict[str, Any]:
    return {
        "logfire.msg_template": "Function: {name}",
        "logfire.msg": f"Function: {name}",
        "name": name,
        "input": args if isinstance(args, str) else json.dumps(args),
        "output": output,
        "mcp_data": "null",
        "gen_ai.system": "openai",
    }


def _responses(*calls: tuple[str, str, dict[str, Any]], text: str | None = None) -> dict[str, Any]:
    """A `Responses API` span whose response lists `(call_id, name, args)` function calls, in this order."""
    output: list[dict[str, Any]] = [
        {"arguments": json.dumps(a), "call_id": cid, "name": n, "type": "function_call", "id": f"fc_{cid}"}
        for cid, n, a in calls
    ]
    if text is not None:
        output.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
    response = {"id": "resp_1", "object": "response", "output": output, "tools": []}
    return {
        "logfire.msg_template": "Responses API with {gen_ai.request.model!r}",
        "logfire.msg": "Responses API with 'gpt'",
        "gen_ai.request.model": "gpt",
        "gen_ai.operation.name": "chat",
        "gen_ai.system": "openai",
        "response": json.dumps(response),
    }


def _chat(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """A `Chat completion` span whose message lists `(call_id, name, args)` tool calls, in this order."""
    tool_calls = [
        {"id": cid, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for cid, n, a in calls
    ]
    message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
    return {
        "logfire.msg_template": "Chat completion with {gen_ai.request.model!r}",
        "logfire.msg": "Chat completion with 'gpt'",
        "gen_ai.request.model": "gpt",
        "gen_ai.system": "openai",
        "output": json.dumps([message]),
    }


def _calls(run: AgentRun) -> list[tuple[str, Any, str | None, bool]]:
    return [(c.name, c.args, c.call_id, c.error) for c in run.calls]


def _sdk_run(t: Traces, name: str = "weather_agent") -> tuple[Span, Span]:
    """The SDK trace's span, its task span and the agent's run span, with a first turn span: (task, turn)."""
    root = t.span("OpenAI Agents trace: {name}", {"name": "Agent workflow"}, start=0, end=100, scope=SCOPE)
    task = {"logfire.msg_template": "Task: Agent workflow", "sdk_span_type": "task", "gen_ai.system": "openai"}
    task_span = t.span("Task: Agent workflow", task, parent=root, start=0, end=99, scope=SCOPE)
    run = t.span("Agent run: {name!r}", _run(name), parent=task_span, start=1, end=98, scope=SCOPE)
    turn = {"logfire.msg_template": f"Turn {{turn}} for agent {name}", "turn": 1, "agent_name": name}
    return task_span, t.span(f"Turn {{turn}} for agent {name}", turn, parent=run, start=2, end=97, scope=SCOPE)


PARALLEL = (("call_2", "get_weather", {"city": "Oslo"}), ("call_1", "get_time", {"timezone": "Europe/Oslo"}))


@pytest.mark.parametrize("model", ["responses", "chat"])
def test_call_ids_and_the_models_order_come_from_the_model_span(model: str) -> None:
    t = Traces()
    _, turn = _sdk_run(t)
    t.span("m", _responses(*PARALLEL) if model == "responses" else _chat(*PARALLEL), parent=turn, start=3, scope=SCOPE)
    t.span("Function: {name}", _tool("get_time", {"timezone": "Europe/Oslo"}), parent=turn, start=10, scope=SCOPE)
    t.span("Function: {name}", _tool("get_weather", {"city": "Oslo"}), parent=turn, start=10, scope=SCOPE)

    (run,) = rebuild_runs(t.records())

    assert (run.agent_name, run.convention, run.inferred) == ("weather_agent", "logfire_openai_agents", False)
    assert _calls(run) == [
        ("get_weather", {"city": "Oslo"}, "call_2", False),
        ("get_time", {"timezone": "Europe/Oslo"}, "call_1", False),
    ]


def test_a_streamed_chat_completion_lists_its_calls_as_the_response_the_sdk_built() -> None:
    t = Traces()
    _, turn = _sdk_run(t)
    response = json.loads(_responses(*PARALLEL)["response"])
    generation = {**_chat(), "output": json.dumps([response])}
    t.span("Chat completion with {gen_ai.request.model!r}", generation, parent=turn, start=3, scope=SCOPE)
    t.span("Function: {name}", _tool("get_time", {"timezone": "Europe/Oslo"}), parent=turn, start=10, scope=SCOPE)
    t.span("Function: {name}", _tool("get_weather", {"city": "Oslo"}), parent=turn, start=10, scope=SCOPE)

    (run,) = rebuild_runs(t.records())

    assert [(c.name, c.call_id) for c in run.calls] == [("get_weather", "call_2"), ("get_time", "call_1")]


def test_the_kind_is_the_message_template_whatever_the_span_name() -> None:
    """Some Logfire versions name a response span `chat <model>` (and add gen_ai.output.messages): the template
    still says what it is."""
    t = Traces()
    _, turn = _sdk_run(t)
    parts = [{"type": "tool_call", "id": cid, "name": n, "arguments": a} for cid, n, a in PARALLEL]
    response = {
        "logfire.msg_template": "Responses API with {gen_ai.request.model!r}",
        "gen_ai.operation.name": "chat",
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
    }
    t.span("chat gpt", response, parent=turn, start=3, scope=SCOPE)
    t.span("Function: {name}", _tool("get_time", {"timezone": "Europe/Oslo"}), parent=turn, start=10, scope=SCOPE)
    t.span("Function: {name}", _tool("get_weather", {"city": "Oslo"}), parent=turn, start=10, scope=SCOPE)

    (run,) = rebuild_runs(t.records())

    assert [(c.name, c.call_id) for c in run.calls] == [("get_weather", "call_2"), ("get_time", "call_1")]


def _record(name: str, attrs: dict[str, Any], scope: str = SCOPE) -> SpanRecord:
    return SpanRecord(trace_id="1" * 32, span_id="2" * 16, parent_id=None, name=name, attributes=attrs, scope=scope)


@pytest.mark.parametrize(
    ("template", "role"),
    [
        ("Agent run: {name!r}", Role.RUN),
        ("Function: {name}", Role.TOOL),
        ("Handoff: {from_agent} → {to_agent}", Role.TOOL),
        ("Responses API", Role.LLM),
        ("Responses API with {gen_ai.request.model!r}", Role.LLM),
        ("Chat completion with {gen_ai.request.model!r}", Role.LLM),
        ("OpenAI Agents trace: {name}", Role.OTHER),
        ("Task: Agent workflow", Role.OTHER),
        ("Turn {turn} for agent weather_agent", Role.OTHER),
        ("Guardrail {name!r} {triggered=}", Role.OTHER),
        ("MCP: list tools from server {server}", Role.OTHER),
        ("Custom span: {name}", Role.OTHER),
    ],
)
def test_every_span_of_the_scope_is_classified_by_its_template(template: str, role: Role) -> None:
    by_attribute = classify(_record("renamed", {"logfire.msg_template": template, "gen_ai.operation.name": "chat"}))
    by_name = classify(_record(template, {}))

    assert by_attribute is not None
    assert by_name is not None
    assert (by_attribute[0].name, by_attribute[1]) == ("logfire_openai_agents", role)
    assert (by_name[0].name, by_name[1]) == ("logfire_openai_agents", role)


def test_the_same_templates_in_another_scope_are_not_this_convention() -> None:
    found = classify(_record("Function: {name}", {"logfire.msg_template": "Function: {name}", "name": "x"}, "app"))

    assert found is None or found[0].name != "logfire_openai_agents"


def test_a_handoff_is_named_and_given_its_arguments_by_the_model_span() -> None:
    t = Traces()
    task, turn = _sdk_run(t, "triage_agent")
    t.span("Responses API", _responses(("call_h", "transfer_to_billing", {})), parent=turn, start=3, scope=SCOPE)
    handoff = {
        "logfire.msg_template": "Handoff: {from_agent} → {to_agent}",
        "from_agent": "triage_agent",
        "to_agent": "billing",
    }
    t.span("Handoff: {from_agent} → {to_agent}", handoff, parent=turn, start=10, scope=SCOPE)
    t.span("Agent run: {name!r}", _run("billing"), parent=task, start=98.2, end=98.8, scope=SCOPE)

    first, billing = sorted(rebuild_runs(t.records()), key=lambda r: r.start_ns or 0)

    assert _calls(first) == [("transfer_to_billing", {}, "call_h", False)]
    assert (billing.agent_name, billing.calls) == ("billing", ())


def test_arguments_are_not_captured_when_the_sdk_leaves_sensitive_data_out() -> None:
    """`trace_include_sensitive_data=False`: `input` is None (Logfire writes `null`) and the response is not
    recorded, so the call has its name only; nothing is taken from elsewhere."""
    t = Traces()
    _, turn = _sdk_run(t)
    t.span("Responses API", {"logfire.msg_template": "Responses API", "response_id": "null"}, parent=turn, scope=SCOPE)
    tool = {**_tool("get_weather", "null"), "output": "null", "logfire.json_schema": NULL_SCHEMA}
    t.span("Function: {name}", tool, parent=turn, start=10, scope=SCOPE)

    (run,) = rebuild_runs(t.records())

    assert [(c.name, c.args_state, c.call_id) for c in run.calls] == [("get_weather", "not_captured", None)]


def test_a_null_string_argument_without_the_null_schema_is_kept() -> None:
    t = Traces()
    _, turn = _sdk_run(t)
    t.span("Function: {name}", _tool("ping", "null"), parent=turn, start=10, scope=SCOPE)

    (run,) = rebuild_runs(t.records())

    assert [(c.args, c.args_state) for c in run.calls] == [(None, "value")]


def test_a_tool_the_sdk_reports_failed_is_an_error() -> None:
    """The SDK's default tool-error handler answers the model and marks the span failed (`error`, status ERROR)."""
    t = Traces()
    _, turn = _sdk_run(t)
    failed = {
        **_tool("get_weather", {"city": "Atlantis"}, "An error occurred while running the tool."),
        "logfire.msg": "Function: get_weather failed: Error running tool (non-fatal)",
        "logfire.level_num": 17,
        "error": json.dumps({"message": "Error running tool (non-fatal)", "data": {"tool_name": "get_weather"}}),
    }
    t.span("Function: {name}", failed, parent=turn, start=10, scope=SCOPE, error="Error running tool (non-fatal)")
    t.span("Function: {name}", {**failed, "logfire.msg": "Function: get_weather"}, parent=turn, start=20, scope=SCOPE)

    (run,) = rebuild_runs(t.records())

    assert [(c.error, c.error_type) for c in run.calls] == [(True, "_OTHER"), (True, "_OTHER")]


def _scrubbed(*paths: list[Any]) -> str:
    return json.dumps([{"path": path, "matched_substring": "session"} for path in paths])


def test_a_scrubbed_tool_name_is_read_from_the_message_and_the_scrubbed_model_name_not_used() -> None:
    """Logfire's scrubber rewrites `get_session` (it holds `session`) in the tool span and in the response;
    `logfire.msg` keeps it."""
    t = Traces()
    _, turn = _sdk_run(t)
    mark = "[Scrubbed due to 'session']"
    response = _responses(("call_1", mark, {"id": 7}))
    response["logfire.scrubbed"] = _scrubbed(["attributes", "response", "output", 0, "name"])
    t.span("Responses API", response, parent=turn, start=3, scope=SCOPE)
    tool = {
        **_tool(mark, {"id": 7}),
        "logfire.msg": "Function: get_session failed: Error running tool (non-fatal)",
        "error": '{"message": "Error running tool (non-fatal)"}',
        "logfire.scrubbed": _scrubbed(["message", "name"], ["attributes", "name"]),
    }
    t.span("Function: {name}", tool, parent=turn, start=10, scope=SCOPE)

    (run,) = rebuild_runs(t.records())

    assert [(c.name, c.args, c.error) for c in run.calls] == [("get_session", {"id": 7}, True)]


def test_arguments_with_a_scrubbed_part_are_not_captured_nor_taken_from_the_scrubbed_response() -> None:
    t = Traces()
    _, turn = _sdk_run(t)
    args = {"user": "ann", "session_id": "[Scrubbed due to 'session']"}
    response = _responses(("call_1", "lookup", args))
    response["logfire.scrubbed"] = _scrubbed(["attributes", "response", "output", 0, "arguments", "session_id"])
    t.span("Responses API", response, parent=turn, start=3, scope=SCOPE)
    tool = {**_tool("lookup", args), "logfire.scrubbed": _scrubbed(["attributes", "input", "session_id"])}
    t.span("Function: {name}", tool, parent=turn, start=10, scope=SCOPE)

    (run,) = rebuild_runs(t.records())

    assert [(c.name, c.args_state, c.call_id) for c in run.calls] == [("lookup", "not_captured", "call_1")]


def test_a_scrubbed_call_id_is_no_call_id_and_makes_no_call_of_its_own() -> None:
    t = Traces()
    _, turn = _sdk_run(t)
    response = _responses(("call_[Scrubbed due to 'jwt']", "get_weather", {"city": "Oslo"}))
    response["logfire.scrubbed"] = _scrubbed(["attributes", "response", "output", 0, "call_id"])
    t.span("Responses API", response, parent=turn, start=3, scope=SCOPE)
    t.span("Function: {name}", _tool("get_weather", {"city": "Oslo"}), parent=turn, start=10, scope=SCOPE)
    stats = ExtractStats()

    (run,) = rebuild_runs(t.records(), stats=stats)

    assert _calls(run) == [("get_weather", {"city": "Oslo"}, None, False)]
    assert stats.skipped == {}


def test_a_scrubbed_agent_name_is_read_from_the_message() -> None:
    t = Traces()
    run_attrs = {
        **_run("[Scrubbed due to 'secret']"),
        "logfire.msg": 'Agent run: "secret_keeper\'s agent" failed: Max turns exceeded',
        "logfire.scrubbed": _scrubbed(["attributes", "name"]),
    }
    t.span("Agent run: {name!r}", run_attrs, start=0, end=10, scope=SCOPE)

    (run,) = rebuild_runs(t.records())

    assert run.agent_name == "secret_keeper's agent"


def test_a_tool_span_whose_name_cannot_be_read_is_left_out_not_guessed() -> None:
    t = Traces()
    _, turn = _sdk_run(t)
    tool = {**_tool("[Scrubbed due to 'session']", {}), "logfire.scrubbed": "not json"}
    del tool["logfire.msg"]
    t.span("Function: {name}", tool, parent=turn, start=10, scope=SCOPE)
    stats = ExtractStats()

    (run,) = rebuild_runs(t.records(), stats=stats)

    assert run.calls == ()
    assert stats.skipped == {"read_error:logfire_openai_agents": 1}


def test_the_runs_tools_are_the_names_its_span_lists() -> None:
    t = Traces()
    _sdk_run(t)

    (run,) = rebuild_runs(t.records())

    assert [spec.name for spec in run.available_tools] == ["get_weather", "get_time"]


def test_the_sdk_trace_task_and_turn_spans_are_no_runs_even_with_a_genai_operation() -> None:
    t = Traces()
    root = {"logfire.msg_template": "OpenAI Agents trace: {name}", "gen_ai.operation.name": "invoke_agent"}
    t.span("OpenAI Agents trace: {name}", root, start=0, end=10, scope=SCOPE)

    assert rebuild_runs(t.records()) == []
