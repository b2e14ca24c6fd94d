"""Agno `Agent` and `Team` runs traced by OpenLIT (`openlit.init()`).

The agents are those of `../agno/capture.py` (the OpenInference capture of the same framework), built and played
by the shared `../agno_agents.py`: `agno.agent.Agent`s with the kit's recorded functions as tools on
`OpenAIChat(base_url=...)` pointed at the kit's scripted server, an Agno `Team` for f (the coordinator's model calls
Agno's `delegate_task_to_member`, which runs the member), g under the application span. b_sequential streams with
`Agent.run(..., stream=True)`, whose span OpenLIT ends before the run starts (its run is flagged incomplete in the
truth, see NOTES.md); i_parallel_random_ids streams with `Agent.arun(..., stream=True)`, which OpenLIT wraps whole.
Set-up: the shared `openlit_capture.setup` (content capture on, metrics off, the empty price list),
AGNO_TELEMETRY=false.

    /work/venvs/agno-openlit/bin/python tests/captures/agno-openlit/capture.py [--out DIR] [SCENARIO ...]
"""

from __future__ import annotations

import contextvars
import importlib.metadata
import os
import sys
from pathlib import Path
from typing import Any

os.environ["AGNO_TELEMETRY"] = "false"  # else every run posts to Agno's API (refused by the guards)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/captures

import openlit_capture
from capture_kit import SCENARIOS, Recorder, Scenario, find_span, truth_for

__all__: list[str] = []

FOLDER = "agno-openlit"
SCOPE = "openlit.instrumentation.agno"
STREAMED = {"b_sequential": "sync", "i_parallel_random_ids": "async"}
"""How each streamed scenario streams (`agno_agents.Stream`)."""
LOST = {"b_sequential"}
"""Streamed with `Agent.run(stream=True)`: OpenLIT's span ends when `run` returns the iterator, before the run's
model and tool spans, which land in traces of their own: the run is flagged incomplete."""


def capture(name: str, base: Scenario, exporter: Any, out: Path) -> dict[str, Any]:
    from agno_agents import DELEGATE, delegated, play
    from opentelemetry import trace

    sc = delegated(base) if base.sub_agents else base
    unrecorded = [DELEGATE] if base.sub_agents else []
    recorder = Recorder()
    exporter.clear()
    stream = STREAMED.get(name)
    answers = contextvars.Context().run(
        play, sc, recorder, stream=stream, app_tracer=trace.get_tracer("toolscore.capture")
    )
    expected = [base.agents[0].final_text] if sc.sub_agents else [a.final_text for a in base.agents]
    assert stream or answers == expected, f"{name}: answers {answers} != {expected}"
    spans = exporter.get_finished_spans()
    if os.environ.get("CAPTURE_DUMP"):
        dump(spans)
    runs = {a.name: run_span(spans, a.name) for a in sc.agents}
    truth = truth_for(sc, meta(), recorder, runs, unrecorded=unrecorded)
    if name in LOST:
        truth = lost(truth)
    openlit_capture.write(out, FOLDER, name, spans, truth)
    return truth


def lost(truth: dict[str, Any]) -> dict[str, Any]:
    """The truth of a run whose calls are not under its span (see LOST): flagged incomplete, its calls under
    `calls_made`, none under `calls`."""
    runs = [{**run, "calls": [], "calls_made": run["calls"], "incomplete": True} for run in truth["runs"]]
    dropped = sum(len(run["calls"]) for run in truth["runs"])  # their tool spans: no run span above them
    note = (
        "Agent.run(stream=True): OpenLIT's sync wrapper ends the invoke_agent span when run returns its iterator "
        "(no gen_ai.response.id, no output); the model and tool spans, made while the caller iterates, are roots "
        "of traces of their own."
    )
    return {**truth, "runs": runs, "notes": [note], "skipped": {"call_without_run": dropped} if dropped else {}}


def run_span(spans: Any, name: str) -> Any:
    """An agent's run (`invoke_agent <name>`) or a team's (`invoke_workflow <name>`), of OpenLIT's Agno wrappers."""

    def named(span: Any) -> bool:
        attrs = span.attributes or {}
        return span.instrumentation_scope.name == SCOPE and (
            (attrs.get("gen_ai.operation.name") == "invoke_agent" and attrs.get("gen_ai.agent.name") == name)
            or (attrs.get("gen_ai.operation.name") == "invoke_workflow" and attrs.get("gen_ai.workflow.name") == name)
        )

    return find_span(spans, where=named)


def dump(spans: Any) -> None:
    by_id = {s.context.span_id: s for s in spans}

    def depth(s: Any) -> int:
        d = 0
        while s.parent is not None and s.parent.span_id in by_id:
            s = by_id[s.parent.span_id]
            d += 1
        return d

    for s in sorted(spans, key=lambda s: s.start_time or 0):
        print("  " * depth(s) + f"{s.name} [{s.instrumentation_scope.name}] {s.status.status_code.name}")


def meta() -> dict[str, Any]:
    version = importlib.metadata.version
    return {
        "framework": "agno",
        "framework_version": version("agno"),
        "instrumentation": (
            f"openlit {version('openlit')} (openlit.init(), capture_message_content=True, metrics off): its "
            f"agno wrappers and openai {version('openai')} instrumentation; "
            f"opentelemetry-sdk {version('opentelemetry-sdk')}"
        ),
        "conventions": (
            "OpenLIT's OTel GenAI spans (agno: invoke_agent, invoke_workflow for a team, execute_tool; "
            "openai: chat <model>)"
        ),
    }


def main() -> None:
    from capture_kit import loopback_only_connections

    refused = loopback_only_connections()
    openlit_capture.main(__doc__.splitlines()[0], FOLDER, SCENARIOS, capture)
    if refused:
        raise SystemExit(f"connections refused (outside the loopback): {refused}")


if __name__ == "__main__":
    main()
