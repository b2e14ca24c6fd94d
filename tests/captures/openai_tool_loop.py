"""A user's hand-written tool loop on the plain `openai` client, shared by the captures that trace one.

The captures of an instrumentation of the `openai` client itself (`openai-v2/`, `openlit-openai/`,
`openai-openinference/`, `openai-openllmetry/`) all need the same loop: ask the model, run each tool it called,
feed the results back, until it answers with text; through Chat Completions or the Responses API, streamed or
not (`Mode`). What differs is how each user marks a run and wraps or traces a tool, so the loop takes those as
hooks:

- `run_span(agent)`: a context manager around one run (OpenLIT's `start_trace`, OpenInference's AGENT span,
  a hand-made `invoke_agent` span); it may yield a callable that is given the run's final text.
- `wrap_tool(fn)`: what the user does to each tool function (OpenLIT's `@openlit.trace`; default: nothing).
- `call_tool(call_id, name, args, fn)`: how the loop runs one call (openai-v2's util-genai `TelemetryHandler.tool`
  span around it; default: `fn(**args)`).

The sub-agent of f runs inside its tool function, the way a user nests one agent in another. A call of a
tool the loop does not have is answered `Error: unknown tool <name>`, as a failing tool is answered
`Error: <message>`: nothing but that text tells the model (and a reader) that the call failed.

Imported from the capture venvs only (`play` imports `openai`; the tool schemas come from `openai-v2/schemas.py`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "openai-v2"))  # its tool schemas

from capture_kit import (
    APP_SPAN_NAME,
    SCENARIOS,
    Agent,
    Recorder,
    Scenario,
    ScriptedOpenAI,
    ToolCall,
    ToolFailure,
    Turn,
    loopback_only_lookups,
)
from schemas import tool_schema

__all__ = [
    "CHAT",
    "CHAT_STREAMED",
    "FAILURE_NOTE",
    "UNKNOWN_TOOL",
    "Loop",
    "Mode",
    "RunHook",
    "ToolHook",
    "all_scenarios",
    "main",
    "model_only",
    "not_captured",
    "play",
    "take_form",
    "variant",
]

REPO = Path(__file__).resolve().parents[2]
FAILURE_NOTE = "only in the loop's 'Error: ...' tool message fed back to the model (the next request's input)"
"""How a failed call shows when no span records the tool: the loop's answer to the model (truth `error_note`)."""
RunHook = Callable[[Agent], AbstractContextManager[Callable[[str], None] | None]]
"""`run_span(agent)`: the context manager a run is played in; it may yield a callable taking the final text."""

UNKNOWN_TOOL = Scenario(
    "model_only_unknown_tool",
    "The model calls a tool it was not offered (the loop answers 'Error: unknown tool get_forecast'), then a real one.",
    (
        Agent(
            name="forecast_agent",
            prompt="What is the forecast for Paris?",
            tools=("get_weather",),
            turns=(
                Turn([ToolCall("call_mu1", "get_forecast", {"city": "Paris"})]),
                Turn([ToolCall("call_mu2", "get_weather", {"city": "Paris"})]),
                Turn(text="It is 21C in Paris."),
            ),
            final_call_id="call_mu9",
        ),
    ),
    failing=(("get_forecast", {"city": "Paris"}),),
)
"""The call of `get_forecast` fails (no such tool); no `Recorder` sees it: `truth_for(..., unrecorded=...)`."""


@dataclass(frozen=True)
class Mode:
    """How the loop talks to the model: `api` "chat" (Chat Completions) or "responses", streamed or not.

    `items_back` (Responses API): the next request repeats the response's output items as they came
    (`input += response.output`, as OpenAI's examples do: each `function_call` item with its `fc_...` id and its
    `call_id`); else it repeats each call as `{"type": "function_call", "call_id", "name", "arguments"}`."""

    api: str = "chat"
    streamed: bool = False
    items_back: bool = False

    def describe(self) -> str:
        return (
            ("Responses API" if self.api == "responses" else "Chat Completions")
            + (", streamed" if self.streamed else "")
            + (", output items handed back as they came" if self.items_back else "")
        )


def variant(base: str, name: str, description: str) -> Scenario:
    """Scenario `base` (of the kit, or `UNKNOWN_TOOL`) under another name and description."""
    found = {**SCENARIOS, UNKNOWN_TOOL.name: UNKNOWN_TOOL}[base]
    return replace(found, name=name, description=description)


CHAT, CHAT_STREAMED = Mode("chat"), Mode("chat", streamed=True)
RESPONSES, RESPONSES_STREAMED = Mode("responses"), Mode("responses", streamed=True)
STREAMED = frozenset({"b_sequential", "h_complex_args", "i_parallel_random_ids"})
"""The scenarios played streamed through Chat Completions."""
RESPONSE_SCENARIOS: dict[str, tuple[str, Mode, str]] = {
    "k_responses_parallel": ("c_parallel", RESPONSES, "As c, through the Responses API: three function_call items."),
    "l_responses_streamed": (
        "i_parallel_random_ids",
        RESPONSES_STREAMED,
        "As i, through the Responses API, streamed: four function_call items, ids unsorted.",
    ),
    "m_responses_error": (
        "e_tool_error_retry",
        RESPONSES,
        "As e, through the Responses API: the failing call is answered with a function_call_output 'Error: ...'.",
    ),
}
ITEMS_BACK_SCENARIO: dict[str, tuple[str, Mode, str]] = {
    "n_responses_items_back": (
        "e_tool_error_retry",
        Mode("responses", items_back=True),
        "As m, but the loop hands each response's output items back as they came (input += response.output).",
    ),
}


def all_scenarios(*, responses: bool = True, items_back: bool = False) -> dict[str, tuple[Scenario, Mode]]:
    """Every canonical scenario and `UNKNOWN_TOOL` through Chat Completions (`STREAMED` streamed), then, with
    `responses`, the Responses API variants k, l, m, and, with `items_back`, n (as m, the output items handed
    back as they came)."""
    found = {name: (s, CHAT_STREAMED if name in STREAMED else CHAT) for name, s in SCENARIOS.items()}
    found[UNKNOWN_TOOL.name] = (UNKNOWN_TOOL, CHAT)
    extra = {**(RESPONSE_SCENARIOS if responses else {}), **(ITEMS_BACK_SCENARIO if items_back else {})}
    for name, (base, mode, description) in extra.items():
        found[name] = (variant(base, name, description), mode)
    return found


ToolHook = Callable[[str, str, dict[str, Any], Callable[..., Any]], Any]
"""`call_tool(call_id, name, args, fn)`: runs one call of the tool `fn` (it may raise `ToolFailure`)."""


def _identity(fn: Callable[..., Any]) -> Callable[..., Any]:
    return fn


def _call(call_id: str, name: str, args: dict[str, Any], fn: Callable[..., Any]) -> Any:
    return fn(**args)


class Loop:
    """A user's tool loop: model turn, run each requested tool, feed the results back, until text."""

    def __init__(
        self,
        scenario: Scenario,
        client: Any,
        mode: Mode,
        run_span: RunHook,
        *,
        wrap_tool: Callable[[Callable[..., Any]], Callable[..., Any]] = _identity,
        call_tool: ToolHook = _call,
    ) -> None:
        self.scenario, self.client, self.mode, self.run_span = scenario, client, mode, run_span
        self.call_tool = call_tool
        self._echoed: list[Any] = []
        """The last response's output items, when the loop hands them back as they came (`Mode.items_back`)."""
        self.recorder = Recorder()
        self.schemas: dict[str, dict[str, Any]] = {}
        self.tools: dict[str, Callable[..., Any]] = {}
        for agent in scenario.agents:
            for name in agent.tools:
                if name in self.tools:
                    continue
                if name in scenario.sub_agents:
                    tool = self.recorder.wrap(self._sub_agent(scenario.agent(scenario.sub_agents[name])), name)
                else:
                    tool = self.recorder.tools([name])[0]
                self.schemas[name] = tool_schema(tool, name)
                self.tools[name] = wrap_tool(tool)

    @property
    def streamed(self) -> bool:
        return self.mode.streamed

    @property
    def responses(self) -> bool:
        return self.mode.api == "responses"

    def _sub_agent(self, agent: Agent) -> Callable[..., Any]:
        def weather_expert(input: str) -> str:
            """Ask the weather expert agent a question about the weather.

            Args:
                input: The question for the weather expert.
            """
            return self.run(agent, input)

        return weather_expert

    def top_agents(self) -> list[Agent]:
        """The agents the application runs itself (a sub-agent runs inside its tool)."""
        return [a for a in self.scenario.agents if a.name not in self.scenario.sub_agents.values()]

    def offered(self, agent: Agent) -> list[dict[str, Any]]:
        """The Chat Completions `tools` entries `agent` is offered."""
        return [self.schemas[n] for n in agent.tools]

    def run(self, agent: Agent, prompt: str | None = None) -> str:
        schemas = self.offered(agent)
        with self.run_span(agent) as finish:
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": agent.instructions},
                {"role": "user", "content": prompt or agent.prompt},
            ]
            while True:
                text, calls = self._model(agent, messages, schemas)
                if not calls:
                    if finish is not None:
                        finish(text)
                    return text
                messages.extend(self._echoed or self._assistant(calls))
                for call in calls:
                    result = self._tool(call["id"], call["name"], call["arguments"])
                    if self.responses:
                        messages.append({"type": "function_call_output", "call_id": call["id"], "output": result})
                    else:
                        messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})

    def _assistant(self, calls: list[dict[str, str]]) -> list[dict[str, Any]]:
        """The model's calls as the next request repeats them."""
        if self.responses:
            return [
                {"type": "function_call", "call_id": c["id"], "name": c["name"], "arguments": c["arguments"]}
                for c in calls
            ]
        tool_calls = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls
        ]
        return [{"role": "assistant", "tool_calls": tool_calls}]

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
        self._echoed = list(response.output) if self.mode.items_back else []
        return response.output_text or "", calls

    def _tool(self, call_id: str, name: str, arguments: str) -> str:
        tool = self.tools.get(name)
        if tool is None:
            return f"Error: unknown tool {name}"
        try:
            return str(self.call_tool(call_id, name, json.loads(arguments), tool))
        except ToolFailure as exc:  # a span the user wrapped the tool in ended ERROR on the way out
            return f"Error: {exc}"


def play(loop_of: Callable[[Any], Loop], scenario: Scenario, tracer: Any) -> Loop:
    """Play `scenario` against the scripted model with the loop `loop_of(client)` builds; g's two runs under the
    application span `conversation` (from `tracer`), as a user groups one conversation's runs."""
    import openai

    with ScriptedOpenAI(scenario.script) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="scripted", max_retries=0)
        loop = loop_of(client)
        app = tracer.start_as_current_span(APP_SPAN_NAME) if scenario.name.startswith("g_") else nullcontext()
        with app:
            for agent in loop.top_agents():
                loop.run(agent)
        client.close()
        server.assert_consumed()
    return loop


def model_only(scenario: Scenario, error_note: str) -> dict[str, dict[str, Any]]:
    """Truth flags for a loop that makes no tool span: every call is `model_only`, and a failed one says how the
    failure shows (`error_note`)."""
    flags: dict[str, dict[str, Any]] = {c.id: {"model_only": True} for a in scenario.agents for c in a.calls}
    for call in [c for a in scenario.agents for c in a.calls if scenario.raises(c.name, c.args)]:
        flags[call.id]["error_note"] = error_note
    return flags


def main(
    description: str,
    scenarios: Mapping[str, tuple[Scenario, Mode]],
    setup: Callable[[], Any],
    capture: Callable[[str, Scenario, Mode, Any, Path], None],
) -> None:
    """`capture.py [--out DIR] [SCENARIO ...]`: no network beyond the loopback, `setup()` (its result is handed
    to every `capture`), then `capture` each scenario (default: all) into DIR (default: tests/testdata)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("scenarios", nargs="*", help="default: all")
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "testdata", help="default: tests/testdata")
    args = parser.parse_args()
    loopback_only_lookups()
    parts = setup()
    for name in args.scenarios or list(scenarios):
        scenario, mode = scenarios[name]
        capture(name, scenario, mode, parts, args.out)


def not_captured(truth: Mapping[str, Any]) -> dict[str, Any]:
    """The truth of a capture made with content capture off, when no call can be read from it.

    The calls the tools received stay, under each run's `calls_made`; `calls` is empty, because no span holds
    them (no tool span, and model spans without messages); and the run is `incomplete`: a reader must flag
    it rather than take it for a run that called nothing."""
    runs = [{**run, "calls": [], "calls_made": run["calls"], "incomplete": bool(run["calls"])} for run in truth["runs"]]
    return {**truth, "runs": runs, "content_captured": False}


def take_form(forms: Sequence[str]) -> str:
    """`--form NAME` taken out of the script's arguments (one of `forms`; default: the first)."""
    if "--form" not in sys.argv:
        return forms[0]
    at = sys.argv.index("--form")
    form = sys.argv[at + 1] if at + 1 < len(sys.argv) else ""
    if form not in forms:
        raise SystemExit(f"--form takes one of {list(forms)}")
    del sys.argv[at : at + 2]
    return form
