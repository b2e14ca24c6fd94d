"""Split into runs and extract calls: the agent runs of one pending trace that are ready to be scored.

Extraction is the same `rebuild_runs` the batch tools use (as `rebuild_classified`, over the trace's
records as the store classified them on arrival), so a run scored in the pipeline has exactly the
calls `toolscore extract` gives for the same spans. A trace is rebuilt at each of its runs' scoring,
unless no span has changed it since its last rebuild, which is then reused (`rebuilt`): the calls left
out are counted for the runs scored from each rebuild only (`CountedStats`). A run
span that settles selects its run and the inferred runs nested in it (an uninstrumented sub-agent
under one of its tools, and any such sub-agent's own, however deep: `settled_by`), which cannot
receive spans any more once their enclosing run has ended.
While the trace's root has not come and no other run span of it is held, the settle rebuilds only the
spans under its run span (`rebuild_under`, which gives those runs exactly as the whole trace's rebuild
would): a chat session traced as one trace, whose runs settle one at a time as its turns come, so reads
each tool span at its own run's settle and once more at the trace's finish, not at every later settle.
Otherwise the trace is rebuilt whole, to be reused: by the held runs' settles (runs that came
together), or by the finish, which follows at once when the root has come and no run is held (a run
at the root has everything under it anyway). So is a trace with spans a full queue refused: telling
them to their runs takes every run of the trace.
Runs without a run span of their own are taken when the whole trace finishes; when the span they
were inferred at is still held (a candidate, see `group`), their scores go onto it. A run inferred at
a span whose parent never came (a subtree cut off by a lost span) is scored flagged incomplete,
whether or not the trace's root was a run. So is a run a span refused by a full queue belonged to
(see `refused`).
"""

from __future__ import annotations

import operator
from collections.abc import Collection, Mapping

from toolscore.collector.extract import ExtractConfig
from toolscore.collector.pipeline.counted_stats import CountedStats
from toolscore.collector.pipeline.group import PendingTrace, cut_under
from toolscore.collector.pipeline.rebuilt import enclosing_runs, kept_for_settles, rebuilt
from toolscore.collector.pipeline.refused import RefusedSpans, runs_missing_spans
from toolscore.scorers._model import AgentRun

__all__ = ["ReadyRun", "runs_of_trace", "runs_under"]

ReadyRun = tuple[AgentRun, bool]
"""A run to score, and whether its run span is held (its scores can still go onto the span)."""

_PARENT_ID = operator.attrgetter("span.parent_id")
_NO_RUNS: frozenset[str] = frozenset()


def _mark(run: AgentRun, incomplete: bool, trace: PendingTrace[object]) -> AgentRun:
    """Flag a run whose spans are not all here: cut by the caller's rule, by an earlier finish of its trace,
    or cut off from its run by a span that never came."""
    if run.incomplete or not (incomplete or _orphaned(run, trace) or cut_under(trace, run.span_id or "")):
        return run
    return run.model_copy(update={"incomplete": True})


def _orphaned(run: AgentRun, trace: PendingTrace[object]) -> bool:
    """An inferred run at a span whose parent is missing: part of a run whose spans did not all come.

    (Inferred at the topmost span that arrived, `rebuild_runs`' rule when an ancestor is missing.) A run
    span with a missing parent is not flagged: its calls are under it, whatever happened above it.
    """
    if not run.inferred:
        return False
    node = trace.records.get(run.span_id or "")
    parent_id = node.span.parent_id if node is not None else None
    return parent_id is not None and parent_id not in trace.records


def _connected(trace: PendingTrace[object]) -> bool:
    """Whether every kept span's parent is kept too, so that all of them hang from the trace's root."""
    parents = set(map(_PARENT_ID, trace.records.values()))
    parents.discard(None)
    return parents <= trace.records.keys()


def _missing(
    run_ids: Collection[str], trace: PendingTrace[object], refused: RefusedSpans | None
) -> Collection[str] | None:
    """The runs of `run_ids` (the whole trace's) that refused spans belonged to; None: any of them may have."""
    if refused is None:
        return _NO_RUNS
    return runs_missing_spans(refused, trace.records, run_ids)


def _refused_under(run: AgentRun, missing: Collection[str] | None) -> bool:
    return missing is None or (run.span_id or "") in missing


def runs_under(
    trace: PendingTrace[object],
    run_span_id: str,
    incomplete: bool,
    config: ExtractConfig,
    stats: CountedStats,
    *,
    refused: RefusedSpans | None = None,
) -> list[ReadyRun]:
    """The run of `run_span_id` (first) and the not yet scored inferred runs it encloses (`settled_by`).

    `refused`: the trace's spans a full queue turned away, whose runs are flagged incomplete. The calls
    these runs drop are counted in `stats` (`CountedStats.count_dropped`), not those of the trace's others.
    The rebuild stays on the trace for the next settle or the finish, if it is to be kept (`rebuilt`);
    a rebuild of the spans under `run_span_id` alone is not kept.
    """
    incomplete = incomplete or trace.truncated
    if _settles_alone(trace, run_span_id, refused):
        runs, dropped = stats.rebuild_under(trace.records, run_span_id, config)
        ready = _settled(runs, trace, run_span_id, incomplete, _NO_RUNS, enclosing=enclosing_runs(runs))
        stats.count_dropped(dropped, _span_ids(ready), finished=False)  # the rest: the finish's rebuild's
        return ready
    last = rebuilt(trace, config, stats)
    missing = _missing(last.run_ids, trace, refused)
    ready = _settled(last.runs, trace, run_span_id, incomplete, missing, enclosing=last.enclosing)
    taken = _span_ids(ready)
    last.dropped = stats.count_dropped(last.dropped, taken, finished=False)
    trace.rebuilt = kept_for_settles(last, trace, run_span_id, taken)
    return ready


def _settles_alone(trace: PendingTrace[object], run_span_id: str, refused: RefusedSpans | None) -> bool:
    """Whether the settle of `run_span_id` rebuilds the spans under it alone (see the module docstring)."""
    if trace.rebuilt is not None or refused is not None or trace.root_id is not None:
        return False
    return not any(held.run and span_id != run_span_id for span_id, held in trace.held.items())


def _settled(
    runs: list[AgentRun],
    trace: PendingTrace[object],
    run_span_id: str,
    incomplete: bool,
    missing: Collection[str] | None,
    *,
    enclosing: Mapping[str, str | None],
) -> list[ReadyRun]:
    """The run of `run_span_id` (first) and the not yet scored inferred runs it encloses (`enclosing`: each
    inferred run's enclosing run span, through other inferred runs; see `settled_by`), among `runs`."""
    ready: list[ReadyRun] = []
    nested: list[ReadyRun] = []
    for run in runs:
        if run.span_id == run_span_id:
            ready.append((_mark(run, incomplete or _refused_under(run, missing), trace), True))
        elif run.inferred and enclosing.get(run.span_id or "") == run_span_id and run.span_id not in trace.scored:
            held = run.span_id in trace.held  # a tool span that stands for it (see `group`)
            nested.append((_mark(run, incomplete or _refused_under(run, missing), trace), held))
    return ready + nested


def runs_of_trace(
    trace: PendingTrace[object],
    complete: bool,
    config: ExtractConfig,
    stats: CountedStats,
    *,
    refused: RefusedSpans | None = None,
) -> list[ReadyRun]:
    """Every run of a finishing trace not scored yet; `complete` is False when its root never came.

    `refused`: as for `runs_under`. The calls these runs drop are counted in `stats`, and so are the calls
    no run owns (their run span can no longer come).
    """
    if trace.root_id is not None and trace.root_id in trace.scored and not trace.holds_runs and _connected(trace):
        return []  # the root was a run, already scored with everything under it: nothing is left to rebuild
    ready: list[ReadyRun] = []
    last = rebuilt(trace, config, stats)
    missing = _missing(last.run_ids, trace, refused)
    for run in last.runs:
        if run.span_id in trace.scored:
            continue
        held = trace.held.get(run.span_id)  # a run span that has ended is complete whatever the trace does
        ended_run = held is not None and held.run
        incomplete = trace.truncated or (not complete and not ended_run) or _refused_under(run, missing)
        ready.append((_mark(run, incomplete, trace), held is not None))
    stats.count_dropped(last.dropped, _span_ids(ready), finished=True)
    return ready


def _span_ids(ready: list[ReadyRun]) -> set[str]:
    return {run.span_id or "" for run, _ in ready}
