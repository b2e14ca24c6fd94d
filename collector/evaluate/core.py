"""`run_eval`: trace files and expectation files in, a typed `EvalResult` out.

    trace files ─(read_traces)─→ spans ─(rebuild_runs)─→ runs ─(plan_scores)─→ RunScorer ─→ results
                                                                                   └─ diffs ─→ aggregate

Runs are rebuilt, matched and scored by the code the live pipeline uses (`rebuild_runs`,
`plan_scores` with its sampling by trace id, the same scorers, and the judge budget of `JudgePool`),
so a run passes here exactly when it would pass in production. All files are read before runs are
rebuilt, so a trace split across files still yields whole runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from toolscore.collector.evaluate.diff import diff_for_scorer
from toolscore.collector.evaluate.inputs import (
    EvalInputError,
    read_expectations,
    read_traces,
    trace_files,
)
from toolscore.collector.evaluate.model import (
    EvalResult,
    ExpectationResult,
    InputSummary,
    RunRef,
    RunResult,
    RunStatus,
    ScorerResult,
)
from toolscore.collector.extract import ExtractConfig, rebuild_runs
from toolscore.collector.extract.privacy import PrivacyConfig
from toolscore.collector.pipeline.agent_version import AgentVersionConfig, agent_version
from toolscore.collector.pipeline.config import JudgeBudgetConfig
from toolscore.collector.pipeline.match import plan_scores
from toolscore.collector.pipeline.score_run import PlannedScore, RunScorer
from toolscore.collector.registry import Expectation
from toolscore.collector.registry._matching import ExpectationIndex
from toolscore.scorers._model import AgentRun, Score

__all__ = ["Progress", "run_eval"]

_EPSILON = 1e-9


class Progress(Protocol):
    """Told how far the evaluation is, for a progress bar; `total` may be revised per phase."""

    def phase(self, name: str, total: int) -> None: ...

    def advance(self, n: int = 1) -> None: ...


class _NoProgress:
    def phase(self, name: str, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass


def run_ref(run: AgentRun, source: str | None, version: str | None = None) -> RunRef:
    calls = []
    for call in run.calls:
        view = call.to_json()
        view.pop("call_id", None)
        if not view.get("error"):
            view.pop("error", None)
        calls.append(view)
    return RunRef(
        trace_id=run.trace_id,
        span_id=run.span_id,
        agent_name=run.agent_name,
        convention=run.convention,
        source=source,
        calls=calls,
        agent_version=version,
        request=run.input,
    )


def _scorer_result(planned: PlannedScore, run: AgentRun) -> ScorerResult:
    scorer = planned.scorer.scorer
    kind = str(getattr(scorer, "type", type(scorer).__name__))
    result = planned.result
    if result is None:
        return ScorerResult(name=scorer.scorer_name, type=kind, status="skipped", explanation=planned.skipped or "")
    if not isinstance(result, Score):
        return ScorerResult(
            name=result.name, type=kind, status="error", error_type=result.error_type, explanation=result.message
        )
    diff = diff_for_scorer(scorer, run.calls, run=run) if result.label == "fail" else None
    return ScorerResult(
        name=result.name,
        type=kind,
        status=result.label,
        value=result.value,
        explanation=result.explanation,
        details=result.details,
        diff=diff,
    )


def _run_result(expectation: Expectation, ref: RunRef, scorers: list[ScorerResult]) -> RunResult:
    counted = [s for s in scorers if s.status != "skipped"]
    status: RunStatus = "skipped" if not counted else "pass" if all(s.status == "pass" for s in counted) else "fail"
    values = [s.value for s in counted if s.value is not None]
    score = sum(values) / len(values) if values else None
    return RunResult(expectation=expectation.name, run=ref, status=status, score=score, scorers=scorers)


def _aggregate(
    expectation: Expectation, results: list[RunResult], min_pass_rate: float, require_runs: bool
) -> ExpectationResult:
    passed = sum(r.status == "pass" for r in results)
    failed = sum(r.status == "fail" for r in results)
    scores = [r.score for r in results if r.status != "skipped" and r.score is not None]
    rate = passed / (passed + failed) if passed + failed else None
    ok = rate >= min_pass_rate - _EPSILON if rate is not None else not require_runs
    return ExpectationResult(
        name=expectation.name,
        labels=expectation.labels,
        matched=len(results),
        passed=passed,
        failed=failed,
        skipped=len(results) - passed - failed,
        pass_rate=rate,
        mean_score=sum(scores) / len(scores) if scores else None,
        min_pass_rate=min_pass_rate,
        ok=ok,
    )


def _run_order(run: AgentRun) -> tuple[str, int, str]:
    return run.trace_id, run.start_ns or 0, run.span_id


def _score_all(
    runs: list[AgentRun],
    index: ExpectationIndex,
    source_of: dict[str, str],
    judge: JudgeBudgetConfig | None,
    progress: Progress,
    *,
    versions: AgentVersionConfig,
    privacy: PrivacyConfig | None = None,
) -> tuple[list[RunResult], list[RunRef]]:
    """Every run planned and scored (judges in flight together), then turned into results."""
    unmatched: list[RunRef] = []
    scored: list[tuple[AgentRun, RunRef, list[Expectation], list[PlannedScore]]] = []
    with RunScorer(judge) as scorer:
        for run in runs:
            plan = plan_scores(run, index, privacy)
            ref = run_ref(run, source_of.get(run.trace_id), agent_version(run, versions))
            if plan.expectations:
                scored.append((run, ref, plan.expectations, scorer.score(run, plan)))
            else:
                unmatched.append(ref)
            progress.advance()
        scorer.results()
    results: list[RunResult] = []
    for run, ref, matched, planned in scored:
        for exp in matched:
            mine = [_scorer_result(p, run) for p in planned if p.expectation.name == exp.name]
            results.append(_run_result(exp, ref, mine))
    return results, unmatched


def run_eval(
    traces: Sequence[str | Path],
    expectations: Sequence[str | Path],
    *,
    judge: JudgeBudgetConfig | None = None,
    min_pass_rate: float = 1.0,
    require_runs: bool = False,
    allow_empty: bool = False,
    extract: ExtractConfig | None = None,
    progress: Progress | None = None,
    versions: AgentVersionConfig | None = None,
) -> EvalResult:
    """Evaluate; raises `EvalInputError` for unreadable or no traces, or invalid expectations.

    `judge`: run LLM-judge scorers under this budget (None: they are skipped). `min_pass_rate`: the
    share of an expectation's scored runs that must pass (1.0: every one). `require_runs`: an
    expectation that matched no run fails instead of passing. Disabled expectations are left out. `versions`:
    where each run's agent version is read from (`RunRef.agent_version`; default: as the live pipeline's).

    An evaluation that checked nothing does not pass: traces of which no span was usable are bad input
    (`EvalInputError`), and an expectation file none of whose expectations scored a run fails, naming the
    agents of the runs that were seen (a typo in a selector, or the wrong traces). `allow_empty` accepts both.
    """
    if not 0.0 <= min_pass_rate <= 1.0:
        raise ValueError(f"min_pass_rate must be within 0..1, got {min_pass_rate}")
    progress = progress or _NoProgress()
    privacy = (extract or ExtractConfig()).privacy
    by_file = read_expectations(expectations, privacy)
    enabled = sorted((exp for found in by_file.values() for exp in found if exp.enabled), key=lambda exp: exp.name)
    files = trace_files(traces)
    progress.phase("reading traces", len(files))
    inputs = read_traces(files, on_file=lambda _: progress.advance())
    if not inputs.spans and not allow_empty:
        raise EvalInputError([_no_usable_span(len(inputs.files), inputs.stats.skipped_total)])
    runs = sorted(rebuild_runs(inputs.spans, extract), key=_run_order)
    progress.phase("scoring runs", len(runs))
    index = ExpectationIndex(enabled)
    results, unmatched = _score_all(
        runs, index, inputs.source_of, judge, progress, versions=versions or AgentVersionConfig(), privacy=privacy
    )
    summaries = [
        _aggregate(exp, [r for r in results if r.expectation == exp.name], min_pass_rate, require_runs)
        for exp in enabled
    ]
    summary = InputSummary(
        trace_files=[str(p) for p in inputs.files],
        expectation_files=[str(p) for p in by_file],
        spans=len(inputs.spans),
        skipped_spans=inputs.stats.skipped_total,
        skipped_examples=inputs.stats.examples,
        runs=len(runs),
        base64_id_spans=inputs.stats.id_encodings.get("base64", 0),
    )
    matched = {result.expectation for result in results}
    nothing = [] if allow_empty else _nothing_scored(by_file, matched, runs)
    return EvalResult(
        ok=all(s.ok for s in summaries) and not nothing,
        nothing_scored=nothing,
        inputs=summary,
        judge=judge is not None,
        expectations=summaries,
        results=results,
        unmatched=unmatched,
    )


def _no_usable_span(files: int, skipped: int) -> str:
    why = f"all {skipped} spans were unusable (see why below)" if skipped else "they hold no span"
    return f"nothing to evaluate: no usable span in {files} trace file(s): {why} (--allow-empty accepts it)"


def _nothing_scored(by_file: dict[Path, list[Expectation]], matched: set[str], runs: list[AgentRun]) -> list[str]:
    """Why each expectation file that scored no run checked nothing: the agents of the runs seen."""
    agents = Counter(run.agent_name or "(unnamed)" for run in runs)
    seen = ", ".join(f"agent {name!r} ({n})" for name, n in agents.most_common()) or "none"
    return [
        f"{path}: no run matched its expectations; runs seen: {seen}"
        for path, found in by_file.items()
        if found and not {exp.name for exp in found} & matched
    ]
