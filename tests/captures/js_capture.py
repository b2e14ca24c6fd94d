"""The Python side of the JavaScript captures: what every `capture.py` that drives a `capture.mjs` shares.

Such a script starts the kit's `ScriptedOpenAI` (and, when the Node SDK exports over OTLP/HTTP, a
`Receiver`), writes a spec for `capture.mjs` (`agents_spec` plus its own keys), runs it with node
(`run_node`), checks the model requests (`check_mode`) and the final texts (`check_outputs`), turns
what the tools received into a kit `Recorder` (`recorder_of`), the spans into one
`ExportTraceServiceRequest` (`request_of(without_folder(...))`) and writes the capture (`write_request`).
`main` runs the scenarios named on the command line (`[--out DIR] [scenario ...]`).

Needs only what capture_kit.py needs.
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import tempfile
import threading
from collections.abc import Callable, Collection, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from capture_kit import APP_SPAN_NAME, TOOLS, RecordedCall, Recorder, Scenario, ScriptedOpenAI, otlp_json
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

REPO = Path(__file__).resolve().parents[2]
ID_KEYS = ("traceId", "spanId", "parentSpanId")


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


def package_versions(folder: Path, names: Iterable[str]) -> dict[str, str]:
    """The installed versions of the named packages (from the folder's node_modules)."""
    return {n: json.loads((folder / "node_modules" / n / "package.json").read_text())["version"] for n in names}


def node_version() -> str:
    return subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()


def top_level(scen: Scenario) -> list[str]:
    """The agents a scenario runs itself, in order (a sub-agent runs inside its parent's tool)."""
    subs = set(scen.sub_agents.values())
    return [a.name for a in scen.agents if a.name not in subs]


def agents_spec(scen: Scenario) -> dict[str, Any]:
    """The spec keys every capture.mjs reads: `agents` (name, prompt, tools, instructions), `top_level`,
    `sub_agents` (tool name -> agent) and `app_span` (the application span's name, or None)."""
    top = top_level(scen)
    return {
        "agents": [
            {"name": a.name, "prompt": a.prompt, "tools": list(a.tools), "instructions": a.instructions}
            for a in scen.agents
        ],
        "top_level": top,
        "sub_agents": dict(scen.sub_agents),
        "app_span": APP_SPAN_NAME if len(top) > 1 else None,
    }


def run_node(
    folder: Path, name: str, spec: dict[str, Any], *, timeout: int, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run `node capture.mjs SPEC OUT` in the folder and return its output document.

    Raises when node fails or warns "fetch failed": the framework tried to reach the internet, which a
    capture must not do. `env=None` keeps this process's environment.
    """
    with tempfile.TemporaryDirectory() as tmp:
        spec_path, out_path = Path(tmp, "spec.json"), Path(tmp, "out.json")
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        done = subprocess.run(
            ["node", "capture.mjs", str(spec_path), str(out_path)],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=env,
        )
        if done.returncode != 0 or "fetch failed" in done.stderr:
            raise RuntimeError(f"{name}: capture.mjs failed ({done.returncode}):\n{done.stderr[-3000:]}")
        out: dict[str, Any] = json.loads(out_path.read_text(encoding="utf-8"))
    return out


def play_exported(
    scen: Scenario,
    folder: Path,
    spec: Callable[[str, str], dict[str, Any]],
    check: Callable[[ScriptedOpenAI], None],
    *,
    env: dict[str, str],
    timeout: int = 180,
) -> tuple[dict[str, Any], ExportTraceServiceRequest]:
    """Run capture.mjs against the scripted server and a `Receiver`; its output document and the
    spans the receiver got. `spec(base_url, otlp_endpoint)` is the spec; `check(server)` judges the
    model requests; the top-level runs' final texts must be the scripted ones, in order."""
    with ScriptedOpenAI(scen.script) as server, Receiver() as receiver:
        out = run_node(folder, scen.name, spec(server.base_url, receiver.endpoint), timeout=timeout, env=env)
        server.assert_consumed()
        check(server)
        request = receiver.request()
    check_outputs(scen, out["outputs"])
    return out, request


def check_outputs(scen: Scenario, outputs: list[str], *, ordered: bool = True) -> None:
    """Raise unless the runs' final texts are the scripted ones (of the top-level agents, in order;
    with `ordered=False`, of all agents in any order)."""
    if ordered:
        got, expected = outputs, [a.final_text for a in scen.agents if a.name in top_level(scen)]
    else:
        got, expected = sorted(outputs), sorted(a.final_text for a in scen.agents)
    if got != expected:
        raise AssertionError(f"{scen.name}: final texts {outputs} != scripted {expected}")


def check_mode(
    name: str, server: ScriptedOpenAI, *, responses_api: Collection[str], streamed: Collection[str] | None = None
) -> None:
    """Raise unless every model request used the API the scenario asks for (Responses API for the
    scenarios in `responses_api`) and, unless `streamed` is None, streamed exactly when it asks."""
    path = "/v1/responses" if name in responses_api else "/v1/chat/completions"
    if set(server.paths) != {path}:
        raise AssertionError(f"{name}: model requests {server.paths}")
    if streamed is not None:
        flags = {bool(r.get("stream")) for r in server.requests}
        if flags != {name in streamed}:
            raise AssertionError(f"{name}: stream flags {flags}")


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


def without_folder(node: Any, folder: Path) -> Any:
    """The document with the folder's absolute path (in exception stack traces) replaced by
    `capture-js`, and tests/captures' (the frames of the shared ../capture_tools.mjs) by `capture-js/..`:
    nothing machine-specific in testdata."""
    if isinstance(node, str):
        return node.replace(str(folder), "capture-js").replace(str(folder.parent), "capture-js/..")
    if isinstance(node, dict):
        return {k: without_folder(v, folder) for k, v in node.items()}
    if isinstance(node, list):
        return [without_folder(item, folder) for item in node]
    return node


def spans_of(request: ExportTraceServiceRequest) -> list[Any]:
    return [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]


def attr(span: Any, key: str) -> str | None:
    for kv in span.attributes:
        if kv.key == key:
            return str(kv.value.string_value)
    return None


def one_span(spans: list[Any], what: str, keep: Callable[[Any], bool]) -> tuple[str, str]:
    """(trace id, span id) in hex of the one span `keep` accepts; raises unless there is exactly one."""
    found = [s for s in spans if keep(s)]
    if len(found) != 1:
        raise LookupError(f"{len(found)} {what}")
    return found[0].trace_id.hex(), found[0].span_id.hex()


def write_request(
    out: Path, folder_name: str, name: str, request: ExportTraceServiceRequest, truth: dict[str, Any]
) -> None:
    """Write out/traces/<folder>/<name>.pb and .json and out/truth/<folder>/<name>.truth.json."""
    traces, truths = out / "traces" / folder_name, out / "truth" / folder_name
    traces.mkdir(parents=True, exist_ok=True)
    truths.mkdir(parents=True, exist_ok=True)
    (traces / f"{name}.pb").write_bytes(request.SerializeToString())
    text = json.dumps(otlp_json(request), indent=2, ensure_ascii=False) + "\n"
    (traces / f"{name}.json").write_text(text, encoding="utf-8")
    text = json.dumps(truth, indent=2, ensure_ascii=False) + "\n"
    (truths / f"{name}.truth.json").write_text(text, encoding="utf-8")


def main(capture: Callable[[str, Path], None], default: Iterable[str], doc: str | None = None) -> None:
    """`capture.py [--out DIR] [scenario ...]`: capture each scenario (`default` when none is named)
    into DIR/traces/<folder> and DIR/truth/<folder>; DIR is tests/testdata unless given."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n", 1)[0] or None)
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "testdata", help="default: tests/testdata")
    parser.add_argument("scenarios", nargs="*", metavar="scenario")
    args = parser.parse_args()
    for name in args.scenarios or list(default):
        capture(name, args.out)
