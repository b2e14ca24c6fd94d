"""The kit's self-test: a hand-written tool loop on the `openai` client, traced by hand, end to end.

Each scenario's agents run against `ScriptedOpenAI` (Chat Completions; the parallel and complex ones
streamed), with spans made here with the OTel SDK: `invoke_agent <agent>` per run, `execute_tool
<tool>` per call (GenAI semantic conventions), a `conversation` span around g's two runs, and a
sub-agent run inside the coordinator's tool call for f. The kit writes the captures (into a temp
dir unless --out is given, never into tests/testdata), then `toolscore extract` must give exactly
the truth's runs and calls from both encodings.

    /work/venvs/kit/bin/python tests/captures/openai_loop/capture.py [--out DIR] [SCENARIO ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import openai
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
    write_capture,
)
from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

__all__: list[str] = []

REPO = Path(__file__).resolve().parents[3]
STREAMED = {"c_parallel", "h_complex_args", "i_parallel_random_ids"}
META = {
    "framework": "openai (hand-written agent loop, capture kit self-test)",
    "framework_version": openai.__version__,
    "instrumentation": "manual OpenTelemetry SDK spans (invoke_agent / execute_tool)",
    "conventions": "OpenTelemetry GenAI semantic conventions (gen_ai.*)",
}


class Loop:
    """Runs agents of one scenario: model turn, then each tool call in its own span, until text."""

    def __init__(self, scenario: Scenario, client: openai.OpenAI, tracer: trace.Tracer, log: Any) -> None:
        self.scenario, self.client, self.tracer, self.log = scenario, client, tracer, log
        self.recorder = Recorder()
        self.tools: dict[str, Callable[..., Any]] = {}
        for agent in scenario.agents:
            for name in agent.tools:
                if name in scenario.sub_agents:
                    sub = scenario.agent(scenario.sub_agents[name])
                    self.tools[name] = self.recorder.wrap(self._sub_agent(sub), name)
                elif name not in self.tools:
                    self.tools[name] = self.recorder.tools([name])[0]

    def _sub_agent(self, agent: Agent) -> Callable[..., Any]:
        def run_sub_agent(input: str) -> str:
            return self.run(agent, input)

        return run_sub_agent

    def run(self, agent: Agent, prompt: str | None = None) -> str:
        attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent.name}
        with self.tracer.start_as_current_span(f"invoke_agent {agent.name}", attributes=attributes):
            messages: list[Any] = [
                {"role": "system", "content": agent.instructions},
                {"role": "user", "content": prompt or agent.prompt},
            ]
            schemas = [
                {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in agent.tools
            ]
            while True:
                message = self._model(agent, messages, schemas)
                if not message.tool_calls:
                    return message.content or ""
                messages.append(message.model_dump(exclude_none=True))
                for call in message.tool_calls:
                    result = self._tool(call.id, call.function.name, call.function.arguments)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})

    def _model(self, agent: Agent, messages: list[Any], schemas: list[Any]) -> Any:
        if self.scenario.name not in STREAMED:
            return (
                self.client.chat.completions.create(model=agent.model, messages=messages, tools=schemas)
                .choices[0]
                .message
            )
        with self.client.chat.completions.stream(model=agent.model, messages=messages, tools=schemas) as stream:
            return stream.get_final_completion().choices[0].message

    def _tool(self, call_id: str, name: str, arguments: str) -> str:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.call.arguments": arguments,
        }
        with self.tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes) as span:
            try:
                result = str(self.tools[name](**json.loads(arguments)))
            except ToolFailure as exc:
                span.record_exception(exc)
                span.set_status(trace.StatusCode.ERROR, str(exc))
                span.set_attribute("error.type", type(exc).__name__)
                result = f"Error: {exc}"
            span.set_attribute("gen_ai.tool.call.result", result)
            self.log.emit(body=result, event_name="capture.tool_result", attributes={"gen_ai.tool.call.id": call_id})
            return result


def capture(scenario: Scenario, out: Path) -> dict[str, Any]:
    """Run `scenario`, write its capture into out/traces and out/truth, and return the truth."""
    spans_out, logs_out = InMemorySpanExporter(), InMemoryLogRecordExporter()
    resource = Resource.create({"service.name": "capture-openai-loop"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans_out))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs_out))
    tracer = tracer_provider.get_tracer("capture-openai-loop")
    with ScriptedOpenAI(scenario.script) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="scripted", max_retries=0)
        loop = Loop(scenario, client, tracer, logger_provider.get_logger("capture-openai-loop"))
        top = [a for a in scenario.agents if a.name not in scenario.sub_agents.values()]
        if scenario.name == "g_two_runs_one_trace":
            with tracer.start_as_current_span(APP_SPAN_NAME):
                for agent in top:
                    loop.run(agent)
        else:
            for agent in top:
                loop.run(agent)
        server.assert_consumed()
    tracer_provider.shutdown()
    logger_provider.shutdown()
    spans = spans_out.get_finished_spans()
    runs = [find_span(spans, f"invoke_agent {a.name}") for a in scenario.agents]
    truth = truth_for(scenario, META, loop.recorder, runs)
    write_capture(out / "traces", out / "truth", scenario.name, spans, truth, logs=logs_out.get_finished_logs())
    return truth


def check_extract(out: Path, truth: dict[str, Any], toolscore: Path) -> None:
    """`toolscore extract` on both encodings gives the truth's runs and calls exactly."""
    want = [
        {
            "trace_id": r["trace_id"],
            "run_span_id": r["agent_span_id"],
            "agent_name": r["agent_name"],
            "calls": r["calls"],
        }
        for r in truth["runs"]
    ]
    for suffix in (".pb", ".json"):
        path = out / "traces" / f"{truth['scenario']}{suffix}"
        done = subprocess.run([str(toolscore), "extract", str(path)], capture_output=True, text=True, check=True)
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        keys = ("trace_id", "run_span_id", "agent_name", "calls")
        got = [{k: run[k] for k in keys} for run in lines]
        for run in got:  # the truth format's call keys (extract adds error_type)
            run["calls"] = [{k: c[k] for k in ("name", "args", "call_id", "error") if k in c} for c in run["calls"]]
        if got != want:
            raise AssertionError(
                f"{path.name}: extract gave\n{json.dumps(got, indent=1)}\nwant\n{json.dumps(want, indent=1)}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", default=list(SCENARIOS), help="default: all")
    parser.add_argument("--out", type=Path, help="output folder (default: a temporary one, removed)")
    parser.add_argument("--toolscore", type=Path, default=REPO / ".venv" / "bin" / "toolscore")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="capture-kit-") as tmp:
        out = args.out or Path(tmp)
        for name in args.scenarios:
            truth = capture(SCENARIOS[name], out)
            check_extract(out, truth, args.toolscore)
            calls = sum(len(r["calls"]) for r in truth["runs"])
            print(f"ok {name}: {len(truth['runs'])} run(s), {calls} call(s); toolscore extract agrees (.pb, .json)")


if __name__ == "__main__":
    main()
