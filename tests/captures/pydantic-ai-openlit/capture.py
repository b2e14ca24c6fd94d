"""pydantic-ai `Agent` runs traced by OpenLIT (`openlit.init()`).

The agents are those of `../pydantic-ai/capture.py`, played by the shared `../pydantic_ai_runs.py` (recorded tools,
`ToolFailure` raised as `ModelRetry`, f's sub-agent run by the tool `weather_expert`, g under the application span),
each on `OpenAIChatModel` pointed at the kit's scripted server (OpenLIT writes the model's calls from the `openai`
client, which pydantic-ai's `FunctionModel` does not use). Scenarios a..i and pydantic-ai's own `k_output_ends_run`
(its output tool `final_result` is told from a call by its name alone under OpenLIT, see NOTES.md), none streamed
(OpenLIT wraps neither `run_stream` nor `run_stream_events`). Set-up: the shared `openlit_capture.setup` (content
capture on, metrics off, the empty price list); pydantic-ai's own instrumentation is left off.

    /work/venvs/pydantic-ai-openlit/bin/python tests/captures/pydantic-ai-openlit/capture.py [--out DIR] [SCENARIO ...]
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/captures

import openlit_capture
from capture_kit import SCENARIOS, Recorder, Scenario, ScriptedOpenAI, find_span

__all__: list[str] = []

FOLDER = "pydantic-ai-openlit"
SCOPE = "openlit.instrumentation.pydantic_ai"


def capture(name: str, sc: Scenario, exporter: Any, out: Path) -> dict[str, Any]:
    from opentelemetry import trace
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai_runs import play, truth_of

    recorder = Recorder()
    exporter.clear()
    with ScriptedOpenAI(sc.script) as server:
        provider = OpenAIProvider(base_url=server.base_url, api_key="scripted")
        tracer = trace.get_tracer("toolscore.capture")
        play(sc, recorder, tracer, lambda spec: OpenAIChatModel(spec.model, provider=provider))
        server.assert_consumed()
    spans = exporter.get_finished_spans()
    if os.environ.get("CAPTURE_DUMP"):
        dump(spans)
    runs = {a.name: run_span(spans, a.name) for a in sc.agents}
    truth = truth_of(sc, meta(), recorder, runs)
    for run in truth["runs"]:  # OpenLIT writes no tool span: every call is the model's only
        run["calls"] = [{**call, "model_only": True} for call in run["calls"]]
    openlit_capture.write(out, FOLDER, name, spans, truth)
    return truth


def run_span(spans: Any, name: str) -> Any:
    """An agent's run: `Agent.run`'s `execute_task <agent>` span."""
    return find_span(
        spans,
        attributes={"gen_ai.operation.name": "execute_task", "gen_ai.agent.name": name},
        where=lambda s: s.instrumentation_scope.name == SCOPE,
    )


def dump(spans: Any) -> None:
    by_id = {s.context.span_id: s for s in spans}

    def depth(s: Any) -> int:
        d = 0
        while s.parent is not None and s.parent.span_id in by_id:
            s = by_id[s.parent.span_id]
            d += 1
        return d

    for s in sorted(spans, key=lambda s: s.start_time or 0):
        dur = ((s.end_time or 0) - (s.start_time or 0)) / 1e6
        print("  " * depth(s) + f"{s.name} [{s.instrumentation_scope.name}] {s.status.status_code.name} {dur:.2f}ms")
        for k, v in (s.attributes or {}).items():
            if k.startswith(("gen_ai.tool", "gen_ai.operation", "gen_ai.agent.name", "gen_ai.output", "error")):
                print("  " * depth(s) + f"    {k}={str(v)[:160]}")


def meta() -> dict[str, Any]:
    version = importlib.metadata.version
    return {
        "framework": "pydantic-ai",
        "framework_version": version("pydantic-ai"),
        "instrumentation": (
            f"openlit {version('openlit')} (openlit.init(), capture_message_content=True, metrics off): its "
            f"pydantic_ai wrappers and openai {version('openai')} instrumentation; "
            f"opentelemetry-sdk {version('opentelemetry-sdk')}"
        ),
        "conventions": "OpenLIT's OTel GenAI spans (pydantic_ai: execute_task, graph nodes; openai: chat <model>)",
    }


def main() -> None:
    from capture_kit import loopback_only_connections

    refused = loopback_only_connections()
    from pydantic_ai_runs import EXTRA

    openlit_capture.main(__doc__.splitlines()[0], FOLDER, {**SCENARIOS, **EXTRA}, capture)
    if refused:
        raise SystemExit(f"connections refused (outside the loopback): {refused}")


if __name__ == "__main__":
    main()
