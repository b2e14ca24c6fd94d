"""Capture Semantic Kernel `ChatCompletionAgent` runs traced by Semantic Kernel's own GenAI diagnostics.

Run from the repository root with the semantic-kernel venv (see requirements.txt beside this file):

    /work/venvs/semantic-kernel/bin/python tests/captures/semantic-kernel/capture.py [SCENARIO ...]

Semantic Kernel emits OTel GenAI spans itself once `SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS`
(and `..._SENSITIVE`, for arguments, results and messages) is on; no instrumentation package. Each scenario
runs a `ChatCompletionAgent` whose tools are `@kernel_function`s in a plugin named `tools`, on
`OpenAIChatCompletion` with an `AsyncOpenAI(base_url=...)` client pointed at `ScriptedOpenAI`.

Semantic Kernel offers a function to the model, and names it on its `execute_tool` span, by its fully
qualified name `<plugin>-<function>`, so the script's calls are renamed `tools-get_weather` etc.: that is
the name the model calls and the trace carries. f_agent_as_tool wraps the sub-agent in a `@kernel_function`
(`tools-weather_expert(input)`) that calls its `get_response`: passing the agent itself as a plugin also
works, but Semantic Kernel then records the agent function's `instructions_override: null` in the
arguments of every tool the sub-agent calls (see NOTES.md).
b_sequential and i_parallel_random_ids stream (`invoke_stream`). Semantic Kernel writes the model's
messages and choices (tool calls included) as Python `logging` records, exported here as OTel logs beside
each capture (`<scenario>.logs.pb`/`.json`) through a `LoggingHandler` on its model-diagnostics logger.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from dataclasses import replace
from importlib.metadata import version
from pathlib import Path
from typing import Any

os.environ["SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS"] = "true"
os.environ["SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE"] = "true"

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from capture_kit import (  # noqa: E402
    APP_SPAN_NAME,
    SCENARIOS,
    TOOLS,
    Agent,
    Recorder,
    Scenario,
    ScriptedOpenAI,
    find_span,
    truth_for,
    write_capture,
)
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler  # noqa: E402
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(PROVIDER)
# Semantic Kernel writes the model's messages and choices as Python logging records (`event.name` = gen_ai.*),
# which reach OTel through a LoggingHandler on its model-diagnostics logger.
LOG_EXPORTER = InMemoryLogRecordExporter()
LOGGER_PROVIDER = LoggerProvider()
LOGGER_PROVIDER.add_log_record_processor(SimpleLogRecordProcessor(LOG_EXPORTER))
SK_LOGGER = logging.getLogger("semantic_kernel.utils.telemetry.model_diagnostics.decorators")
SK_LOGGER.addHandler(LoggingHandler(logger_provider=LOGGER_PROVIDER))
SK_LOGGER.setLevel(logging.INFO)

from openai import AsyncOpenAI  # noqa: E402
from semantic_kernel.agents import ChatCompletionAgent  # noqa: E402
from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion  # noqa: E402
from semantic_kernel.functions import KernelPlugin, kernel_function  # noqa: E402

ROOT = HERE.parents[2]
TRACES = ROOT / "tests" / "testdata" / "traces" / "semantic-kernel"
TRUTHS = ROOT / "tests" / "testdata" / "truth" / "semantic-kernel"

META = {
    "framework": "semantic-kernel",
    "framework_version": version("semantic-kernel"),
    "instrumentation": "semantic-kernel built-in GenAI diagnostics "
    "(SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS[_SENSITIVE])",
    "conventions": "OTel GenAI semantic conventions (invoke_agent, execute_tool, chat spans; gen_ai.*)",
}
PLUGIN = "tools"
STREAMED = {"b_sequential", "i_parallel_random_ids"}


def _qualified(name: str) -> str:
    return f"{PLUGIN}-{name}"


def _renamed(sc: Scenario) -> Scenario:
    """The scenario with each tool called by its fully qualified name, `tools-<name>`."""
    for agent in sc.agents:
        for call in agent.calls:
            sc = sc.with_call(call.id, name=_qualified(call.name))
    return replace(sc, failing=tuple((_qualified(n), a) for n, a in sc.failing))


def _agent(agent: Agent, server: ScriptedOpenAI, recorder: Recorder, extra: list[Any]) -> ChatCompletionAgent:
    functions = [] if extra else [kernel_function(recorder.wrap(TOOLS[n], _qualified(n)), name=n) for n in agent.tools]
    service = OpenAIChatCompletion(
        ai_model_id=agent.model, async_client=AsyncOpenAI(base_url=server.base_url, api_key="scripted")
    )
    plugins: list[Any] = extra or [KernelPlugin(name=PLUGIN, functions=functions)]
    return ChatCompletionAgent(
        service=service,
        name=agent.name,
        instructions=agent.instructions,
        description=f"The {agent.name} agent.",
        plugins=plugins,
    )


async def _run(agent: ChatCompletionAgent, prompt: str, stream: bool) -> str:
    if stream:
        parts = [str(chunk.content) async for chunk in agent.invoke_stream(messages=prompt)]
        return "".join(parts)
    response = await agent.get_response(messages=prompt)
    return str(response.content)


async def _play_async(sc: Scenario, recorder: Recorder) -> list[str]:
    stream = sc.name in STREAMED
    with ScriptedOpenAI(sc.script) as server:
        if sc.sub_agents:
            coordinator, expert = sc.agents
            sub = _agent(expert, server, recorder, [])

            async def weather_expert(input: str) -> str:
                """Ask the weather expert agent a question about the weather."""
                return str((await sub.get_response(messages=input)).content)

            tool = kernel_function(recorder.wrap(weather_expert, _qualified(expert.name)), name=expert.name)
            top = _agent(coordinator, server, recorder, [KernelPlugin(name=PLUGIN, functions=[tool])])
            answers = [await _run(top, coordinator.prompt, stream)]
        elif sc.name == "g_two_runs_one_trace":
            with PROVIDER.get_tracer("capture").start_as_current_span(APP_SPAN_NAME):
                answers = [await _run(_agent(a, server, recorder, []), a.prompt, stream) for a in sc.agents]
        else:
            answers = [await _run(_agent(a, server, recorder, []), a.prompt, stream) for a in sc.agents]
        server.assert_consumed()
    return answers


def capture(name: str) -> None:
    base = SCENARIOS[name]
    sc = _renamed(base)
    unrecorded: list[str] = []
    recorder = Recorder()
    EXPORTER.clear()
    LOG_EXPORTER.clear()
    answers = asyncio.run(_play_async(sc, recorder))
    PROVIDER.force_flush()
    spans: list[ReadableSpan] = list(EXPORTER.get_finished_spans())
    expected = [base.agents[0].final_text] if sc.sub_agents else [a.final_text for a in base.agents]
    assert answers == expected, f"{sc.name}: answers {answers} != {expected}"
    runs = {a.name: find_span(spans, f"invoke_agent {a.name}") for a in sc.agents}
    if sc.name == "h_complex_args":
        # Semantic Kernel hands a `str | None` parameter the model's null as the string "None": checked here,
        # the truth keeps the model's null (what the model issued and the span's arguments carry).
        unrecorded.append(_qualified("search_flights"))
        (call,) = base.agents[0].calls
        got = [(c.name, c.args) for c in recorder.calls]
        assert got == [(_qualified("search_flights"), {**call.args, "cabin": "None"})], f"{sc.name}: received {got}"
    truth = truth_for(sc, META, recorder, runs, unrecorded=unrecorded)
    LOGGER_PROVIDER.force_flush()
    written = write_capture(TRACES, TRUTHS, sc.name, spans, truth, logs=LOG_EXPORTER.get_finished_logs())
    print(
        f"{sc.name}: {len(spans)} spans, {[len(r['calls']) for r in truth['runs']]} calls per run -> "
        f"{[p.name for p in written] or 'kept'}"
    )


def main(argv: list[str]) -> None:
    for name in argv or list(SCENARIOS):
        capture(name)


if __name__ == "__main__":
    main(sys.argv[1:])
