"""pytest plugin: score an agent's tool calls inside a test, with the same readable diff as `toolscore eval`.

Installed with the package (entry point `pytest11: toolscore`) and inert unless a test asks for its
fixture: `toolscore_runs` builds an in-memory `TracerProvider` whose spans pass through the toolscore
span processor, for the duration of one test. Point the agent's instrumentation at
`toolscore_runs.tracer_provider` (or set an SDK `TracerProvider` as the global one before the test: its spans
are read too, see `toolscore.collector.pytest_global`), run it, then assert:

    def test_weather(toolscore_runs):
        run_my_agent(tracer_provider=toolscore_runs.tracer_provider)
        toolscore_runs.assert_calls(agent="weather", expected=[{"name": "get_weather", "args": {"city": "Paris"}}])

Expectations (the `toolscore_expectations` ini option, or override the fixture of that name) are
scored by the processor as in production; `assert_expectations()` fails on any that did not pass.
LLM-judge scorers are skipped unless the session enables them (`--toolscore-judge`, or
`toolscore_judge = true` in the ini), as `toolscore eval` skips them without `--judge`: a test suite
should reach a paid model only when asked to.
Heavy imports (the OTel SDK, the pipeline) happen when the fixture is first used, not when pytest starts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

    from toolscore.collector.pytest_matches import NotScored
    from toolscore.collector.registry import Expectation
    from toolscore.scorers._model import AgentRun, Score, ScoreResult

__all__ = ["ToolscoreRuns", "toolscore_expectations", "toolscore_runs"]

_SKIPPED_JUDGES = pytest.StashKey[int]()
"""LLM-judge scores the session's tests left out, for the one summary line that says how to get them."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "toolscore_expectations",
        type="paths",
        default=[],
        help="toolscore expectation files or directories scored by the `toolscore_runs` fixture.",
    )
    parser.addini(
        "toolscore_judge",
        type="bool",
        default=False,
        help="Run the LLM-judge scorers of toolscore expectations (default: false, they are skipped).",
    )
    parser.getgroup("toolscore").addoption(
        "--toolscore-judge",
        action="store_true",
        default=False,
        help="Run the LLM-judge scorers of toolscore expectations (as `toolscore eval --judge`).",
    )


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    skipped = config.stash.get(_SKIPPED_JUDGES, 0)
    if skipped:
        from toolscore.collector.pytest_matches import JUDGE_OPT_IN

        terminalreporter.write_line(
            f"toolscore: {skipped} LLM-judge score(s) skipped: judges are not run unless enabled ({JUDGE_OPT_IN})"
        )


def _judge_enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("toolscore_judge") or config.getini("toolscore_judge"))


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


def _run_text(run: AgentRun) -> str:
    return f"{run.agent_name}: {_call_text(run)}"


class ToolscoreRuns:
    """The runs recorded during one test, rebuilt from its spans, and assertions over them."""

    def __init__(self, expectations: Sequence[Expectation] = (), *, judge: bool = False) -> None:
        """`judge`: run LLM-judge scorers; off, they are reported as skipped (`not_scored`)."""
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from toolscore.collector.pipeline import ToolscoreSpanProcessor
        from toolscore.collector.pytest_matches import MatchRecorder
        from toolscore.collector.registry._matching import ExpectationIndex
        from toolscore.collector.telemetry import NoopTelemetry

        self.expectations = list(expectations)
        self.exporter = InMemorySpanExporter()
        self._matches = MatchRecorder(ExpectationIndex(self.expectations), judge=judge)
        self.processor = ToolscoreSpanProcessor(
            self._matches, SimpleSpanProcessor(self.exporter), telemetry=NoopTelemetry()
        )
        self._scored: list[tuple[str, dict[str, Any]]] = []
        self.processor.engine.on_scored = self._record
        self.tracer_provider: TracerProvider = TracerProvider()
        self.tracer_provider.add_span_processor(self.processor)
        from toolscore.collector.pytest_global import attach_to_global

        self._relay = attach_to_global(self.processor, self.tracer_provider)

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

    def _record(self, run: AgentRun, expectation: Expectation, result: ScoreResult, version: str | None) -> None:
        """Every result the processor gives, as its `gen_ai.evaluation.result` event's attributes.

        Read here rather than from the run spans' events: a run inferred at a span no convention
        recognises (tool spans under the application's own root span) is scored in logs and metrics
        only, since that span went on before the run was known, so it carries no event.
        """
        from toolscore.collector.pipeline.emit import event_attributes

        self._scored.append((run.span_id, event_attributes(expectation, result, version)))

    def _events(self) -> list[tuple[str, dict[str, Any]]]:
        self.spans()  # scores what is pending
        return list(self._scored)

    def scores(self, agent: str | None = None) -> list[dict[str, Any]]:
        """The attributes of the `gen_ai.evaluation.result` event of every score the processor gave a run."""
        wanted = None if agent is None else {run.span_id for run in self.runs(agent)}
        return [attrs for span_id, attrs in self._events() if wanted is None or span_id in wanted]

    def not_scored(self) -> list[NotScored]:
        """The scorers of matched expectations that gave no score: sampled out, or LLM judges not enabled."""
        self.spans()  # matches what is pending
        return self._matches.not_scored()

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
        from toolscore.scorers._model import Score
        from toolscore.scorers._trajectory import Trajectory

        calls = [{"name": item} if isinstance(item, str) else dict(item) for item in expected]
        spec: dict[str, Any] = {"expected": calls, "mode": mode}
        if args_match is not None:
            spec["args_match"] = dict(args_match)
        scorer = Trajectory.model_validate(spec)
        runs = self.runs(agent)
        if not runs:
            seen = sorted({str(run.agent_name) for run in self.runs()})
            pytest.fail(
                f"no run of agent {agent!r} was recorded (runs recorded: {seen or 'none'}){self._hint()}", pytrace=False
            )
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
        """Every score the processor gave a run during the test is a pass (and at least one was given).

        A test whose matched scorers were all LLM judges left out (judges not enabled) is skipped, as
        `toolscore eval` counts such a run neither passed nor failed; one whose scorers were sampled out
        fails, naming the expectation and its `sample_rate`, since nothing was checked.
        """
        __tracebackhide__ = True
        if not self.expectations:  # a missing ini option is not a run that went unmatched
            pytest.fail(
                "no toolscore expectations to score against: set `toolscore_expectations = PATH` (files or "
                "directories) in the pytest ini, or override the `toolscore_expectations` fixture",
                pytrace=False,
            )
        events = self._events()
        left_out = self._matches.not_scored()
        not_scored = [f"{_run_text(item.run)}: {item.text()}" for item in left_out]
        if not events:
            if matched := self._matches.matched():
                if left_out and all(item.judge_skipped for item in left_out):
                    pytest.skip(f"no toolscore score to check: {'; '.join(not_scored)}")
                why = not_scored or [
                    f"{_run_text(run)}: {exp.name} matched, but has no scorers" for run, exp in matched
                ]
                pytest.fail("no toolscore score to check:\n" + "\n".join(why), pytrace=False)
            seen = "; ".join(_run_text(run) for run in self.runs()) or "none"
            names = ", ".join(exp.name for exp in self.expectations)
            pytest.fail(
                f"no run matched any toolscore expectation ({names}); runs recorded: {seen}{self._hint()}",
                pytrace=False,
            )
        failed = [(span_id, e) for span_id, e in events if e.get("gen_ai.evaluation.score.label") != "pass"]
        if failed:
            runs = {run.span_id: run for run in self.runs()}
            report = [self._explain(runs.get(span_id), event) for span_id, event in failed]
            also = ["not scored:", *not_scored] if not_scored else []
            pytest.fail("toolscore expectations not met:\n" + "\n".join(report + also), pytrace=False)

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
                diff = diff_for_scorer(scorer.scorer, run.calls, run=run) if scorer.name == scorer_name else None
                if diff is not None:
                    return f"{line}\n{render_diff(diff)}"
        return line

    def _hint(self) -> str:
        """When no span at all was recorded, what to do about it (on a line of its own)."""
        if self.exporter.get_finished_spans():
            return ""
        from toolscore.collector.pytest_global import missing_spans_hint

        return "\n" + missing_spans_hint(self._relay is not None)

    def close(self) -> None:
        from toolscore.collector.pytest_global import detach

        detach(self._relay, self.processor)
        self.tracer_provider.shutdown()


@pytest.fixture
def toolscore_expectations(request: pytest.FixtureRequest) -> list[Any]:
    """The expectations `toolscore_runs` scores: the `toolscore_expectations` ini paths. Override it to
    return expectation objects, mappings or paths of your own."""
    return list(request.config.getini("toolscore_expectations"))


@pytest.fixture
def toolscore_runs(toolscore_expectations: list[Any], request: pytest.FixtureRequest) -> Iterator[ToolscoreRuns]:
    """A tracer provider scored by toolscore for this test, LLM judges as the session says; see `ToolscoreRuns`."""
    config = request.config
    runs = ToolscoreRuns(_load(toolscore_expectations), judge=_judge_enabled(config))
    try:
        yield runs
    finally:
        runs.close()
        skipped = sum(item.judge_skipped for item in runs._matches.not_scored())
        config.stash[_SKIPPED_JUDGES] = config.stash.get(_SKIPPED_JUDGES, 0) + skipped
