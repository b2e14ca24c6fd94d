"""The Vercel AI SDK capture, shared by the vercel-ai-v4, -v5 and -v6 folders' capture.py.

Each folder's capture.py names its folder and the scenarios it streams, sends to the Responses API, plays
through a `ToolLoopAgent` or leaves out, and calls `main`; the folder's package.json pins the SDK version
and its capture.mjs passes those packages to the shared ../vercel_ai_capture.mjs, which plays the spec.

For each scenario this starts the kit's scripted OpenAI server and an OTLP/HTTP receiver on
127.0.0.1 (`POST /v1/traces`, `application/x-protobuf`: what a Collector's OTLP receiver gets), writes
a spec for `capture.mjs` (server URL, receiver URL, agents, API, call mode and runner), runs it with node,
and turns the export requests the receiver got into tests/testdata/traces/<folder>/<scenario>.pb/.json
(the requests merged into one `ExportTraceServiceRequest`, in arrival order; only the folder's absolute
path in exception stack traces is replaced by `capture-js`) and the truth, built from the script and
checked against the arguments the JavaScript tool functions received (`recorded`). <folder> is the
capture script's folder name (`vercel-ai-v4`, `vercel-ai-v5`, `vercel-ai-v6`).

Each agent's run is one `generateText` / `streamText` call with `experimental_telemetry: { isEnabled:
true, functionId: <agent name> }` (or, for the `agent` scenarios, one `ToolLoopAgent.generate` /
`.stream` call of an agent built with that telemetry setting, which calls `generateText` / `streamText`
itself): its run span is `ai.generateText` / `ai.streamText` with `ai.telemetry.functionId` = the
agent's name. An agent used as a tool is a tool whose `execute` runs the sub-agent's own run.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capture_kit import SCENARIOS, ScriptedOpenAI, otlp_json, scenario, truth_for
from js_capture import (
    agents_spec,
    attr,
    check_mode,
    main,
    node_version,
    one_span,
    package_versions,
    play_exported,
    recorder_of,
    request_of,
    spans_of,
    without_folder,
    write_request,
)

RUN_OPERATIONS = ("ai.generateText", "ai.streamText")
PACKAGES = ("ai", "@ai-sdk/openai", "@opentelemetry/sdk-trace-node", "@opentelemetry/exporter-trace-otlp-proto")


@dataclass(frozen=True)
class VercelCapture:
    folder: Path
    """The capture script's folder: its capture.mjs and node_modules; its name names the testdata folder."""
    streamed: Collection[str]
    """The scenarios run with streamText(); the others with generateText()."""
    responses_api: Collection[str]
    """The scenarios whose model is openai.responses(); the others' is openai.chat()."""
    unsupported: Collection[str] = ()
    """The scenarios the SDK version cannot play, left out when no scenario is named."""
    agent: Collection[str] = ()
    """The scenarios played through a `ToolLoopAgent` (ai@6+); the others call generateText/streamText."""

    def meta(self, name: str) -> dict[str, str]:
        v = package_versions(self.folder, PACKAGES)
        api = "Responses API" if name in self.responses_api else "Chat Completions"
        call = "streamText()" if name in self.streamed else "generateText()"
        if name in self.agent:
            call = f"ToolLoopAgent.{'stream' if name in self.streamed else 'generate'}() (it calls {call})"
        return {
            "framework": "vercel-ai",
            "framework_version": v["ai"],
            "instrumentation": (
                f"ai {v['ai']} experimental_telemetry (isEnabled, functionId = agent name) through the global "
                f"tracer provider: @opentelemetry/sdk-trace-node {v['@opentelemetry/sdk-trace-node']}, OTLP/HTTP "
                f"protobuf through @opentelemetry/exporter-trace-otlp-proto "
                f"{v['@opentelemetry/exporter-trace-otlp-proto']}; {call}, @ai-sdk/openai {v['@ai-sdk/openai']} "
                f"({api}), node {node_version()}"
            ),
            "conventions": (
                "Vercel AI SDK ai.* spans (ai.operationId ai.generateText / ai.streamText / ai.toolCall ...)"
            ),
        }

    def spec(self, name: str, base_url: str, otlp_endpoint: str) -> dict[str, Any]:
        return {
            "base_url": base_url,
            "otlp_endpoint": otlp_endpoint,
            "api": "responses" if name in self.responses_api else "chat",
            "call": "stream" if name in self.streamed else "generate",
            "runner": "agent" if name in self.agent else "text",
            **agents_spec(scenario(name)),
        }

    def check(self, name: str, server: ScriptedOpenAI) -> None:
        check_mode(name, server, responses_api=self.responses_api, streamed=self.streamed)

    def capture(self, name: str, out: Path) -> None:
        scen = scenario(name)
        played, received = play_exported(
            scen,
            self.folder,
            lambda base_url, endpoint: self.spec(name, base_url, endpoint),
            lambda server: self.check(name, server),
            env={"PATH": "/usr/local/bin:/usr/bin:/bin"},
        )
        request = request_of(without_folder(otlp_json(received), self.folder))
        spans = spans_of(request)
        runs = {agent.name: run_span(spans, agent.name) for agent in scen.agents}
        if len({trace_id for trace_id, _ in runs.values()}) != 1:
            raise AssertionError(f"{name}: runs in several traces {runs}")
        truth = truth_for(scen, self.meta(name), recorder_of(played["recorded"]), runs, unrecorded=set(scen.sub_agents))
        if name in self.streamed:
            truth = with_parsed_args(truth, played["recorded"])
        write_request(out, self.folder.name, name, request, truth)
        print(
            f"{name}: {len(received.resource_spans)} resource spans, {len(spans)} spans, "
            f"{sum(len(r['calls']) for r in truth['runs'])} calls"
        )

    def main(self) -> None:
        main(self.capture, [s for s in SCENARIOS if s not in self.unsupported], __doc__)


def run_span(spans: list[Any], agent_name: str) -> tuple[str, str]:
    """The agent's run span: `ai.generateText` / `ai.streamText` with its functionId."""
    return one_span(
        spans,
        f"run spans of {agent_name!r}",
        lambda s: attr(s, "ai.operationId") in RUN_OPERATIONS and attr(s, "ai.telemetry.functionId") == agent_name,
    )


def with_parsed_args(truth: dict[str, Any], recorded: list[dict[str, Any]]) -> dict[str, Any]:
    """The truth of a streamText run, whose calls' arguments are the input the tool received.

    `streamText` parses each streamed tool call with the tool's schema before it records it: the step's
    `ai.response.toolCalls` and the `ai.toolCall` span both hold that parsed input (zod defaults filled in),
    and no span keeps the model's own text. So a streamed capture's truth lists what the tool received (each
    call by the id the SDK passed it, checked against the script by `truth_for` already); a sub-agent tool,
    recorded by nobody, keeps the model's arguments (its schema changes nothing).
    """
    by_id = {rec["id"]: rec["args"] for rec in recorded}
    for run in truth["runs"]:
        for call in run["calls"]:
            call["args"] = by_id.get(call["call_id"], call["args"])
    truth["args"] = (
        "streamText: the arguments as the ai.* spans record them, the tool's input after its schema "
        "(defaults filled in); the model's own text is in no span"
    )
    return truth
