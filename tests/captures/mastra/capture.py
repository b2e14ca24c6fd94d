"""Capture Mastra agent runs traced by Mastra's own observability through `@mastra/otel-exporter`.

Needs Node 20+ with this folder's packages (`npm ci` here) and a Python with the kit's requirements
(requirements.txt: opentelemetry-sdk, opentelemetry-proto, protobuf). From anywhere:

    (cd tests/captures/mastra && npm ci)
    .venv/bin/python tests/captures/mastra/capture.py [--out DIR] [scenario ...]   # or any venv with requirements.txt

For each scenario this script starts the kit's scripted OpenAI server and an OTLP/HTTP receiver on
127.0.0.1 (`POST /v1/traces`, `application/x-protobuf`: what a Collector's OTLP receiver gets), writes
a spec for `capture.mjs` (server URL, receiver URL, agents, API and call mode), runs it with node, and
turns the export requests the receiver got into tests/testdata/traces/mastra/<scenario>.pb/.json (the
requests merged into one `ExportTraceServiceRequest`, in arrival order; only this folder's absolute
path in exception stack traces is replaced by `capture-js`) and the truth, built from the script and
checked against the arguments the JavaScript tool functions received (`recorded`).

Mastra builds its own span tree and ids; the exporter converts each ended Mastra span to an OTel span
(scope `@mastra/otel-exporter`). The run span of each run is `invoke_agent <agent name>`
(`mastra.span.type=agent_run`). An agent used as a tool is Mastra's own sub-agent (`agents: { key:
agent }`), which the parent's model sees as the tool `agent-<key>` with arguments `{"prompt": ...}`.

The receiver, node run, checks and file writing are the kit's js_capture.py; `--out DIR` writes into
DIR/traces and DIR/truth instead of tests/testdata.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from capture_kit import SCENARIOS, Scenario, ScriptedOpenAI, otlp_json, scenario, truth_for  # noqa: E402
from js_capture import (  # noqa: E402
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

FOLDER = "mastra"

STREAMED = {"b_sequential", "c_parallel"}  # agent.stream(); the others agent.generate()
RESPONSES_API = {"i_parallel_random_ids"}  # openai.responses(); the others openai.chat()
SUB_AGENT_TOOL = "agent-{}"  # the tool Mastra offers the parent's model for `agents: { key: agent }`
PACKAGES = (
    "@mastra/core",
    "@mastra/observability",
    "@mastra/otel-exporter",
    "@ai-sdk/openai",
    "@opentelemetry/exporter-trace-otlp-proto",
)


def meta(name: str) -> dict[str, str]:
    v = package_versions(HERE, PACKAGES)
    api = "Responses API" if name in RESPONSES_API else "Chat Completions"
    call = "agent.stream()" if name in STREAMED else "agent.generate()"
    return {
        "framework": "mastra",
        "framework_version": v["@mastra/core"],
        "instrumentation": (
            f"@mastra/observability {v['@mastra/observability']} with @mastra/otel-exporter "
            f"{v['@mastra/otel-exporter']} (custom provider, OTLP/HTTP protobuf through "
            f"@opentelemetry/exporter-trace-otlp-proto {v['@opentelemetry/exporter-trace-otlp-proto']}); "
            f"{call}, @ai-sdk/openai {v['@ai-sdk/openai']} ({api}), node {node_version()}"
        ),
        "conventions": (
            "Mastra span types (mastra.span.type agent_run / model_step / tool_call ...) converted to OTel "
            "GenAI v1.38 (invoke_agent / execute_tool, gen_ai.*)"
        ),
    }


def adapted(scen: Scenario) -> Scenario:
    """The scenario as Mastra expresses it: an agent used as a tool is the sub-agent tool `agent-<key>`,
    whose one required argument is `prompt`."""
    for tool_name in scen.sub_agents:
        for agent in scen.agents:
            for call in agent.calls:
                if call.name == tool_name:
                    prompt = json.loads(call.arguments)["input"]
                    scen = scen.with_call(call.id, name=SUB_AGENT_TOOL.format(tool_name), args={"prompt": prompt})
    return scen


def spec_for(scen: Scenario, base_url: str, otlp_endpoint: str) -> dict[str, Any]:
    return {
        "base_url": base_url,
        "otlp_endpoint": otlp_endpoint,
        "api": "responses" if scen.name in RESPONSES_API else "chat",
        "call": "stream" if scen.name in STREAMED else "generate",
        **agents_spec(scen),
    }


def check(name: str, server: ScriptedOpenAI) -> None:
    """Raise unless every model request used the API the scenario asks for."""
    check_mode(name, server, responses_api=RESPONSES_API)


def run_span(spans: list[Any], agent_name: str) -> tuple[str, str]:
    """The agent's `agent_run` span (`invoke_agent <name>`), named by `gen_ai.agent.name`."""
    return one_span(
        spans,
        f"agent_run spans of {agent_name!r}",
        lambda s: attr(s, "mastra.span.type") == "agent_run" and attr(s, "gen_ai.agent.name") == agent_name,
    )


def capture(name: str, out_dir: Path) -> None:
    scen = adapted(scenario(name))
    out, received = play_exported(
        scen,
        HERE,
        lambda base_url, endpoint: spec_for(scen, base_url, endpoint),
        lambda server: check(name, server),
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "MASTRA_TELEMETRY_DISABLED": "1"},
    )
    request = request_of(without_folder(otlp_json(received), HERE))
    spans = spans_of(request)
    runs = {agent.name: run_span(spans, agent.name) for agent in scen.agents}
    for run in out["runs"]:
        if run["traceId"] != runs[run["agent"]][0]:
            raise AssertionError(f"{name}: {run['agent']} ran in trace {run['traceId']}, its span is elsewhere")
    sub_tools = {SUB_AGENT_TOOL.format(t) for t in scen.sub_agents}
    truth = truth_for(scen, meta(name), recorder_of(out["recorded"]), runs, unrecorded=sub_tools)
    write_request(out_dir, FOLDER, name, request, truth)
    print(
        f"{name}: {len(received.resource_spans)} resource spans, {len(spans)} spans, "
        f"{sum(len(r['calls']) for r in truth['runs'])} calls"
    )


if __name__ == "__main__":
    main(capture, SCENARIOS, __doc__)
