"""Captures of OpenLIT (`openlit.init()`) on a hand-written tool loop on the `openai` client.

The loop is what an OpenLIT user writes by hand: `openlit.init()` instruments the `openai` client
(and, as it does by default, every HTTP client library it finds), each agent run is wrapped in
`openlit.start_trace(<agent>)` (OpenLIT's manual-tracing context manager) and each tool function is
decorated with `@openlit.trace` (its manual-tracing decorator). The model is the kit's scripted
OpenAI server on 127.0.0.1.

OpenLIT's own spans for the model calls are `chat <model>` spans (`gen_ai.operation.name=chat`)
carrying the calls as `tool_call` parts of `gen_ai.output.messages` (plus comma-joined
`gen_ai.tool.name`/`gen_ai.tool.call.id`/`gen_ai.tool.args`); OpenLIT writes no `execute_tool` and no
`invoke_agent` span for a hand-written loop: every call of the truth is `model_only`. The manual
spans carry no GenAI operation (see NOTES.md).

Chat Completions for every scenario; b, h and i streamed; `k_responses_streamed` is i through the
Responses API, streamed. A non-streamed Responses API loop is not captured: OpenLIT's span then lists
only the last function_call of each response, and toolscore reads no call from it (see NOTES.md).

    /work/venvs/openlit/bin/python tests/captures/openlit-openai/capture.py [--out DIR] [SCENARIO ...]
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/captures
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "openai-v2"))  # its tool schemas

os.environ.setdefault("OPENAI_API_KEY", "scripted-not-a-key")

import openlit_capture
from capture_kit import (
    APP_SPAN_NAME,
    SCENARIOS,
    Agent,
    Recorder,
    Scenario,
    ScriptedOpenAI,
    ToolFailure,
    find_span,
    truth_for,
)
from schemas import tool_schema

__all__: list[str] = []

FOLDER = "openlit-openai"
STREAMED = {"b_sequential", "h_complex_args", "i_parallel_random_ids", "k_responses_streamed"}
RESPONSES = {"k_responses_streamed"}
EXTRA = {
    "k_responses_streamed": (
        "i_parallel_random_ids",
        "As i, through the Responses API, streamed: one response with four function_call items.",
    ),
}


def all_scenarios() -> dict[str, Scenario]:
    found = dict(SCENARIOS)
    for name, (base, description) in EXTRA.items():
        found[name] = replace(SCENARIOS[base], name=name, description=description)
    return found


class Loop:
    """A user's tool loop: model turn, run each requested tool, feed the results back, until text."""

    def __init__(self, scenario: Scenario, client: Any) -> None:
        import openlit

        self.scenario, self.client = scenario, client
        self.streamed = scenario.name in STREAMED
        self.responses = scenario.name in RESPONSES
        self.recorder = Recorder()
        self.schemas: dict[str, dict[str, Any]] = {}
        self.tools: dict[str, Callable[..., Any]] = {}
        for agent in scenario.agents:
            for name in agent.tools:
                if name in scenario.sub_agents:
                    sub = scenario.agent(scenario.sub_agents[name])
                    tool = self.recorder.wrap(self._sub_agent(sub), name)
                elif name not in self.tools:
                    tool = self.recorder.tools([name])[0]
                else:
                    continue
                self.schemas[name] = tool_schema(tool, name)
                self.tools[name] = openlit.trace(tool)  # the user's manual span around each tool

    def _sub_agent(self, agent: Agent) -> Callable[..., Any]:
        def weather_expert(input: str) -> str:
            """Ask the weather expert agent a question about the weather.

            Args:
                input: The question for the weather expert.
            """
            return self.run(agent, input)

        return weather_expert

    def run(self, agent: Agent, prompt: str | None = None) -> str:
        import openlit

        schemas = [self.schemas[n] for n in agent.tools]
        with openlit.start_trace(agent.name) as traced:
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": agent.instructions},
                {"role": "user", "content": prompt or agent.prompt},
            ]
            while True:
                text, calls = self._model(agent, messages, schemas)
                if not calls:
                    traced.set_result(text)
                    return text
                if self.responses:
                    messages.extend(
                        {"type": "function_call", "call_id": c["id"], "name": c["name"], "arguments": c["arguments"]}
                        for c in calls
                    )
                else:
                    messages.append(
                        {
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "id": c["id"],
                                    "type": "function",
                                    "function": {"name": c["name"], "arguments": c["arguments"]},
                                }
                                for c in calls
                            ],
                        }
                    )
                for call in calls:
                    result = self._tool(call["name"], call["arguments"])
                    if self.responses:
                        messages.append({"type": "function_call_output", "call_id": call["id"], "output": result})
                    else:
                        messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})

    def _model(
        self, agent: Agent, messages: list[dict[str, Any]], schemas: list[dict[str, Any]]
    ) -> tuple[str, list[dict[str, str]]]:
        """The model's text and its calls (`id`, `name`, `arguments` JSON text), in the model's order."""
        if self.responses:
            return self._responses(agent, messages, schemas)
        if not self.streamed:
            response = self.client.chat.completions.create(model=agent.model, messages=messages, tools=schemas)
            message = response.choices[0].message
            calls = [
                {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                for c in message.tool_calls or []
            ]
            return message.content or "", calls
        stream = self.client.chat.completions.create(
            model=agent.model, messages=messages, tools=schemas, stream=True, stream_options={"include_usage": True}
        )
        text: list[str] = []
        streamed: dict[int, dict[str, str]] = {}
        for chunk in stream:
            for choice in chunk.choices:
                text.append(choice.delta.content or "")
                for delta in choice.delta.tool_calls or []:
                    call = streamed.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                    call["id"] = delta.id or call["id"]
                    if delta.function and delta.function.name:
                        call["name"] = delta.function.name
                    if delta.function and delta.function.arguments:
                        call["arguments"] += delta.function.arguments
        return "".join(text), [streamed[i] for i in sorted(streamed)]

    def _responses(
        self, agent: Agent, messages: list[dict[str, Any]], schemas: list[dict[str, Any]]
    ) -> tuple[str, list[dict[str, str]]]:
        tools = [{"type": "function", **s["function"]} for s in schemas]
        if self.streamed:
            with self.client.responses.stream(model=agent.model, input=messages, tools=tools) as stream:
                for _ in stream:
                    pass
                response = stream.get_final_response()
        else:
            response = self.client.responses.create(model=agent.model, input=messages, tools=tools)
        calls = [
            {"id": item.call_id, "name": item.name, "arguments": item.arguments}
            for item in response.output
            if item.type == "function_call"
        ]
        return response.output_text or "", calls

    def _tool(self, name: str, arguments: str) -> str:
        try:
            return str(self.tools[name](**json.loads(arguments)))
        except ToolFailure as exc:  # the tool's @openlit.trace span ended with status ERROR on the way out
            return f"Error: {exc}"


def capture(name: str, scenario: Scenario, exporter: Any, out: Path) -> dict[str, Any]:
    """Run one scenario, write its capture and truth, and return the truth."""
    import openai
    from opentelemetry import trace

    exporter.clear()
    with ScriptedOpenAI(scenario.script) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="scripted", max_retries=0)
        loop = Loop(scenario, client)
        top = [a for a in scenario.agents if a.name not in scenario.sub_agents.values()]
        if scenario.name == "g_two_runs_one_trace":
            with trace.get_tracer("capture-openlit-openai").start_as_current_span(APP_SPAN_NAME):
                for agent in top:
                    loop.run(agent)
        else:
            for agent in top:
                loop.run(agent)
        client.close()
        server.assert_consumed()
    spans = exporter.get_finished_spans()
    runs = [find_span(spans, a.name, where=_start_trace_span) for a in scenario.agents]
    flags: dict[str, dict[str, Any]] = {c.id: {"model_only": True} for a in scenario.agents for c in a.calls}
    for call in [c for a in scenario.agents for c in a.calls if scenario.raises(c.name, c.args)]:
        flags[call.id]["error_note"] = "the tool's @openlit.trace span (ERROR) and the tool message text"
    truth = truth_for(scenario, meta(loop), loop.recorder, runs, flags=flags)
    openlit_capture.write(out, FOLDER, name, spans, truth)
    return truth


def _start_trace_span(span: Any) -> bool:
    """An `openlit.start_trace` span (scope `openlit`, no `function.args`: an `@openlit.trace` span has them)."""
    return span.instrumentation_scope.name == "openlit" and "function.args" not in (span.attributes or {})


def meta(loop: Loop) -> dict[str, Any]:
    version = importlib.metadata.version
    api = "Responses API" if loop.responses else "Chat Completions"
    return {
        "framework": "openai (hand-written agent loop)",
        "framework_version": version("openai"),
        "instrumentation": (
            f"openlit {version('openlit')} (openlit.init(), capture_message_content=True, metrics off); "
            f"runs in openlit.start_trace(<agent>), tools decorated with @openlit.trace; "
            f"opentelemetry-sdk {version('opentelemetry-sdk')}"
        ),
        "conventions": "OpenLIT's OTel GenAI spans (chat spans with gen_ai.output.messages), no execute_tool spans",
        "api": api + (", streamed" if loop.streamed else ""),
        "streamed": loop.streamed,
    }


def main() -> None:
    openlit_capture.main(__doc__.splitlines()[0], FOLDER, all_scenarios(), capture)


if __name__ == "__main__":
    main()
