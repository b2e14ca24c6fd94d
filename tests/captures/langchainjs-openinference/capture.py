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
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))

from capture_kit import (  # noqa: E402
    APP_SPAN_NAME,
    SCENARIOS,
    TOOLS,
    RecordedCall,
    Recorder,
    Scenario,
    ScriptedOpenAI,
    otlp_json,
    scenario,
    truth_for,
)
from google.protobuf import json_format  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

FOLDER = "langchainjs-openinference"
TRACES = REPO / "tests" / "testdata" / "traces" / FOLDER
TRUTH = REPO / "tests" / "testdata" / "truth" / FOLDER

STREAMED = {"b_sequential", "c_parallel"}
RESPONSES_API = {"i_parallel_random_ids"}
ID_KEYS = ("traceId", "spanId", "parentSpanId")


def package_versions() -> dict[str, str]:
    """The installed versions of the packages the capture depends on (from node_modules)."""
    names = (
        "@langchain/langgraph",
        "@langchain/core",
        "@langchain/openai",
        "@arizeai/openinference-instrumentation-langchain",
        "@opentelemetry/sdk-trace-node",
        "@opentelemetry/otlp-transformer",
    )
    return {n: json.loads((HERE / "node_modules" / n / "package.json").read_text())["version"] for n in names}


def meta(name: str) -> dict[str, str]:
    v = package_versions()
    api = "Responses API" if name in RESPONSES_API else "Chat Completions"
    return {
        "framework": "langgraph-js",
        "framework_version": v["@langchain/langgraph"],
        "instrumentation": (
            f"@arizeai/openinference-instrumentation-langchain {v['@arizeai/openinference-instrumentation-langchain']} "
            f"(manuallyInstrument); @langchain/core {v['@langchain/core']}, @langchain/openai "
            f"{v['@langchain/openai']} ({api}, {'streamed' if name in STREAMED else 'not streamed'}), "
            f"@opentelemetry/sdk-trace-node {v['@opentelemetry/sdk-trace-node']}, node {_node_version()}"
        ),
        "conventions": (
            "OpenInference semantic conventions (openinference.span.kind CHAIN/LLM/TOOL, tool.name, "
            "input.value, output.value, metadata)"
        ),
    }


def _node_version() -> str:
    return subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()


def spec_for(scen: Scenario, base_url: str) -> dict[str, Any]:
    subs = set(scen.sub_agents.values())
    top = [a.name for a in scen.agents if a.name not in subs]
    return {
        "base_url": base_url,
        "stream": scen.name in STREAMED,
        "responses_api": scen.name in RESPONSES_API,
        "agents": [
            {"name": a.name, "prompt": a.prompt, "tools": list(a.tools), "instructions": a.instructions}
            for a in scen.agents
        ],
        "top_level": top,
        "sub_agents": dict(scen.sub_agents),
        "app_span": APP_SPAN_NAME if len(top) > 1 else None,
    }


def play(scen: Scenario) -> dict[str, Any]:
    """Run capture.mjs for the scenario against the scripted server; its output document."""
    with ScriptedOpenAI(scen.script) as server, tempfile.TemporaryDirectory() as tmp:
        spec_path, out_path = Path(tmp, "spec.json"), Path(tmp, "out.json")
        spec_path.write_text(json.dumps(spec_for(scen, server.base_url)), encoding="utf-8")
        done = subprocess.run(
            ["node", "capture.mjs", str(spec_path), str(out_path)],
            cwd=HERE,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0 or "fetch failed" in done.stderr:
            # A "fetch failed" warning means the framework tried to reach the internet (LangChain.js
            # fetches tiktoken encodings to estimate token counts): the capture must not.
            raise RuntimeError(f"{scen.name}: capture.mjs failed ({done.returncode}):\n{done.stderr[-3000:]}")
        server.assert_consumed()
        check_mode(scen.name, server)
        out: dict[str, Any] = json.loads(out_path.read_text(encoding="utf-8"))
    expected = sorted(a.final_text for a in scen.agents)
    if sorted(out["outputs"]) != expected:
        raise AssertionError(f"{scen.name}: final texts {out['outputs']} != scripted {expected}")
    return out


def check_mode(name: str, server: ScriptedOpenAI) -> None:
    """Raise unless every model request used the API and streaming the scenario asks for."""
    path = "/v1/responses" if name in RESPONSES_API else "/v1/chat/completions"
    streamed = {bool(body.get("stream")) for body in server.requests}
    if set(server.paths) != {path} or streamed != {name in STREAMED}:
        raise AssertionError(f"{name}: model requests {server.paths} streamed {streamed}")


def recorder_of(recorded: list[dict[str, Any]]) -> Recorder:
    """A kit `Recorder` holding what the JavaScript tools received (defaults filled in by signature)."""
    recorder = Recorder()
    for fn in TOOLS.values():
        recorder.wrap(fn)  # registers the signature used to fill in defaults
    for rec in recorded:
        args = dict(rec["args"])
        recorder.calls.append(RecordedCall(rec["name"], args, recorder.full_args(rec["name"], args), rec["error"]))
    return recorder


def request_of(otlp: dict[str, Any]) -> ExportTraceServiceRequest:
    """The OTLP/JSON document as a protobuf request (hex ids back to the bytes protobuf's JSON wants)."""

    def unhex(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: base64.b64encode(bytes.fromhex(v)).decode() if k in ID_KEYS and isinstance(v, str) else unhex(v)
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [unhex(item) for item in node]
        return node

    request = ExportTraceServiceRequest()
    json_format.ParseDict(unhex(otlp), request)
    return request


def spans_of(request: ExportTraceServiceRequest) -> list[Any]:
    return [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]


def attr(span: Any, key: str) -> str | None:
    for kv in span.attributes:
        if kv.key == key:
            return str(kv.value.string_value)
    return None


def run_span(spans: list[Any], agent_name: str) -> tuple[str, str]:
    """The graph's root span: named after the graph, a CHAIN (the TOOL span of an agent-as-tool has
    the same name and is excluded by its kind)."""
    found = [s for s in spans if s.name == agent_name and attr(s, "openinference.span.kind") == "CHAIN"]
    if len(found) != 1:
        raise LookupError(f"{len(found)} CHAIN spans named {agent_name!r}")
    return found[0].trace_id.hex(), found[0].span_id.hex()


def without_folder(node: Any) -> Any:
    """The document with this folder's absolute path (in exception stack traces) replaced by
    `capture-js`, as in the vercel-ai captures: nothing machine-specific in testdata."""
    if isinstance(node, str):
        return node.replace(str(HERE), "capture-js")
    if isinstance(node, dict):
        return {k: without_folder(v) for k, v in node.items()}
    if isinstance(node, list):
        return [without_folder(item) for item in node]
    return node


def capture(scen: Scenario) -> None:
    out = play(scen)
    request = request_of(without_folder(out["otlp"]))
    spans = spans_of(request)
    runs = {agent.name: run_span(spans, agent.name) for agent in scen.agents}
    truth = truth_for(scen, meta(scen.name), recorder_of(out["recorded"]), runs, unrecorded=scen.sub_agents.keys())
    TRACES.mkdir(parents=True, exist_ok=True)
    TRUTH.mkdir(parents=True, exist_ok=True)
    (TRACES / f"{scen.name}.pb").write_bytes(request.SerializeToString())
    text = json.dumps(otlp_json(request), indent=2, ensure_ascii=False) + "\n"
    (TRACES / f"{scen.name}.json").write_text(text, encoding="utf-8")
    text = json.dumps(truth, indent=2, ensure_ascii=False) + "\n"
    (TRUTH / f"{scen.name}.truth.json").write_text(text, encoding="utf-8")
    print(f"{scen.name}: {len(spans)} spans, {sum(len(r['calls']) for r in truth['runs'])} calls")


if __name__ == "__main__":
    for name in sys.argv[1:] or list(SCENARIOS):
        capture(scenario(name))
