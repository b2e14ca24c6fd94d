"""Captures of AutoGen AgentChat (`AssistantAgent` on autogen-ext's `OpenAIChatCompletionClient`) traced by
Arize's OpenInference instrumentation for AgentChat.

The same runs as tests/captures/autogen/capture.py (the shared `autogen_agents.py`), traced as a user of
`openinference-instrumentation-autogen-agentchat` does: one OTel SDK tracer provider, set as the global one, and
`AutogenAgentChatInstrumentor().instrument(tracer_provider=...)` (no openai-v2 instrumentation). autogen-core's
own GenAI spans (`create_agent`, `invoke_agent`, `execute_tool`; tracer `autogen-core` from the global provider,
always on) land in the same export: what a user sees. See NOTES.md for what each writes where.

Scenarios: a..i as the kit defines them, f with AutoGen's `AgentTool` (argument `task`), g as two `agent.run`
under the `conversation` span, and `l_round_robin_team` (g's two agents, one turn each, in a
`RoundRobinGroupChat`). c and i stream the model calls (`model_client_stream=True`).

    /work/venvs/autogen-openinference/bin/python tests/captures/autogen-openinference/capture.py \
        [--out DIR] [SCENARIO ...]
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/captures

from autogen_agents import all_scenarios, meta, play
from capture_kit import (
    Agent,
    Recorder,
    Scenario,
    find_span,
    loopback_only_connections,
    out_option,
    truth_for,
    write_capture,
)
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

REFUSED = loopback_only_connections()
"""Connections tried to anything but the loopback address (the script fails when there is one)."""
OUT, _rest = out_option(sys.argv[1:])
"""`--out DIR`: write into DIR/traces and DIR/truth instead of tests/testdata."""
ARGS = [a for a in _rest if not a.startswith("--")]

EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider(resource=Resource.create({"service.name": "capture-autogen-openinference"}))
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(PROVIDER)

from openinference.instrumentation.autogen_agentchat import AutogenAgentChatInstrumentor  # noqa: E402

AutogenAgentChatInstrumentor().instrument(tracer_provider=PROVIDER)

INSTRUMENTATION = "openinference-instrumentation-autogen-agentchat"
REPO = Path(__file__).resolve().parents[3]
FOLDER = "autogen-openinference"
TRACES = (OUT or REPO / "tests" / "testdata") / "traces" / FOLDER
TRUTHS = (OUT or REPO / "tests" / "testdata") / "truth" / FOLDER


def run_span(spans: list[ReadableSpan], agent: Agent) -> ReadableSpan:
    """The run's span: OpenInference's AGENT span `<agent>.on_messages_stream` (graph.node.id = the agent's name)."""
    return find_span(
        spans,
        f"{agent.name}.on_messages_stream",
        attributes={"openinference.span.kind": "AGENT", "graph.node.id": agent.name},
    )


def layers(spans: list[ReadableSpan]) -> dict[str, int]:
    """What the truth says extraction folds (`ExtractStats.skipped`): each autogen-core `invoke_agent` span right
    above the instrumentor's AGENT span of the same agent (`run_layer`), each autogen-core `execute_tool` span
    right under the instrumentor's TOOL span of the same tool (`tool_layer`)."""
    by_id = {s.context.span_id: s for s in spans}
    counts = {"run_layer": 0, "tool_layer": 0}
    for span in spans:
        attrs = span.attributes or {}
        parent = by_id.get(span.parent.span_id) if span.parent is not None else None
        above = (parent.attributes or {}) if parent is not None else {}
        kind = attrs.get("openinference.span.kind")
        if kind == "AGENT" and above.get("gen_ai.operation.name") == "invoke_agent":
            counts["run_layer"] += above.get("gen_ai.agent.name") == attrs.get("graph.node.id")
        elif attrs.get("gen_ai.operation.name") == "execute_tool" and above.get("openinference.span.kind") == "TOOL":
            counts["tool_layer"] += above.get("tool.name") == attrs.get("gen_ai.tool.name")
    return {key: n for key, n in counts.items() if n}


def capture(name: str, scenario: Scenario) -> None:
    EXPORTER.clear()
    recorder = Recorder()
    play(scenario, recorder)
    assert not REFUSED, f"connections refused: {REFUSED}"
    PROVIDER.force_flush()
    spans = list(EXPORTER.get_finished_spans())
    runs = [run_span(spans, a) for a in scenario.agents]
    version = importlib.metadata.version
    framework = meta(
        name,
        f"openinference-instrumentation-autogen-agentchat {version(INSTRUMENTATION)}"
        f" (openinference-instrumentation {version('openinference-instrumentation')}) + autogen-core "
        f"{version('autogen-core')}'s own GenAI spans (create_agent, invoke_agent, execute_tool) on the same "
        "global tracer provider",
        "OpenInference (AGENT <agent>.on_messages_stream, TOOL <agent>.<tool>, LLM "
        "OpenAIChatCompletionClient.create / create_stream) beside autogen-core's OTel GenAI spans",
    )
    truth = truth_for(scenario, framework, recorder, runs, unrecorded=set(scenario.sub_agents))
    truth["skipped"] = layers(spans)
    write_capture(TRACES, TRUTHS, name, spans, truth)
    print(f"wrote {FOLDER}/{name}: {len(spans)} spans, {len({s.context.trace_id for s in spans})} traces")


def main(names: list[str]) -> None:
    known = all_scenarios()
    for name in names or list(known):
        capture(name, known[name])


if __name__ == "__main__":
    main(ARGS)
