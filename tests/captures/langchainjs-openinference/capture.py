"""Capture LangGraph.js `createReactAgent` runs traced by OpenInference's LangChain.js instrumentation.

Needs Node 20 with this folder's packages (`npm ci` here) and a Python with the kit's requirements
(requirements.txt: opentelemetry-sdk, opentelemetry-proto, protobuf). From anywhere:

    (cd tests/captures/langchainjs-openinference && npm ci)
    /work/venvs/langgraph-openinference/bin/python tests/captures/langchainjs-openinference/capture.py [scenario ...]

For each scenario this script starts the kit's scripted OpenAI server, writes a spec for
`capture.mjs` (server URL, agents, tools, streaming), runs it with node, and turns what it writes into
tests/testdata/traces/langchainjs-openinference/<scenario>.pb/.json (the spans as the Node SDK exported
them, re-encoded from OTLP/JSON to protobuf; only this folder's absolute path in exception stack traces
is replaced by `capture-js`) and the truth, built from the script and checked against the arguments
the JavaScript tool functions received (`recorded`).

The run span of each run is the graph's root span, named after `createReactAgent({ name })`. The
JS instrumentation takes the span kind from the LangChain run type, so that span is always a CHAIN
(there is no AGENT span at all), and the model node span `agent` is a CHAIN too.

The node run, checks and file writing are the kit's js_capture.py; `--out DIR` writes into
DIR/traces and DIR/truth instead of tests/testdata.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from capture_kit import SCENARIOS, Scenario, ScriptedOpenAI, scenario, truth_for  # noqa: E402
from js_capture import (  # noqa: E402
    agents_spec,
    attr,
    check_mode,
    check_outputs,
    main,
    node_version,
    one_span,
    package_versions,
    recorder_of,
    request_of,
    run_node,
    spans_of,
    without_folder,
    write_request,
)

FOLDER = "langchainjs-openinference"

STREAMED = {"b_sequential", "c_parallel"}
RESPONSES_API = {"i_parallel_random_ids"}
PACKAGES = (
    "@langchain/langgraph",
    "@langchain/core",
    "@langchain/openai",
    "@arizeai/openinference-instrumentation-langchain",
    "@opentelemetry/sdk-trace-node",
    "@opentelemetry/otlp-transformer",
)


def meta(name: str) -> dict[str, str]:
    v = package_versions(HERE, PACKAGES)
    api = "Responses API" if name in RESPONSES_API else "Chat Completions"
    return {
        "framework": "langgraph-js",
        "framework_version": v["@langchain/langgraph"],
        "instrumentation": (
            f"@arizeai/openinference-instrumentation-langchain {v['@arizeai/openinference-instrumentation-langchain']} "
            f"(manuallyInstrument); @langchain/core {v['@langchain/core']}, @langchain/openai "
            f"{v['@langchain/openai']} ({api}, {'streamed' if name in STREAMED else 'not streamed'}), "
            f"@opentelemetry/sdk-trace-node {v['@opentelemetry/sdk-trace-node']}, node {node_version()}"
        ),
        "conventions": (
            "OpenInference semantic conventions (openinference.span.kind CHAIN/LLM/TOOL, tool.name, "
            "input.value, output.value, metadata)"
        ),
    }


def spec_for(scen: Scenario, base_url: str) -> dict[str, Any]:
    return {
        "base_url": base_url,
        "stream": scen.name in STREAMED,
        "responses_api": scen.name in RESPONSES_API,
        **agents_spec(scen),
    }


def play(scen: Scenario) -> dict[str, Any]:
    """Run capture.mjs for the scenario against the scripted server; its output document.

    node failing on "fetch failed" (see `run_node`) matters here: LangChain.js fetches tiktoken
    encodings to estimate token counts, which the capture must not do."""
    with ScriptedOpenAI(scen.script) as server:
        out = run_node(HERE, scen.name, spec_for(scen, server.base_url), timeout=120)
        server.assert_consumed()
        check_mode(scen.name, server, responses_api=RESPONSES_API, streamed=STREAMED)
    check_outputs(scen, out["outputs"], ordered=False)
    return out


def run_span(spans: list[Any], agent_name: str) -> tuple[str, str]:
    """The graph's root span: named after the graph, a CHAIN (the TOOL span of an agent-as-tool has
    the same name and is excluded by its kind)."""
    return one_span(
        spans,
        f"CHAIN spans named {agent_name!r}",
        lambda s: s.name == agent_name and attr(s, "openinference.span.kind") == "CHAIN",
    )


def capture(name: str, out_dir: Path) -> None:
    scen = scenario(name)
    out = play(scen)
    request = request_of(without_folder(out["otlp"], HERE))
    spans = spans_of(request)
    runs = {agent.name: run_span(spans, agent.name) for agent in scen.agents}
    truth = truth_for(scen, meta(scen.name), recorder_of(out["recorded"]), runs, unrecorded=scen.sub_agents.keys())
    write_request(out_dir, FOLDER, scen.name, request, truth)
    print(f"{scen.name}: {len(spans)} spans, {sum(len(r['calls']) for r in truth['runs'])} calls")


if __name__ == "__main__":
    main(capture, SCENARIOS, __doc__)
