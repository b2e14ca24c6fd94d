"""Capture LangChain 1.x `create_agent` (LangGraph) runs traced by MLflow Tracing's LangChain autolog, over OTLP.

Run from the capture venv (see requirements.txt), from anywhere:

    /work/venvs/mlflow/bin/python tests/captures/mlflow-langgraph/capture.py [--form react] [--out DIR] [scenario ...]

The canonical scenarios (a..i) and create_agent's own (`../langchain_agents.py`: unknown tool, structured
output, tool retry and model retry middleware, a streamed graph) are played by `create_agent` graphs with
`ChatOpenAI` against the kit's scripted OpenAI server, traced by `mlflow.langchain.autolog()` (MLflow's
`MlflowLangchainTracer` callback), which MLflow exports with its OTLP exporter when
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (`http/protobuf` here) to a receiver on 127.0.0.1
(`js_capture.Receiver`); connections outside the loopback are refused. Captures go to
tests/testdata/traces/mlflow-langgraph/ (truths to tests/testdata/truth/mlflow-langgraph/) unless --out is given;
each is then compared with `toolscore extract` and the differences printed.

`--form react`: the canonical scenarios with LangGraph's prebuilt `create_react_agent` instead
(`../langgraph_agents.py`, as `langgraph-openinference/` plays them: b and c streamed, i through the Responses API),
into tests/testdata/traces/mlflow-langgraph-react/.

`--genai`: exported with `MLFLOW_ENABLE_OTEL_GENAI_SEMCONV=true` (MLflow's translation of every span to the OTel
GenAI conventions, see ../mlflow-openai/NOTES.md), into the form's folder + `-genai`
(tests/testdata/traces/mlflow-langgraph-genai/). The translation renames a CHAIN span `CHAIN`, so the runs of the
truth are found by the span ids the capture saw go into the translator (`mlflow_originals.Originals`).

MLflow marks no LangChain span AGENT: the graph's root callback run is a CHAIN span named after the graph
(`create_agent(name=...)`, `create_react_agent(name=...)`), the run in the truth (see NOTES.md).
"""

from __future__ import annotations

import asyncio
import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))

GENAI = "--genai" in sys.argv
if GENAI:
    sys.argv.remove("--genai")
    os.environ["MLFLOW_ENABLE_OTEL_GENAI_SEMCONV"] = "true"

for _name, _value in {
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "OPENAI_API_KEY": "sk-scripted-not-a-key",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
    "OTEL_SERVICE_NAME": "capture-mlflow-langgraph",
}.items():
    os.environ[_name] = _value

from capture_kit import loopback_only_connections, out_option  # noqa: E402

REFUSED = loopback_only_connections()

from capture_kit import APP_SPAN_NAME, Recorder, ScriptedOpenAI  # noqa: E402
from js_capture import Receiver, attr, spans_of, write_request  # noqa: E402

RECEIVER = Receiver().__enter__()
os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = f"{RECEIVER.endpoint}/v1/traces"

import mlflow  # noqa: E402
from capture_kit import SCENARIOS, truth_for  # noqa: E402
from langchain_agents import all_scenarios, build_agents, check_mode, mode_of, truth_of  # noqa: E402
from langgraph_agents import ModelMode, build_graphs  # noqa: E402
from mlflow_originals import Originals  # noqa: E402
from oi_common import compare_with_extract  # noqa: E402

mlflow.langchain.autolog()
ORIGINALS = Originals()

FORMS = {"create_agent": "mlflow-langgraph", "react": "mlflow-langgraph-react"}
REACT_MODES = {
    "b_sequential": ModelMode(streaming=True),
    "c_parallel": ModelMode(streaming=True),
    "i_parallel_random_ids": ModelMode(responses_api=True),
}


def take_form(argv: list[str]) -> tuple[str, list[str]]:
    """`--form create_agent|react` taken out of the arguments (default: create_agent)."""
    if "--form" not in argv:
        return "create_agent", argv
    at = argv.index("--form")
    form = argv[at + 1] if at + 1 < len(argv) else ""
    if form not in FORMS:
        raise SystemExit(f"--form takes one of {list(FORMS)}")
    return form, argv[:at] + argv[at + 2 :]


def scenarios(form: str) -> dict[str, Any]:
    return all_scenarios() if form == "create_agent" else dict(SCENARIOS)


def model_mode(form: str, name: str) -> ModelMode:
    return mode_of(name) if form == "create_agent" else REACT_MODES.get(name, ModelMode())


def meta(form: str, name: str) -> dict[str, str]:
    prebuilt = "langchain.agents.create_agent" if form == "create_agent" else "langgraph.prebuilt.create_react_agent"
    return {
        "framework": "langchain" if form == "create_agent" else "langgraph",
        "framework_version": version("langchain" if form == "create_agent" else "langgraph"),
        "instrumentation": (
            f"mlflow-tracing {version('mlflow-tracing')} (mlflow.langchain.autolog()), exported by its OTLP "
            f"exporter (opentelemetry-exporter-otlp-proto-http {version('opentelemetry-exporter-otlp-proto-http')}, "
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set); "
            f"{prebuilt}, langgraph {version('langgraph')}, langchain-core "
            f"{version('langchain-core')}, langchain-openai {version('langchain-openai')} "
            f"({model_mode(form, name).describe()})"
        ),
        "conventions": (
            "OTel GenAI semantic conventions as MLflow translates its spans (MLFLOW_ENABLE_OTEL_GENAI_SEMCONV=true)"
            if GENAI
            else (
                "MLflow Tracing span attributes (mlflow.spanType CHAIN/CHAT_MODEL/TOOL, mlflow.spanInputs, "
                "mlflow.spanOutputs)"
            )
        ),
    }


def run_span(spans: list[Any], agent_name: str) -> tuple[str, str]:
    """The graph's root callback run: the CHAIN span named after the graph (a sub-agent's is the child of the
    delegating TOOL span of the same name, so TOOL is excluded). A create_react_agent sub-agent's root (f) runs in
    the `tools` node's metadata, so it is a run inferred there, at that span."""
    found = [s for s in spans if ORIGINALS.name_and_type(s, attr) == (agent_name, "CHAIN")]
    if len(found) != 1:
        raise LookupError(f"{len(found)} CHAIN spans named {agent_name}: {sorted({s.name for s in spans})}")
    return found[0].trace_id.hex(), found[0].span_id.hex()


def flush() -> None:
    from mlflow.tracing.provider import provider

    provider.get().force_flush()


async def capture(form: str, name: str, out: Path) -> None:
    scen = scenarios(form)[name]
    mode = model_mode(form, name)
    recorder = Recorder()
    RECEIVER.bodies.clear()
    ORIGINALS.clear()
    with ScriptedOpenAI(scen.script) as server:
        built: Any = (
            build_agents(scen, server, recorder, mode)
            if form == "create_agent"
            else build_graphs(scen, server.base_url, recorder, mode)
        )
        if len(built.top_level(scen)) > 1:
            with mlflow.start_span(name=APP_SPAN_NAME):
                await built.play(scen)
        else:
            await built.play(scen)
        server.assert_consumed()
        check_mode(server, mode)
    built.check(scen)
    flush()
    request = RECEIVER.request()
    spans = spans_of(request)
    runs = {agent.name: run_span(spans, agent.name) for agent in scen.agents}
    if form == "create_agent":
        truth = truth_of(scen, meta(form, name), recorder, runs)
        if GENAI and scen.sub_agents:  # renamed `CHAIN`, a sub-agent's root is known by no name: its run is inferred
            truth["inferred_runs"] = len(scen.sub_agents)
    else:
        truth = truth_for(scen, meta(form, name), recorder, runs, unrecorded=set(scen.sub_agents))
        if scen.sub_agents:  # the sub-agent's graph runs in the `tools` node's metadata: its run is inferred
            truth["inferred_runs"] = len(scen.sub_agents)
    folder = FORMS[form] + ("-genai" if GENAI else "")
    write_request(out, folder, name, request, truth)
    print(f"wrote {folder}/{name}: {len(spans)} spans")
    toolscore = REPO / ".venv" / "bin" / "toolscore"
    for line in compare_with_extract(out / "traces" / folder / f"{name}.pb", truth, toolscore):
        print(f"  {name}: {line}")


async def main(argv: list[str]) -> None:
    form, argv = take_form(argv)
    out, names = out_option(argv)
    for name in names or list(scenarios(form)):
        await capture(form, name, out or REPO / "tests" / "testdata")
    if REFUSED:
        raise SystemExit(f"connections refused (outside the loopback): {REFUSED}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
