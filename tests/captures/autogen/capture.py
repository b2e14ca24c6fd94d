"""Captures of AutoGen AgentChat (`AssistantAgent` on autogen-ext's `OpenAIChatCompletionClient`).

Two instrumentations write into one trace: autogen-core's own GenAI spans (`create_agent <name>` when
an agent is constructed, `invoke_agent <name>` around `agent.run` and around each turn in a team,
`execute_tool <tool>` around each tool call; tracer `autogen-core` from the global provider, no
arguments or results on them) and the openai-v2 instrumentation in its newest form
(`gen_ai_latest_experimental`, content `span_only`: `chat <model>` spans with `gen_ai.input.messages`
and `gen_ai.output.messages`). The agent runtime's own spans (`autogen publish ...`, `autogen
process ...`) appear in the team scenario.

The agents and scenarios are the shared `autogen_agents.py` (`autogen-openinference/` plays the same runs).
Scenarios: a..i as the kit defines them, f with AutoGen's `AgentTool` (the sub-agent is the tool,
its argument `task`), g as two `agent.run` under the `conversation` span, and `l_round_robin_team`:
g's two agents taking one turn each in a `RoundRobinGroupChat`. c and i stream the model calls
(`model_client_stream=True`). The run span is autogen-core's `invoke_agent <agent>` span.

    /work/venvs/autogen/bin/python tests/captures/autogen/capture.py [--out DIR] [SCENARIO ...]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/captures

os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "span_only"

from autogen_agents import all_scenarios, meta, play
from capture_kit import Agent, Recorder, Scenario, find_span, truth_for, write_capture
from opentelemetry import trace
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

__all__: list[str] = []

REPO = Path(__file__).resolve().parents[3]
FOLDER = "autogen"


def run_span(spans: list[ReadableSpan], agent: Agent) -> ReadableSpan:
    return find_span(spans, f"invoke_agent {agent.name}")


def capture(name: str, scenario: Scenario, exporter: InMemorySpanExporter, out: Path) -> None:
    exporter.clear()
    recorder = Recorder()
    play(scenario, recorder)
    spans = list(exporter.get_finished_spans())
    runs = [run_span(spans, a) for a in scenario.agents]
    version = importlib.metadata.version
    instrumentation = (
        f"autogen-core {version('autogen-core')} GenAI spans (create_agent, invoke_agent, execute_tool)"
        f" + opentelemetry-instrumentation-openai-v2 {version('opentelemetry-instrumentation-openai-v2')}"
        f" / opentelemetry-util-genai {version('opentelemetry-util-genai')} (OTEL_SEMCONV_STABILITY_OPT_IN="
        "gen_ai_latest_experimental, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only)"
    )
    framework = meta(name, instrumentation, "OpenTelemetry GenAI semantic conventions (gen_ai.*)")
    unrecorded = set(scenario.sub_agents)
    truth = truth_for(scenario, framework, recorder, runs, unrecorded=unrecorded)
    write_capture(out / "traces" / FOLDER, out / "truth" / FOLDER, name, spans, truth)
    print(f"wrote {FOLDER}/{name}: {len(spans)} spans, {len({s.context.trace_id for s in spans})} traces")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", help="default: all")
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "testdata", help="default: tests/testdata")
    args = parser.parse_args()
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "capture-autogen"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    OpenAIInstrumentor().instrument()
    known = all_scenarios()
    for name in args.scenarios or list(known):
        capture(name, known[name], exporter, args.out)


if __name__ == "__main__":
    main()
