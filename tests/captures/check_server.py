"""Checks `ScriptedOpenAI` against the real `openai` and `anthropic` Python clients, whichever are installed.

`openai`: Chat Completions and Responses, each streamed and not: tool calls (parallel, with nested, list,
number, boolean, null and unicode arguments) and final text must come back exactly as scripted, and a
script mistake must fail with the model named. When the OpenAI Agents SDK (`openai-agents`) is installed too, an
agent with the recorded tools also runs through it in the four modes. `anthropic`: the Messages API, not
streamed, `messages.stream` (the client's accumulator) and `stream=True` (the raw events), the same parallel
calls as `tool_use` blocks and the same text, stop reasons `tool_use`/`end_turn`, usage, and an exhausted model.
Run from a venv that has either client:

    /work/venvs/kit/bin/python tests/captures/check_server.py
    /work/venvs/anthropic/bin/python tests/captures/check_server.py
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scripted_openai import ScriptedOpenAI, ToolCall, Turn

if importlib.util.find_spec("openai"):
    import openai

__all__: list[str] = []

COMPLEX = {
    "route": {"from": "CDG", "to": "NRT", "via": ["HEL", None]},
    "passengers": [{"name": "Zoë Ñúñez", "age": 34, "vegan": True}, {"name": "李雷", "age": 7.5, "vegan": False}],
    "flexible": False,
    "max_price": 1234.5,
    "note": 'quotes " and \\ backslash, emoji 🌍',
    "empty": {},
}
PARALLEL = [
    ToolCall("call_9fQ2xZ", "get_weather", {"city": "Tokyo"}),
    ToolCall("call_3aB7kL", "get_time", {"timezone": "Asia/Tokyo"}),
    ToolCall("call_Zk01pQ", "search_flights", COMPLEX),
]
SCRIPT = [Turn(PARALLEL), Turn(text="Fine: 21°C in Tokyo — «ok».")]
EXPECTED = [(c.id, c.name, dict(c.args)) for c in PARALLEL]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
RESPONSE_TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]


def chat(client: Any, model: str, stream: bool) -> tuple[list[tuple[str, str, Any]], str]:
    messages: list[Any] = [{"role": "user", "content": "go"}]
    if not stream:
        first = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
        assert first.choices[0].finish_reason == "tool_calls"
        assert first.usage is not None
        calls = [(t.id, t.function.name, json.loads(t.function.arguments)) for t in first.choices[0].message.tool_calls]
        second = client.chat.completions.create(model=model, messages=messages)
        assert second.choices[0].finish_reason == "stop"
        return calls, second.choices[0].message.content
    opts: Any = {"include_usage": True}
    with client.chat.completions.stream(model=model, messages=messages, tools=TOOLS, stream_options=opts) as s:
        final = s.get_final_completion()
    assert final.choices[0].finish_reason == "tool_calls"
    assert final.usage is not None
    assert final.usage.total_tokens > 0
    calls = [(t.id, t.function.name, json.loads(t.function.arguments)) for t in final.choices[0].message.tool_calls]
    # The raw iterator too (what most frameworks use): deltas keyed by index.
    pieces: dict[int, list[str]] = {}
    text = ""
    for chunk in client.chat.completions.create(model=model, messages=messages, stream=True):
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for delta in choice.delta.tool_calls or []:
                pieces.setdefault(delta.index, []).append(delta.function.arguments or "")
    assert not pieces
    return calls, text


def responses(client: Any, model: str, stream: bool) -> tuple[list[tuple[str, str, Any]], str]:
    if not stream:
        first = client.responses.create(model=model, input="go", tools=RESPONSE_TOOLS)
        calls = [(o.call_id, o.name, json.loads(o.arguments)) for o in first.output if o.type == "function_call"]
        return calls, client.responses.create(model=model, input="go").output_text
    with client.responses.stream(model=model, input="go", tools=RESPONSE_TOOLS) as s:
        kinds = [event.type for event in s]
        first = s.get_final_response()
    assert "response.function_call_arguments.delta" in kinds, kinds
    calls = [(o.call_id, o.name, json.loads(o.arguments)) for o in first.output if o.type == "function_call"]
    text = ""
    for event in client.responses.create(model=model, input="go", stream=True):
        if event.type == "response.output_text.delta":
            text += event.delta
        if event.type == "response.completed":
            assert event.response.output_text == text, (event.response.output_text, text)
    return calls, text


def main() -> None:
    modes = {f"scripted-{api}-{s}": (api, s) for api in ("chat", "responses") for s in ("plain", "stream")}
    with ScriptedOpenAI(dict.fromkeys(modes, SCRIPT)) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="scripted", max_retries=0)
        assert sorted(m.id for m in client.models.list()) == sorted(modes)
        for model, (api, mode) in modes.items():
            run = chat if api == "chat" else responses
            calls, text = run(client, model, mode == "stream")
            assert calls == EXPECTED, (model, calls)
            assert text == SCRIPT[1].text, (model, text)
            print(f"ok {api:9} {mode:6}: {len(calls)} parallel calls and the final text round-trip")
        server.assert_consumed()
        failure = ""
        try:
            client.chat.completions.create(model="scripted-chat-plain", messages=[{"role": "user", "content": "x"}])
        except openai.InternalServerError as exc:
            failure = str(exc)
        if "scripted-chat-plain" not in failure:
            raise AssertionError(f"an exhausted model must answer 500 naming it, got {failure!r}")
        print("ok exhausted model: HTTP 500 naming it")
        assert len(server.requests) == 4 * 2 + 1
        assert server.requests[0]["model"] in modes
    print("ok: requests recorded", len(server.requests))


def agents_sdk() -> None:
    """The OpenAI Agents SDK parses the four modes: i_parallel_random_ids, tools called as scripted."""
    import asyncio

    try:
        import agents
    except ImportError:
        print("skipped the OpenAI Agents SDK check: openai-agents is not installed")
        return
    from capture_kit import Recorder, scenario

    agents.set_tracing_disabled(True)
    agent = scenario("i_parallel_random_ids").agents[0]
    modes = ("responses", "responses-stream", "chat", "chat-stream")

    async def run_all(server: ScriptedOpenAI) -> None:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="scripted", max_retries=0)
        for mode in modes:
            recorder = Recorder()
            tools = [agents.function_tool(f) for f in recorder.tools(agent.tools)]
            model_type = (
                agents.OpenAIResponsesModel if mode.startswith("responses") else agents.OpenAIChatCompletionsModel
            )
            model = model_type(f"{agent.model}-{mode}", client)
            sdk_agent = agents.Agent(name=agent.name, instructions=agent.instructions, tools=tools, model=model)
            if mode.endswith("stream"):
                result: Any = agents.Runner.run_streamed(sdk_agent, agent.prompt)
                async for _ in result.stream_events():
                    pass
            else:
                result = await agents.Runner.run(sdk_agent, agent.prompt)
            got = sorted(json.dumps([c.name, c.full_args], sort_keys=True) for c in recorder.calls)
            want = sorted(
                json.dumps([c.name, recorder.full_args(c.name, dict(c.args))], sort_keys=True) for c in agent.calls
            )
            if result.final_output != agent.final_text or got != want:
                raise AssertionError(f"agents sdk {mode}: {result.final_output!r}, {recorder.calls}")
            print(f"ok agents sdk {mode:16}: {len(got)} parallel calls ran as scripted")

    with ScriptedOpenAI({f"{agent.model}-{mode}": list(agent.turns) for mode in modes}) as server:
        asyncio.run(run_all(server))
        server.assert_consumed()


ANTHROPIC_TOOLS = [{"name": "get_weather", "description": "The weather.", "input_schema": {"type": "object"}}]


def anthropic_messages() -> None:
    """The `anthropic` client against `/v1/messages`: plain, `messages.stream` and `stream=True`, then a failure."""
    import anthropic

    modes = ("plain", "stream", "raw")
    with ScriptedOpenAI({f"scripted-messages-{m}": SCRIPT for m in modes}) as server:
        client = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="scripted", max_retries=0)
        for mode in modes:
            model = f"scripted-messages-{mode}"
            first, second = (_anthropic_turn(client, model, mode) for _ in range(2))
            calls = [(b.id, b.name, b.input) for b in first.content if b.type == "tool_use"]
            assert (calls, first.stop_reason) == (EXPECTED, "tool_use"), (mode, calls, first.stop_reason)
            assert first.usage.output_tokens > 1, (mode, first.usage)
            assert first.usage.input_tokens > 0, (mode, first.usage)
            text = "".join(b.text for b in second.content if b.type == "text")
            assert (text, second.stop_reason) == (SCRIPT[1].text, "end_turn"), (mode, text, second.stop_reason)
            print(f"ok anthropic {mode:6}: {len(calls)} parallel tool_use blocks and the final text round-trip")
        server.assert_consumed()
        assert server.paths == ["/v1/messages"] * 6, server.paths
        assert server.requests[0]["tools"] == ANTHROPIC_TOOLS
        failure = ""
        try:
            _anthropic_turn(client, "scripted-messages-plain", "plain")
        except anthropic.InternalServerError as exc:
            failure = str(exc)
        if "scripted-messages-plain" not in failure:
            raise AssertionError(f"an exhausted model must answer 500 naming it, got {failure!r}")
        print("ok anthropic exhausted model: HTTP 500 naming it")


def _anthropic_turn(client: Any, model: str, mode: str) -> Any:
    """One Messages API response, as a `Message` whichever way it was asked for."""
    request: dict[str, Any] = {
        "model": model,
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "go"}],
        "tools": ANTHROPIC_TOOLS,
    }
    if mode == "plain":
        return client.messages.create(**request)
    if mode == "stream":
        with client.messages.stream(**request) as stream:
            kinds = [event.type for event in stream]
            assert kinds[0] == "message_start", kinds
            assert "content_block_delta" in kinds, kinds
            return stream.get_final_message()
    # The raw events (the client drops `ping`), put together by hand as a loop reading `stream=True` does.
    import anthropic

    message: Any = None
    pieces: dict[int, str] = {}
    kinds = []
    for event in client.messages.create(**request, stream=True):
        kinds.append(event.type)
        if event.type == "message_start":
            message = event.message
        elif event.type == "content_block_start":
            message.content.append(event.content_block)
        elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            pieces[event.index] = pieces.get(event.index, "") + event.delta.partial_json
        elif event.type == "content_block_delta" and event.delta.type == "text_delta":
            message.content[event.index].text += event.delta.text
        elif event.type == "message_delta":
            message.stop_reason = event.delta.stop_reason
            message.usage.output_tokens = event.usage.output_tokens
    assert kinds[0] == "message_start", kinds
    assert kinds[-2:] == ["message_delta", "message_stop"], kinds
    for index, text in pieces.items():
        message.content[index].input = json.loads(text)
    assert isinstance(message, anthropic.types.Message)
    return message


if __name__ == "__main__":
    clients = [name for name in ("openai", "anthropic") if importlib.util.find_spec(name)]
    if not clients:
        raise SystemExit("neither openai nor anthropic is installed in this venv")
    if "openai" in clients:
        main()
        agents_sdk()
    if "anthropic" in clients:
        anthropic_messages()
