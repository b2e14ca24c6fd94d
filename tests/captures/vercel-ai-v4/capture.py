"""Capture Vercel AI SDK runs traced by the SDK's built-in `experimental_telemetry` (the `ai.*` spans).

Needs Node 20+ with this folder's packages (`npm ci` here) and a Python with the kit's requirements
(requirements.txt: opentelemetry-sdk, opentelemetry-proto, protobuf). From anywhere:

    (cd tests/captures/vercel-ai-v4 && npm ci)
    .venv/bin/python tests/captures/vercel-ai-v4/capture.py [scenario ...]   # or any venv with requirements.txt

For each scenario this script starts the kit's scripted OpenAI server and an OTLP/HTTP receiver on
127.0.0.1 (`POST /v1/traces`, `application/x-protobuf`: what a Collector's OTLP receiver gets), writes
a spec for `capture.mjs` (server URL, receiver URL, agents, API and call mode), runs it with node, and
turns the export requests the receiver got into tests/testdata/traces/<folder>/<scenario>.pb/.json (the
requests merged into one `ExportTraceServiceRequest`, in arrival order; only this folder's absolute
path in exception stack traces is replaced by `capture-js`) and the truth, built from the script and
checked against the arguments the JavaScript tool functions received (`recorded`). <folder> is this
script's folder name (`vercel-ai-v4`).

Each agent's run is one `generateText` / `streamText` call with `experimental_telemetry: { isEnabled:
true, functionId: <agent name> }`: its run span is `ai.generateText` / `ai.streamText` with
`ai.telemetry.functionId` = the agent's name. An agent used as a tool is a tool whose `execute` runs the
sub-agent's own `generateText`.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

FOLDER = HERE.name
TRACES = REPO / "tests" / "testdata" / "traces" / FOLDER
TRUTH = REPO / "tests" / "testdata" / "truth" / FOLDER

STREAMED = {"b_sequential", "c_parallel"}  # streamText(); the others generateText()
RESPONSES_API = {"c_parallel", "h_complex_args", "i_parallel_random_ids"}  # openai.responses(); others .chat()
RUN_OPERATIONS = ("ai.generateText", "ai.streamText")
UNSUPPORTED = {"e_tool_error_retry"}  # ai@4 ends the run on a tool's error (ToolExecutionError): no retry step
ID_KEYS = ("traceId", "spanId", "parentSpanId")


def package_versions() -> dict[str, str]:
    """The installed versions of the packages the capture depends on (from node_modules)."""
    names = ("ai", "@ai-sdk/openai", "@opentelemetry/sdk-trace-node", "@opentelemetry/exporter-trace-otlp-proto")
    return {n: json.loads((HERE / "node_modules" / n / "package.json").read_text())["version"] for n in names}


def meta(name: str) -> dict[str, str]:
    v = package_versions()
    api = "Responses API" if name in RESPONSES_API else "Chat Completions"
    call = "streamText()" if name in STREAMED else "generateText()"
    return {
        "framework": "vercel-ai",
        "framework_version": v["ai"],
        "instrumentation": (
            f"ai {v['ai']} experimental_telemetry (isEnabled, functionId = agent name) through the global "
            f"tracer provider: @opentelemetry/sdk-trace-node {v['@opentelemetry/sdk-trace-node']}, OTLP/HTTP "
            f"protobuf through @opentelemetry/exporter-trace-otlp-proto "
            f"{v['@opentelemetry/exporter-trace-otlp-proto']}; {call}, @ai-sdk/openai {v['@ai-sdk/openai']} "
            f"({api}), node {_node_version()}"
        ),
        "conventions": "Vercel AI SDK ai.* spans (ai.operationId ai.generateText / ai.streamText / ai.toolCall ...)",
    }


def _node_version() -> str:
    return subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()


class Receiver:
    """An OTLP/HTTP trace receiver on 127.0.0.1: keeps every `POST /v1/traces` protobuf body."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        bodies = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self._body()
                if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_error(404, f"unexpected {self.path} {self.headers.get('Content-Type')}")
                    return
                ExportTraceServiceRequest.FromString(body)  # raises on a malformed export
                bodies.append(body)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def _body(self) -> bytes:
                """The request body, sent with a length or chunked (Node's exporter sends it chunked)."""
                if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
                    return self.rfile.read(int(self.headers.get("Content-Length") or 0))
                parts = []
                while size := int(self.rfile.readline().split(b";")[0].strip(), 16):
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()
                self.rfile.readline()  # the blank line after the last chunk (no trailers are sent)
                return b"".join(parts)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def request(self) -> ExportTraceServiceRequest:
        """Every export received, as one request (their resource spans in arrival order)."""
        merged = ExportTraceServiceRequest()
        for body in self.bodies:
            merged.MergeFromString(body)
        return merged


def spec_for(scen: Scenario, base_url: str, otlp_endpoint: str) -> dict[str, Any]:
    subs = set(scen.sub_agents.values())
    top = [a.name for a in scen.agents if a.name not in subs]
    return {
        "base_url": base_url,
        "otlp_endpoint": otlp_endpoint,
        "api": "responses" if scen.name in RESPONSES_API else "chat",
        "call": "stream" if scen.name in STREAMED else "generate",
        "agents": [
            {"name": a.name, "prompt": a.prompt, "tools": list(a.tools), "instructions": a.instructions}
            for a in scen.agents
        ],
        "top_level": top,
        "sub_agents": dict(scen.sub_agents),
        "app_span": APP_SPAN_NAME if len(top) > 1 else None,
    }


def play(scen: Scenario) -> tuple[dict[str, Any], ExportTraceServiceRequest]:
    """Run capture.mjs for the scenario; its output document and the spans the receiver got."""
    with ScriptedOpenAI(scen.script) as server, Receiver() as receiver, tempfile.TemporaryDirectory() as tmp:
        spec_path, out_path = Path(tmp, "spec.json"), Path(tmp, "out.json")
        spec_path.write_text(json.dumps(spec_for(scen, server.base_url, receiver.endpoint)), encoding="utf-8")
        done = subprocess.run(
            ["node", "capture.mjs", str(spec_path), str(out_path)],
            cwd=HERE,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
            env={"PATH": "/usr/local/bin:/usr/bin:/bin"},
        )
        if done.returncode != 0 or "fetch failed" in done.stderr:
            raise RuntimeError(f"{scen.name}: capture.mjs failed ({done.returncode}):\n{done.stderr[-3000:]}")
        server.assert_consumed()
        check_mode(scen.name, server)
        out: dict[str, Any] = json.loads(out_path.read_text(encoding="utf-8"))
        request = receiver.request()
    subs = set(scen.sub_agents.values())
    expected = [a.final_text for a in scen.agents if a.name not in subs]
    if out["outputs"] != expected:
        raise AssertionError(f"{scen.name}: final texts {out['outputs']} != scripted {expected}")
    return out, request


def check_mode(name: str, server: ScriptedOpenAI) -> None:
    """Raise unless every model request used the API (and streaming) the scenario asks for."""
    path = "/v1/responses" if name in RESPONSES_API else "/v1/chat/completions"
    if set(server.paths) != {path}:
        raise AssertionError(f"{name}: model requests {server.paths}")
    streamed = {bool(r.get("stream")) for r in server.requests}
    if streamed != {name in STREAMED}:
        raise AssertionError(f"{name}: stream flags {streamed}")


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


def spans_of(request: ExportTraceServiceRequest) -> list[Any]:
    return [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]


def attr(span: Any, key: str) -> str | None:
    for kv in span.attributes:
        if kv.key == key:
            return str(kv.value.string_value)
    return None


def run_span(spans: list[Any], agent_name: str) -> tuple[str, str]:
    """The agent's run span: `ai.generateText` / `ai.streamText` with its functionId."""
    found = [
        s
        for s in spans
        if attr(s, "ai.operationId") in RUN_OPERATIONS and attr(s, "ai.telemetry.functionId") == agent_name
    ]
    if len(found) != 1:
        raise LookupError(f"{len(found)} run spans of {agent_name!r}")
    return found[0].trace_id.hex(), found[0].span_id.hex()


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


def capture(name: str) -> None:
    scen = scenario(name)
    out, received = play(scen)
    request = request_of(without_folder(otlp_json(received)))
    spans = spans_of(request)
    runs = {agent.name: run_span(spans, agent.name) for agent in scen.agents}
    if len({trace_id for trace_id, _ in runs.values()}) != 1:
        raise AssertionError(f"{name}: runs in several traces {runs}")
    truth = truth_for(scen, meta(name), recorder_of(out["recorded"]), runs, unrecorded=set(scen.sub_agents))
    if name in STREAMED:
        truth = with_parsed_args(truth, out["recorded"])
    TRACES.mkdir(parents=True, exist_ok=True)
    TRUTH.mkdir(parents=True, exist_ok=True)
    (TRACES / f"{name}.pb").write_bytes(request.SerializeToString())
    text = json.dumps(otlp_json(request), indent=2, ensure_ascii=False) + "\n"
    (TRACES / f"{name}.json").write_text(text, encoding="utf-8")
    text = json.dumps(truth, indent=2, ensure_ascii=False) + "\n"
    (TRUTH / f"{name}.truth.json").write_text(text, encoding="utf-8")
    print(
        f"{name}: {len(received.resource_spans)} resource spans, {len(spans)} spans, "
        f"{sum(len(r['calls']) for r in truth['runs'])} calls"
    )


if __name__ == "__main__":
    for scenario_name in sys.argv[1:] or [s for s in SCENARIOS if s not in UNSUPPORTED]:
        capture(scenario_name)
