"""CrewAI captures traced by OpenLIT (`openlit.init()`): every canonical scenario CrewAI can express.

CrewAI 1.15.30 with openlit 1.45.0: `openlit.init()` (the shared `openlit_capture.setup`: content capture on,
metrics off, an empty price list so that nothing reaches the network) instruments CrewAI itself
(`openlit/instrumentation/crewai`: wrappers of `Crew.__init__`, `Crew.kickoff`, `Task._execute_core`,
`BaseTool.run`, `Agent.kickoff`, Flow) and the `openai` client CrewAI's native OpenAI provider calls. The crews
are the shared `crewai_crews.py` (as `crewai/` and `crewai-openllmetry/`); this script only sets up the
instrumentation and picks the run spans. Streamed model calls (`LLM(stream=True)`) in c, h and i.

- a..e, h, i: one agent, one task, one crew. Run span: `invoke_agent <role>` (`Task._execute_core`,
  `gen_ai.agent.name` = the role, `gen_ai.agent.id`).
- f_agent_as_tool: CrewAI's delegation (`allow_delegation=True`; the model calls `delegate_work_to_coworker`).
  The coworker runs inside the tool span `execute_tool Delegate work to coworker` through `Agent.execute_task`,
  which OpenLIT does not wrap: it has no run span, its run is the one toolscore infers at that tool span.
- f_hierarchical (not in the kit's list): `Process.hierarchical` with `manager_llm`: CrewAI's own manager
  (role `Crew Manager`) delegates the task to weather_expert the same way.
- a_agent_kickoff (not in the kit's list): `Agent.kickoff(prompt)` alone: run span `invoke_agent <role>`.
- model_only_cached_repeat, model_only_unknown_tool (not in the kit's list): a call answered from CrewAI's
  tool cache (`Crew(cache=True)`), and a call of a tool never offered: no tool span for either.
- g_two_runs_one_trace: one crew, two agents, two tasks, under the application span `conversation`.

    /work/venvs/crewai-openlit/bin/python tests/captures/crewai-openlit/capture.py [--out DIR] [SCENARIO ...]
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

os.environ.update(
    CREWAI_DISABLE_TELEMETRY="true",  # crewai_core.telemetry: no spans to CrewAI's collector
    CREWAI_DISABLE_TRACKING="true",  # same switch, older name
    CREWAI_TRACING_ENABLED="false",  # crewai.execution: no trace session / first-run trace upload
    CREWAI_DISABLE_VERSION_CHECK="true",  # console formatter: no PyPI version look-up
    OPENAI_API_KEY="sk-scripted",
)
os.environ.pop("OTEL_SDK_DISABLED", None)  # would switch our own SDK off too

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/captures

import openlit_capture
from capture_kit import SCENARIOS, Recorder, Scenario, find_span, loopback_only_connections, truth_for
from oi_common import model_only

__all__: list[str] = []

FOLDER = "crewai-openlit"
SCOPE = "openlit.instrumentation.crewai"
DELEGATE_TOOL = "Delegate work to coworker"
F_NOTES = [
    "The delegation call is CrewAI's delegation tool: the model calls it `delegate_work_to_coworker` (the name "
    "CrewAI offers the model, sanitized); its span is `execute_tool Delegate work to coworker` "
    "(gen_ai.tool.name as CrewAI names the tool).",
    "weather_expert has no run span (Agent.execute_task, called by the delegation tool, is not wrapped): its run "
    "is the one inferred at the delegation tool span, which holds its model spans; its arguments' `coworker` names "
    "it.",
]


def run_span(spans: Any, scenario: Scenario, agent_name: str) -> Any:
    """`invoke_agent <role>` (Task._execute_core or Agent.kickoff); for a coworker, the delegation tool span."""
    from crewai_crews import role_of

    if agent_name in scenario.sub_agents.values():
        return find_span(
            spans,
            f"execute_tool {DELEGATE_TOOL}",
            attributes={"gen_ai.operation.name": "execute_tool"},
            where=lambda s: s.instrumentation_scope.name == SCOPE,
        )
    # Not by span name: it is made before the task runs, when a hierarchical crew's task has no agent yet
    # (`invoke_agent agent`); the attributes are set after it ran. Only task and kickoff spans have an agent id.
    return find_span(
        spans,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": role_of(agent_name)},
        where=lambda s: s.instrumentation_scope.name == SCOPE and "gen_ai.agent.id" in (s.attributes or {}),
    )


def capture(name: str, scenario: Scenario, exporter: Any, out: Path) -> dict[str, Any]:
    from crewai_crews import DELEGATE_FUNCTION, NEVER_RAN, play, role_of
    from opentelemetry import trace

    exporter.clear()
    recorder = Recorder()
    play(scenario, trace.get_tracer("toolscore.capture"), recorder)
    spans = exporter.get_finished_spans()
    if os.environ.get("CAPTURE_DUMP"):
        dump(spans)
    runs = {agent.name: run_span(spans, scenario, agent.name) for agent in scenario.agents}
    info = meta()
    # OpenLIT wraps `BaseTool.run`, which the `@tool` decorator's `Tool` overrides: the scenario's tools have no
    # span, their calls are only in the model's output. CrewAI's delegation tool is a `BaseTool`: it has one.
    flags = {c.id: {"model_only": True} for a in scenario.agents for c in a.calls if c.name != DELEGATE_FUNCTION}
    unrecorded = [DELEGATE_FUNCTION] if scenario.sub_agents else []
    if scenario.sub_agents:
        info["notes"] = F_NOTES
    if scenario.name in NEVER_RAN:
        never, unrecorded = model_only(scenario, recorder, NEVER_RAN[scenario.name])
        for call_id, flag in never.items():
            flags[call_id] = flag
    names = {a.name: role_of(a.name) for a in scenario.agents}
    truth = truth_for(scenario, info, recorder, runs, unrecorded=unrecorded, agent_names=names, flags=flags)
    if scenario.sub_agents:
        truth["inferred_runs"] = len(scenario.sub_agents)
    openlit_capture.write(out, FOLDER, name, spans, truth)
    return truth


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
        for k, v in (s.attributes or {}).items():
            if k.startswith(("gen_ai.", "error")) and k not in ("gen_ai.input.messages", "gen_ai.system_instructions"):
                print("  " * depth(s) + f"    {k}={str(v)[:300]}")


def meta() -> dict[str, Any]:
    version = importlib.metadata.version
    return {
        "framework": "crewai",
        "framework_version": version("crewai"),
        "instrumentation": (
            f"openlit {version('openlit')} (openlit.init(), capture_message_content=True, metrics off): its CrewAI "
            f"wrappers and openai {version('openai')} instrumentation; opentelemetry-sdk {version('opentelemetry-sdk')}"
        ),
        "conventions": (
            "OpenLIT's OTel GenAI spans (CrewAI: invoke_workflow <crew>, invoke_agent <role> per task, "
            "execute_tool <tool> without call id, create_agent <role>; openai: chat <model>)"
        ),
    }


class CrewAIScenarios(Mapping[str, Scenario]):
    """The kit's scenarios as CrewAI runs them (f: the delegation call), then CrewAI's own forms; resolved when
    asked for, since crewai_crews imports crewai, which must come after `openlit_capture.setup`."""

    NAMES = (*SCENARIOS, "a_agent_kickoff", "f_hierarchical", "model_only_cached_repeat", "model_only_unknown_tool")

    def __getitem__(self, key: str) -> Scenario:
        from crewai_crews import CACHED, HIERARCHICAL, KICKOFF, UNKNOWN, crewai_scenario

        extra = {s.name: s for s in (KICKOFF, HIERARCHICAL, CACHED, UNKNOWN)}
        return extra[key] if key in extra else crewai_scenario(SCENARIOS[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self.NAMES)

    def __len__(self) -> int:
        return len(self.NAMES)


def main() -> None:
    refused = loopback_only_connections()
    openlit_capture.main(__doc__.splitlines()[0], FOLDER, CrewAIScenarios(), capture)
    if refused:
        raise SystemExit(f"connections refused (outside the loopback): {refused}")


if __name__ == "__main__":
    main()
