"""Checks `ScriptedOpenAI` against the real `openai` Python client, in all four modes.

Chat Completions and Responses, each streamed and not: tool calls (parallel, with nested, list,
number, boolean, null and unicode arguments) and final text must come back exactly as scripted, and a
script mistake must fail with the model named. When the OpenAI Agents SDK (`openai-agents`) is installed too, an
agent with the recorded tools also runs through it in the four modes. Run from a venv that has `openai`:

    /work/venvs/kit/bin/python tests/captures/check_server.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import openai
from scripted_openai import ScriptedOpenAI, ToolCall, Turn

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


def chat(client: openai.OpenAI, model: str, stream: bool) -> tuple[list[tuple[str, str, Any]], str]:
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


def responses(client: openai.OpenAI, model: str, stream: bool) -> tuple[list[tuple[str, str, Any]], str]:
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


if __name__ == "__main__":
    main()
    agents_sdk()
