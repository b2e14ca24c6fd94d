"""A hand-written tool loop on the `anthropic` client, shared by the Anthropic captures.

Used by `anthropic-openinference/` and `anthropic-openllmetry/`, whose instrumentations trace the client's
`messages.create` / `messages.stream` calls and nothing else: the loop is what a user writes around the
Messages API (no agent framework). Each conversation is wrapped in an application span made by the script's
`run_span(agent)`, the instrumentation's own way to mark an agent (OpenInference's `OITracer` AGENT span,
OpenLLMetry's `@agent` attributes): a loop's model calls are otherwise one trace each, and model spans under a
plain span make no run (toolscore's rule). g's two conversations are under the kit's `conversation` span
(a plain span); f's sub-agent runs inside the `weather_expert` tool, in a run span of its own under the
coordinator's. Tools are not traced: every call the model makes is only in the model spans (`model_only`
in the truth).

Three ways to ask the model (`MODES`): `plain` (`messages.create`), `stream` (`messages.stream`, the
client's accumulator) and `raw` (`messages.create(stream=True)`, the events put together by the loop);
`MODE_OF` says which scenario uses which. The `anthropic` client (2.x) traces its own API calls too
(scope `com.anthropic.sdk.python`, on by default, metadata only): those spans are kept, as a user's export
has them. Imports `anthropic` and the OTel SDK only when used, after the script's instrumentation.

`main` is a script's whole command line: `capture.py [--out DIR] [SCENARIO ...]`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
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
    ToolFailure,
    find_span,
    loopback_only_lookups,
    truth_for,
    write_capture,
)
from schemas import tool_schema as chat_schema

__all__ = [
    "ALL",
    "MODES",
    "MODE_OF",
    "TYPED_ERRORS",
    "Loop",
    "capture",
    "main",
    "play",
    "run_spans",
    "setup",
    "tool_schema",
    "truth",
]

REPO = Path(__file__).resolve().parents[2]

MODES = ("plain", "stream", "raw")
RunSpan = Callable[[Agent], AbstractContextManager[Any]]
"""A script's span around one conversation, given the agent."""
MODE_OF: Mapping[str, str] = {
    "b_sequential": "stream",
    "h_complex_args": "stream",
    "c_parallel": "raw",
    "i_parallel_random_ids": "raw",
}
"""How each scenario asks the model (the others: `plain`)."""
MAX_TOKENS = 1024


def tool_schema(fn: Callable[..., Any], name: str) -> dict[str, Any]:
    """The Messages API `tools` entry for `fn`: `name`, `description`, `input_schema` (the JSON schema a
    hand-written loop builds from the signature, as openai-v2's loop does for Chat Completions)."""
    function = chat_schema(fn, name)["function"]
    return {"name": name, "description": function["description"], "input_schema": function["parameters"]}


class Loop:
    """A user's tool loop: ask the model, run each `tool_use` block's tool, send the `tool_result`s back, until
    the model stops without tools (stop reason `end_turn`)."""

    def __init__(self, scenario: Scenario, client: Any, mode: str, run_span: RunSpan) -> None:
        if mode not in MODES:
            raise ValueError(f"mode {mode!r} is not one of {MODES}")
        self.scenario, self.client, self.mode, self.run_span = scenario, client, mode, run_span
        self.recorder = Recorder()
        self.tools: dict[str, Callable[..., Any]] = {}
        for agent in scenario.agents:
            for name in agent.tools:
                if name in scenario.sub_agents:
                    self.tools[name] = self.recorder.wrap(
                        self._sub_agent(scenario.agent(scenario.sub_agents[name])), name
                    )
                elif name not in self.tools:
                    self.tools[name] = self.recorder.tools([name])[0]

    def _sub_agent(self, agent: Agent) -> Callable[..., Any]:
        def weather_expert(input: str) -> str:
            """Ask the weather expert agent a question about the weather.

            Args:
                input: The question for the weather expert.
            """
            return self.run(agent, input)

        return weather_expert

    def run(self, agent: Agent, prompt: str | None = None) -> str:
        """One conversation, in the script's run span; returns the final text."""
        tools = [tool_schema(self.tools[n], n) for n in agent.tools]
        with self.run_span(agent):
            messages: list[dict[str, Any]] = [{"role": "user", "content": prompt or agent.prompt}]
            while True:
                message = self._model(agent, messages, tools)
                uses = [b for b in message.content if b.type == "tool_use"]
                if message.stop_reason != "tool_use":
                    return "".join(b.text for b in message.content if b.type == "text")
                messages.append(
                    {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}
                )
                messages.append({"role": "user", "content": [self._tool(b.id, b.name, b.input) for b in uses]})

    def _model(self, agent: Agent, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        """The model's `Message`, asked for in the loop's mode."""
        request = {
            "model": agent.model,
            "max_tokens": MAX_TOKENS,
            "system": agent.instructions,
            "messages": messages,
            "tools": tools,
        }
        if self.mode == "plain":
            return self.client.messages.create(**request)
        if self.mode == "stream":
            with self.client.messages.stream(**request) as stream:
                for _ in stream:
                    pass
                return stream.get_final_message()
        return _assembled(self.client.messages.create(**request, stream=True))

    def _tool(self, tool_use_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """The `tool_result` block for one call; a tool's failure goes back with `is_error`, as Anthropic asks, and
        the text `Error: ...`, or, in the scenarios `TYPED_ERRORS`, `<exception class>: ...` as Anthropic's own
        examples word it (only `is_error` then says it failed)."""
        try:
            content, failed = str(self.tools[name](**args)), False
        except ToolFailure as exc:
            typed = self.scenario.name in TYPED_ERRORS
            content, failed = f"{type(exc).__name__ if typed else 'Error'}: {exc}", True
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
        if failed:
            block["is_error"] = True
        return block


def _assembled(events: Any) -> Any:
    """The `Message` a `stream=True` response's events describe, put together as a loop reading them does."""
    message: Any = None
    inputs: dict[int, str] = {}
    for event in events:
        if event.type == "message_start":
            message = event.message
        elif event.type == "content_block_start":
            message.content.append(event.content_block)
        elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            inputs[event.index] = inputs.get(event.index, "") + event.delta.partial_json
        elif event.type == "content_block_delta" and event.delta.type == "text_delta":
            message.content[event.index].text += event.delta.text
        elif event.type == "message_delta":
            message.stop_reason = event.delta.stop_reason
            message.usage.output_tokens = event.usage.output_tokens
    for index, text in inputs.items():
        message.content[index].input = json.loads(text) if text else {}
    return message


@contextlib.contextmanager
def _maybe_conversation(scenario: Scenario, tracer: Any) -> Iterator[None]:
    """g's two runs under the kit's application span `conversation`, the others under nothing."""
    if scenario.name == "g_two_runs_one_trace":
        with tracer.start_as_current_span(APP_SPAN_NAME):
            yield
    else:
        yield


def play(scenario: Scenario, mode: str, run_span: RunSpan, tracer: Any) -> Loop:
    """Run the scenario's top-level agents through the loop against the scripted model; returns the loop (its
    recorder). Raises unless every agent answered its scripted text and every scripted turn was asked for."""
    import anthropic

    with ScriptedOpenAI(scenario.script) as server:
        client = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="scripted", max_retries=0)
        loop = Loop(scenario, client, mode, run_span)
        top = [a for a in scenario.agents if a.name not in scenario.sub_agents.values()]
        with _maybe_conversation(scenario, tracer):
            for agent in top:
                text = loop.run(agent)
                if text != agent.final_text:
                    raise AssertionError(f"{scenario.name}: {agent.name} answered {text!r}, not {agent.final_text!r}")
        client.close()
        server.assert_consumed()
        if any(p != "/v1/messages" for p in server.paths):
            raise AssertionError(f"{scenario.name}: requests other than the Messages API: {server.paths}")
    return loop


def run_spans(scenario: Scenario, spans: Any, scope: str, span_name: str = "{}") -> list[Any]:
    """Each agent's run span (of the script's tracer `scope`, named `span_name` with the agent's name), in
    `scenario.agents` order."""
    return [
        find_span(spans, span_name.format(a.name), where=lambda s: s.instrumentation_scope.name == scope)
        for a in scenario.agents
    ]


def truth(scenario: Scenario, meta: dict[str, Any], loop: Loop, runs: list[Any], **options: Any) -> dict[str, Any]:
    """The truth: every call `model_only` (no tool span), checked against the recorder."""
    flags: dict[str, dict[str, Any]] = {c.id: {"model_only": True} for a in scenario.agents for c in a.calls}
    note = "the tool_result block sent back in the next request: is_error, and the text " + (
        "'ToolFailure: ...'" if scenario.name in TYPED_ERRORS else "'Error: ...'"
    )
    for call in [c for a in scenario.agents for c in a.calls if scenario.raises(c.name, c.args)]:
        flags[call.id]["error_note"] = note
    for call_id, extra in options.pop("flags", {}).items():
        flags[call_id] = {**flags.get(call_id, {}), **extra}
    return truth_for(scenario, meta, loop.recorder, runs, flags=flags, **options)


def setup(folder: str) -> Any:
    """A global SDK tracer provider with an in-memory exporter (the instrumentations and the client's own tracing
    take the global one); returns the exporter. No name lookup but the loopback's."""
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    loopback_only_lookups()
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": f"capture-{folder}"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


def capture(
    scenario: Scenario,
    exporter: Any,
    run_span: RunSpan,
    *,
    scope: str,
    meta: Callable[[str], dict[str, Any]],
    span_name: str = "{}",
    incomplete: bool = False,
) -> tuple[list[Any], dict[str, Any]]:
    """Play one scenario and return its spans and truth. `scope`: the tracer the script's run spans come from,
    `span_name` their name (`{}` the agent's); `meta(mode)`: the truth's framework keys; `incomplete`: the
    capture records no call (content capture off),
    so each run that made calls is marked `incomplete` in the truth (see tests/testdata/traces/README.md)."""
    from opentelemetry import trace

    exporter.clear()
    mode = MODE_OF.get(scenario.name, "plain")
    loop = play(scenario, mode, run_span, trace.get_tracer(scope))
    spans = list(exporter.get_finished_spans())
    found = truth(
        scenario, {**meta(mode), "api": f"Messages API, {mode}"}, loop, run_spans(scenario, spans, scope, span_name)
    )
    if incomplete:
        for run in found["runs"]:
            if run["calls"]:
                run["incomplete"] = True
    return spans, found


def main(
    description: str,
    folder: str,
    scenarios: Mapping[str, Scenario],
    play_one: Callable[[Scenario], tuple[list[Any], dict[str, Any]]],
) -> None:
    """`capture.py [--out DIR] [SCENARIO ...]`: each scenario (default: all of `scenarios`) played by `play_one`
    and written into DIR (default: tests/testdata)/traces|truth/`folder`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("scenarios", nargs="*", help="default: all")
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "testdata", help="default: tests/testdata")
    args = parser.parse_args()
    for name in args.scenarios or list(scenarios):
        spans, found = play_one(scenarios[name])
        if write_capture(args.out / "traces" / folder, args.out / "truth" / folder, name, spans, found):
            print(f"wrote {folder}/{name}: {len(spans)} spans")


ALL = SCENARIOS
"""Every canonical scenario: the Messages API expresses each of them."""
TYPED_ERRORS = {
    "k_is_error": replace(
        SCENARIOS["e_tool_error_retry"],
        name="k_is_error",
        description="As e, the failure sent back as `ToolFailure: ...` with `is_error: true` (no 'Error' text).",
    )
}
"""Scenarios whose loop words a failure as Anthropic's examples do: only the `tool_result`'s `is_error` says it."""
