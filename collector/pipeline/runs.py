"""Split into runs and extract calls: the agent runs of one pending trace that are ready to be scored.

Extraction is the same `rebuild_runs` the batch tools use (as `rebuild_classified`, over the trace's
records as the store classified them on arrival), so a run scored in the pipeline has exactly the
calls `toolscore extract` gives for the same spans. A run span that settles selects its run and the
inferred runs nested in it (an uninstrumented sub-agent under one of its tools), which cannot receive
spans any more once their enclosing run has ended. Runs without a run span of their own are taken
when the whole trace finishes; when the span they were inferred at is still held (a candidate, see
`group`), their scores go onto it.
"""

from __future__ import annotations

from toolscore.collector.extract import ExtractConfig, ExtractStats, rebuild_classified
from toolscore.collector.pipeline.group import PendingTrace, cut_under
from toolscore.scorers.model import AgentRun

__all__ = ["ReadyRun", "runs_of_trace", "runs_under"]

ReadyRun = tuple[AgentRun, bool]
"""A run to score, and whether its run span is held (its scores can still go onto the span)."""


def _mark(run: AgentRun, incomplete: bool, trace: PendingTrace[object]) -> AgentRun:
    """Flag a run whose spans are not all here: cut by the caller's rule, or by an earlier finish of its trace."""
    if run.incomplete or not (incomplete or cut_under(trace, run.span_id or "")):
        return run
    return run.model_copy(update={"incomplete": True})


def runs_under(
    trace: PendingTrace[object],
    run_span_id: str,
    incomplete: bool,
    config: ExtractConfig,
    stats: ExtractStats,
) -> list[ReadyRun]:
    """The run of `run_span_id` (first) and the not yet scored inferred runs it encloses."""
    ready: list[ReadyRun] = []
    nested: list[ReadyRun] = []
    incomplete = incomplete or trace.truncated
    for run in rebuild_classified(trace.records.values(), config, stats):
        if run.span_id == run_span_id:
            ready.append((_mark(run, incomplete, trace), True))
        elif run.inferred and run.parent_span_id == run_span_id and run.span_id not in trace.scored:
            nested.append((_mark(run, incomplete, trace), False))
    return ready + nested


def runs_of_trace(
    trace: PendingTrace[object], complete: bool, config: ExtractConfig, stats: ExtractStats
) -> list[ReadyRun]:
    """Every run of a finishing trace not scored yet; `complete` is False when its root never came."""
    if trace.root_id is not None and trace.root_id in trace.scored and not trace.holds_runs:
        return []  # the root was a run, already scored with everything under it: nothing is left to rebuild
    ready: list[ReadyRun] = []
    for run in rebuild_classified(trace.records.values(), config, stats):
        if run.span_id in trace.scored:
            continue
        held = trace.held.get(run.span_id)  # a run span that has ended is complete whatever the trace does
        ended_run = held is not None and held.run
        ready.append((_mark(run, trace.truncated or (not complete and not ended_run), trace), held is not None))
    return ready
