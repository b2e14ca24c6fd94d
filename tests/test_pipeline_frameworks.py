"""Real agent frameworks with the processor attached: their own instrumentation → toolscore → in-memory exporter.

Each scenario of `tests.frameworks` runs with two processors on one provider: toolscore in front of an
`InMemorySpanExporter`, and a plain exporter beside it as the witness of what the framework emitted.
Every span must come out of toolscore exactly once, run spans carry the scripted calls, and every
scripted run is scored against an expectation written from the script.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.frameworks import FRAMEWORKS, SCENARIOS, ScriptedRun, apply_hermetic_env
from tests.pipeline_builders import Recording, registry_with
from toolscore.collector.pipeline import PipelineConfig, ToolscoreSpanProcessor

RUN_SPAN_FRAMEWORKS = {"pydantic-ai", "openai-agents"}
"""LangGraph marks no run span: its runs are inferred at the graph's span, which carries the scores when it
is the topmost recognised span (a top-level graph); a graph run inside a tool is scored in logs and metrics."""

CASES = [(framework, scenario) for framework in FRAMEWORKS for scenario in SCENARIOS]


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    apply_hermetic_env(monkeypatch)


def expectations_for(truth: tuple[ScriptedRun, ...]) -> list[dict[str, Any]]:
    """Per agent: its runs may make only the calls the script gives that agent (trajectory `subset`, a multiset)."""
    tools: dict[str, list[str]] = defaultdict(list)
    for run in truth:
        tools[run.agent_name].extend(c.name for c in run.calls)
    return [
        {
            "name": f"script-{agent}",
            "match": {"agent": agent},
            "scorers": [{"type": "trajectory", "mode": "subset", "expected": [{"name": n} for n in names]}],
        }
        for agent, names in tools.items()
    ]


@pytest.mark.parametrize(("framework", "scenario"), CASES)
async def test_framework_runs_are_scored_and_every_span_goes_on_once(framework: str, scenario: str) -> None:
    truth_holder: list[tuple[ScriptedRun, ...]] = []
    scored, witness = InMemorySpanExporter(), InMemorySpanExporter()
    telemetry = Recording()
    expectations = expectations_for(SCENARIOS[scenario])
    with registry_with(*expectations) as registry:
        provider = TracerProvider()
        processor = ToolscoreSpanProcessor(
            registry, SimpleSpanProcessor(scored), PipelineConfig(settle_ms=20), telemetry
        )
        provider.add_span_processor(SimpleSpanProcessor(witness))
        provider.add_span_processor(processor)
        truth_holder.append(await FRAMEWORKS[framework](scenario, provider))
        assert provider.force_flush(10_000)
        provider.shutdown()
    (truth,) = truth_holder
    out = Counter(s.context.span_id for s in scored.get_finished_spans() if s.context is not None)
    assert set(out.values()) == {1}
    assert set(out) == {s.context.span_id for s in witness.get_finished_spans() if s.context is not None}

    assert Counter(agent for _, _, _, agent, _ in telemetry.scores) == Counter(run.agent_name for run in truth)
    assert [result.label for result, *_ in telemetry.scores] == ["pass"] * len(truth)  # type: ignore[union-attr]
    runs = sorted(
        (s for s in scored.get_finished_spans() if "toolscore.tool_calls" in (s.attributes or {})),
        key=lambda s: s.start_time or 0,
    )
    on_spans = truth if framework in RUN_SPAN_FRAMEWORKS else [run for run in truth if run.parent_agent is None]
    assert [list((s.attributes or {})["toolscore.tool_calls"]) for s in runs] == [
        [c.name for c in run.calls] for run in on_spans
    ]
    assert all((s.attributes or {})["toolscore.expectations"] for s in runs)
