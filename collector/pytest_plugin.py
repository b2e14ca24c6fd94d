"""pytest plugin: score an agent's tool calls inside a test, with the same readable diff as `toolscore eval`.

Installed with the package (entry point `pytest11: toolscore`) and inert unless a test asks for its
fixture: `toolscore_runs` builds an in-memory `TracerProvider` whose spans pass through the toolscore
span processor, for the duration of one test. Point the agent's instrumentation at
`toolscore_runs.tracer_provider`, run it, then assert:

    def test_weather(toolscore_runs):
        run_my_agent(tracer_provider=toolscore_runs.tracer_provider)
        toolscore_runs.assert_calls(agent="weather", expected=[{"name": "get_weather", "args": {"city": "Paris"}}])

Expectations (the `toolscore_expectations` ini option, or override the fixture of that name) are
scored by the processor as in production; `assert_expectations()` fails on any that did not pass.
Heavy imports (the OTel SDK, the pipeline) happen when the fixture is first used, not when pytest starts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

    from toolscore.collector.registry import Expectation
    from toolscore.scorers.model import AgentRun, Score, ScoreResult

__all__ = ["ToolscoreRuns", "toolscore_expectations", "toolscore_runs"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "toolscore_expectations",
        type="paths",
        default=[],
        help="toolscore expectation files or directories scored by the `toolscore_runs` fixture.",
    )


def _load(items: Sequence[Any]) -> list[Expectation]:
    """Expectations given as objects, as mappings (a file's document), or as file and directory paths."""
    from toolscore.collector.registry import Expectation, load_paths, parse_expectation

    out: list[Expectation] = []
    paths = [item for item in items if isinstance(item, str | Path)]
    if paths:
        out.extend(load_paths(paths))
    for item in items:
        if isinstance(item, Expectation):
            out.append(item)
        elif isinstance(item, Mapping):
            out.append(parse_expectation(dict(item)))
    return out


def _call_text(run: AgentRun) -> str:
    return ", ".join(call.name for call in run.calls) or "no calls"


class ToolscoreRuns:
    """The runs recorded during one test, rebuilt from its spans, and assertions over them."""

    def __init__(self, expectations: Sequence[Expectation] = ()) -> None:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from toolscore.collector.pipeline import ToolscoreSpanProcessor
        from toolscore.collector.registry import ExpectationIndex
        from toolscore.collector.telemetry import NoopTelemetry

        self.expectations = list(expectations)
        self.exporter = InMemorySpanExporter()
        self.processor = ToolscoreSpanProcessor(
            ExpectationIndex(self.expectations), SimpleSpanProcessor(self.exporter), telemetry=NoopTelemetry()
        )
        self._scored: list[tuple[str, dict[str, Any]]] = []
        self.processor.engine.on_scored = self._record
        self.tracer_provider: TracerProvider = TracerProvider()
        self.tracer_provider.add_span_processor(self.processor)

    def spans(self) -> tuple[ReadableSpan, ...]:
        """Every span ended so far, run spans with their scores added (scoring what is pending first)."""
        self.tracer_provider.force_flush()
        return self.exporter.get_finished_spans()

    def runs(self, agent: str | None = None) -> list[AgentRun]:
        """The agent runs recorded so far (of `agent` only, when given), in the order they started."""
        from toolscore.collector.extract import rebuild_runs
        from toolscore.collector.sources import spans_from_readable

        runs = rebuild_runs(spans_from_readable(self.spans()))
        runs.sort(key=lambda run: (run.start_ns or 0, run.trace_id, run.span_id))
        return [run for run in runs if agent is None or run.agent_name == agent]

    def _record(self, run: AgentRun, expectation: Expectation, result: ScoreResult) -> None:
        """Every result the processor gives, as its `gen_ai.evaluation.result` event's attributes.

        Read here rather than from the run spans' events: a run inferred at a span no convention
        recognises (tool spans under the application's own root span) is scored in logs and metrics
        only, since that span went on before the run was known, so it carries no event.
        """
        from toolscore.collector.pipeline.emit import event_attributes

        self._scored.append((run.span_id, event_attributes(expectation, result)))

    def _events(self) -> list[tuple[str, dict[str, Any]]]:
        self.spans()  # scores what is pending
        return list(self._scored)

    def scores(self, agent: str | None = None) -> list[dict[str, Any]]:
        """The attributes of the `gen_ai.evaluation.result` event of every score the processor gave a run."""
        wanted = None if agent is None else {run.span_id for run in self.runs(agent)}
        return [attrs for span_id, attrs in self._events() if wanted is None or span_id in wanted]

    def assert_calls(
        self,
        expected: Sequence[Mapping[str, Any] | str],
        *,
        agent: str | None = None,
        mode: str = "exact",
        args_match: Mapping[str, Any] | None = None,
    ) -> list[Score]:
        """Every run (of `agent`) made the `expected` calls, as the `trajectory` scorer in `mode` judges.

        `expected`: `{"name": ..., "args": {...}}` objects (or bare tool names); `args_match` as in a
        trajectory spec (`{"mode": "subset"}`, matchers, ignored keys). Fails with the call diff.
        """
        __tracebackhide__ = True
        from toolscore.collector.evaluate import diff_for_scorer, render_diff
        from toolscore.scorers.model import Score
        from toolscore.scorers.trajectory import Trajectory

        calls = [{"name": item} if isinstance(item, str) else dict(item) for item in expected]
        spec: dict[str, Any] = {"expected": calls, "mode": mode}
        if args_match is not None:
            spec["args_match"] = dict(args_match)
        scorer = Trajectory.model_validate(spec)
        runs = self.runs(agent)
        if not runs:
            seen = sorted({str(run.agent_name) for run in self.runs()})
            pytest.fail(f"no run of agent {agent!r} was recorded (runs recorded: {seen or 'none'})", pytrace=False)
        scores, problems = [], []
        for n, run in enumerate(runs, start=1):
            result = scorer.score(run)
            if isinstance(result, Score) and result.label == "pass":
                scores.append(result)
                continue
            why = result.explanation if isinstance(result, Score) else f"{result.error_type}: {result.message}"
            diff = diff_for_scorer(scorer, run.calls)
            detail = render_diff(diff) if diff is not None else ""
            problems.append(f"run {n} of {len(runs)} ({run.agent_name}: {_call_text(run)}): {why}\n{detail}")
        if problems:
            pytest.fail("tool calls differ from the expected ones\n" + "\n".join(problems), pytrace=False)
        return scores

    def assert_expectations(self) -> None:
        """Every score the processor gave a run during the test is a pass (and at least one was given)."""
        __tracebackhide__ = True
        if not self.expectations:  # a missing ini option is not a run that went unmatched
            pytest.fail(
                "no toolscore expectations to score against: set `toolscore_expectations = PATH` (files or "
                "directories) in the pytest ini, or override the `toolscore_expectations` fixture",
                pytrace=False,
            )
        events = self._events()
        if not events:
            seen = "; ".join(f"{run.agent_name}: {_call_text(run)}" for run in self.runs()) or "none"
            names = ", ".join(exp.name for exp in self.expectations)
            pytest.fail(f"no run matched any toolscore expectation ({names}); runs recorded: {seen}", pytrace=False)
        failed = [(span_id, e) for span_id, e in events if e.get("gen_ai.evaluation.score.label") != "pass"]
        if failed:
            runs = {run.span_id: run for run in self.runs()}
            report = [self._explain(runs.get(span_id), event) for span_id, event in failed]
            pytest.fail("toolscore expectations not met:\n" + "\n".join(report), pytrace=False)

    def _explain(self, run: AgentRun | None, event: Mapping[str, Any]) -> str:
        """One failed score: what the event says, and the call diff from the expectation's scorer."""
        from toolscore.collector.evaluate import diff_for_scorer, render_diff

        exp_name, scorer_name = event.get("toolscore.expectation.name"), event.get("gen_ai.evaluation.name")
        verdict = event.get("error.type") or event.get("gen_ai.evaluation.score.value")
        line = f"{exp_name} / {scorer_name} = {verdict}: {event.get('gen_ai.evaluation.explanation')}"
        if run is None:
            return line
        line = f"{run.agent_name} ({_call_text(run)}): {line}"
        for exp in self.expectations:
            for scorer in exp.scorers if exp.name == exp_name else ():
                diff = diff_for_scorer(scorer.scorer, run.calls) if scorer.name == scorer_name else None
                if diff is not None:
                    return f"{line}\n{render_diff(diff)}"
        return line

    def close(self) -> None:
        self.tracer_provider.shutdown()


@pytest.fixture
def toolscore_expectations(request: pytest.FixtureRequest) -> list[Any]:
    """The expectations `toolscore_runs` scores: the `toolscore_expectations` ini paths. Override it to
    return expectation objects, mappings or paths of your own."""
    return list(request.config.getini("toolscore_expectations"))


@pytest.fixture
def toolscore_runs(toolscore_expectations: list[Any]) -> Iterator[ToolscoreRuns]:
    """A tracer provider scored by toolscore for this test; see `ToolscoreRuns`."""
    runs = ToolscoreRuns(_load(toolscore_expectations))
    try:
        yield runs
    finally:
        runs.close()
