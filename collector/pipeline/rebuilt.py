"""A pending trace's last rebuild, reused by its next settle or its finish while no span has changed it.

A trace is rebuilt (`rebuild_runs`: every tool span read again) when one of its runs settles and when
it finishes. A trace of k runs whose spans came together (a chat session's runs under one root,
sub-agents under the tools of a run, sent in one export batch) was so rebuilt k + 1 times, each time
reading the tool spans of all k runs. A rebuild's result depends on the trace's kept spans
(`PendingTrace.records`) and the extraction config, fixed per engine, alone. The store drops
`PendingTrace.rebuilt` whenever it changes `records` (a span kept; spans waiting for their parent
slimmed when it comes), so a rebuild found there is what rebuilding again would give. Everything else
that changes between two uses is read after the rebuild, by `runs` and the engine, as without reuse:
which runs are scored, which spans are held, the trace's truncation, spans a full queue refused, an
earlier finish of the trace (a reopened trace is a new `PendingTrace`), whether it finishes complete,
and the registry the runs are matched against.

What is kept is bounded in time rather than counted against `max_pending_bytes`. It holds the runs
not scored yet only while each is one a held run span's settle scores (`settled_by`: that run span's,
or an inferred run nested under it, directly or under other inferred runs): such a settle is due
`settle_ms` after the span last arrived under that run span at the latest, and a span arriving drops
what is kept, so the runs are let go within `settle_ms` of the settle that kept them. A run left for
the trace's finish alone (an inferred run under no held run span) could wait `trace_idle_timeout_s`: a
rebuild that leaves one is not kept, and the finish rebuilds. What the finish needs besides runs stays
until then: the ids of the trace's runs and the calls dropped but not told yet (calls no run owns, when
`infer_runs` is off), a few dozen bytes each beside the spans they come from.
"""

from __future__ import annotations

import operator
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolscore.collector.extract import ExtractConfig
from toolscore.collector.pipeline.counted_stats import CountedStats, Dropped
from toolscore.scorers._model import AgentRun

if TYPE_CHECKING:
    from toolscore.collector.pipeline.group import HeldRun, PendingTrace

__all__ = ["Rebuilt", "enclosing_runs", "kept_for_settles", "rebuilt", "settled_by"]

_SPAN_ID = operator.attrgetter("span_id")


@dataclass(slots=True)
class Rebuilt:
    """What a coming use of a trace's rebuild needs of it."""

    runs: list[AgentRun]
    """The runs not scored yet, in the rebuild's order."""
    run_ids: frozenset[str]
    """The span ids of all the rebuild's runs, scored or not: a refused span is told to its run by them."""
    dropped: list[Dropped]
    """The calls it left out that are not told yet (`CountedStats.count_dropped`)."""
    enclosing: dict[str, str | None]
    """Each inferred run's nearest enclosing run that is not inferred, by span id (see `settled_by`)."""


def rebuilt(trace: PendingTrace[Any], config: ExtractConfig, stats: CountedStats) -> Rebuilt:
    """The trace's last rebuild if no span has changed it since, else a new one (not kept: `kept_for_settles`)."""
    last = trace.rebuilt
    if last is not None:
        return last
    runs, dropped = stats.rebuild(trace.records.values(), config)
    run_ids = frozenset(map(_SPAN_ID, runs))
    enclosing = enclosing_runs(runs)
    scored = trace.scored
    if not scored:  # mostly: a trace's first rebuild (plain loops: a comprehension is a call in Python 3.11)
        return Rebuilt(runs, run_ids, dropped, enclosing)
    left: list[AgentRun] = []
    for run in runs:
        if run.span_id not in scored:
            left.append(run)
    untold: list[Dropped] = []
    for entry in dropped:
        if entry[0] is None or entry[0] not in scored:  # a run is scored once: its dropped calls are told then
            untold.append(entry)
    return Rebuilt(left, run_ids, untold, enclosing)


def enclosing_runs(runs: list[AgentRun]) -> dict[str, str | None]:
    """`Rebuilt.enclosing` of a rebuild's runs: up each inferred run's `parent_span_id`s, through inferred runs.

    An uninstrumented sub-agent may itself call one through a tool (tool > tool > tool of different names:
    each inner tool is an inferred run, under the one above it), so the run span enclosing them all can be
    several links up. None: the chain ends without a run that is not inferred (an inferred run at the
    trace's root, or at a span whose parent never came). Walked over all of them, scored or not.
    """
    parents: dict[str, str | None] = {}
    for run in runs:
        if run.inferred:
            parents[run.span_id or ""] = run.parent_span_id
    if not parents:  # mostly: no run is inferred
        return {}
    enclosing: dict[str, str | None] = {}
    for span_id, parent in parents.items():
        current = parent
        for _ in range(len(parents)):  # bounded: parents form a tree, but spans may claim anything
            if current is None or current not in parents:
                break
            current = parents[current]
        enclosing[span_id] = None if current in parents else current
    return enclosing


def settled_by(run: AgentRun, last: Rebuilt) -> str | None:
    """The run span whose settle scores `run`, one of `last`'s: its own, or, inferred, its enclosing run's.

    An inferred run cannot receive spans any more once the run span enclosing it has ended and settled,
    however many inferred runs lie between. None: it is scored when its trace finishes.
    """
    if not run.inferred:
        return run.span_id
    return last.enclosing.get(run.span_id or "")


def kept_for_settles(last: Rebuilt, trace: PendingTrace[Any], settled: str, taken: Collection[str]) -> Rebuilt | None:
    """`last` as the run span `settled`'s settle leaves it for the next use, or None if it is not to be kept.

    `taken`: the runs scored from it now (their calls told). Kept only when every run left is one a held
    run span other than `settled` will score at its settle (see the module docstring).
    """
    left: list[AgentRun] = []
    held = trace.held
    for run in last.runs:
        if run.span_id in taken:
            continue
        if not _settles_with(settled_by(run, last), held, settled):
            return None
        left.append(run)
    last.runs = left
    return last


def _settles_with(owner: str | None, held: Mapping[str, HeldRun[Any]], settled: str) -> bool:
    """Whether `owner` (`settled_by` a run) is a held run span other than `settled`, which settles later."""
    if owner is None or owner == settled:
        return False
    span = held.get(owner)
    return span is not None and span.run
