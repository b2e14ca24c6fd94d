"""A run span's runs rebuilt from the spans under it alone are the runs the whole trace's rebuild gives.

`rebuild_under` is what a pending trace's settle uses when its runs settle one at a time, so it must give,
for every run at or under a run span, exactly what `rebuild_runs` over the whole trace gives, field by field,
with the same calls dropped: for every framework capture in testdata/traces and every synthetic shape of the
parity test, under several extraction configs, and for each of those traces with any one span missing
(spans whose parent never came, which the whole rebuild makes inferred runs of their own), plus shapes the
captures lack: a session of runs under an unrecognised root, a run span under another run's tool, a cycle
of parents through a run span and one beside it.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.pipeline_builders import genai_run, record, run_attrs, tool_attrs
from tests.test_pipeline_parity import CASES
from toolscore.collector.extract import (
    ClassifiedSpan,
    ExtractConfig,
    ExtractStats,
    Role,
    classify_span,
    rebuild_runs,
    rebuild_under,
)
from toolscore.collector.spans import SpanRecord
from toolscore.scorers import AgentRun

TRACE = "5e55101" + "0" * 25
_OI = {"tool.name": "lookup", "input.value": "{}"}

EXTRA: dict[str, list[SpanRecord]] = {
    # a chat session: three runs one after another under a root no convention recognises, a tool beside them
    "session": [
        record("a000000000000000", None, "session", {"session.id": "s1"}, TRACE),
        *genai_run("1000000000000000", ["search_flights", "book_flight"], "a000000000000000", TRACE),
        *genai_run("2000000000000000", ["search_hotels"], "a000000000000000", TRACE),
        *genai_run("3000000000000000", [], "a000000000000000", TRACE),
        record("b000000000000001", "a000000000000000", "execute_tool audit", tool_attrs("audit", "x1"), TRACE),
    ],
    # a run span under another run's tool, with an uninstrumented sub-agent under one of its own tools
    "run-under-a-tool": [
        record("1000000000000000", None, "invoke_agent travel", run_attrs("travel"), TRACE),
        record("1000000000000001", "1000000000000000", "execute_tool delegate", tool_attrs("delegate", "d1"), TRACE),
        *genai_run("2000000000000000", ["ask", "book_flight"], "1000000000000001", TRACE),
        record("2000000000000101", "2000000000000001", "worker", {"test_case.id": "t"}, TRACE),
        record("2000000000000102", "2000000000000101", "execute_tool search", tool_attrs("search", "w1"), TRACE),
        # the sub-agent's calls in two conventions: its convention is that of the call first among the spans
        record("2000000000000103", "2000000000000101", "lookup", {"openinference.span.kind": "TOOL", **_OI}, TRACE),
    ],
    # parents in a cycle: through a run span (its parent is its own tool) and beside it, through no run
    "cycles": [
        record("1000000000000000", "1000000000000001", "invoke_agent travel", run_attrs("travel"), TRACE),
        record("1000000000000001", "1000000000000000", "execute_tool search", tool_attrs("search", "c1"), TRACE),
        record("1000000000000002", "1000000000000000", "execute_tool book", tool_attrs("book", "c2"), TRACE),
        record("3000000000000000", "3000000000000001", "loop", {}, TRACE),
        record("3000000000000001", "3000000000000000", "execute_tool audit", tool_attrs("audit", "c3"), TRACE),
        *genai_run("4000000000000000", ["search"], "3000000000000000", TRACE),
    ],
}

CONFIGS = {
    "default": ExtractConfig(),
    "one-call-per-run": ExtractConfig(max_calls_per_run=1),
    "no-inferred-runs": ExtractConfig(infer_runs=False),
}


class _Dropped(ExtractStats):
    """Stats that keep every drop of calls with its run."""

    def __init__(self) -> None:
        super().__init__()
        self.dropped: list[tuple[str | None, str, int]] = []

    def calls_dropped(self, reason: str, count: int, run_span_id: str | None) -> None:
        super().calls_dropped(reason, count, run_span_id)
        self.dropped.append((run_span_id, reason, count))


def _traces(spans: list[SpanRecord]) -> dict[str, dict[str, ClassifiedSpan]]:
    """Each trace's spans by id, classified, the first delivery of each kept (as the pipeline's store keeps them)."""
    traces: dict[str, dict[str, ClassifiedSpan]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, {}).setdefault(span.span_id, classify_span(span))
    return traces


def _is_under(nodes: dict[str, ClassifiedSpan], span_id: str | None, top: str) -> bool:
    """Whether `top` is met walking up from `span_id` through the spans that are there (at most once each)."""
    seen: set[str] = set()
    while span_id is not None and span_id in nodes and span_id not in seen:
        if span_id == top:
            return True
        seen.add(span_id)
        span_id = nodes[span_id].span.parent_id
    return False


def _dump(runs: list[AgentRun]) -> list[dict[str, Any]]:
    return [run.model_dump() for run in runs]


def _check(spans: list[SpanRecord], config: ExtractConfig) -> int:
    """Compare, for every run span of every trace in `spans`; returns how many run spans were compared."""
    compared = 0
    for nodes in _traces(spans).values():
        whole = _Dropped()
        runs = rebuild_runs([node.span for node in nodes.values()], config, whole)
        for top, node in nodes.items():
            if node.role is not Role.RUN:
                continue
            local = _Dropped()
            under = rebuild_under(nodes, top, config, local)
            expected = [run for run in runs if _is_under(nodes, run.span_id, top)]
            if not any(run.span_id == top for run in expected):  # a layer of the run right under it (*Run layers*)
                assert whole.skipped["run_layer"], "every run span is a run, or a layer of one"
                assert any(nodes[run.span_id or ""].span.parent_id == top for run in expected)
            assert _dump(under) == _dump(expected), f"runs under {top}"
            ids = {run.span_id for run in expected}
            assert [d for d in local.dropped if d[0] is not None] == [d for d in whole.dropped if d[0] in ids]
            compared += 1
    return compared


ALL = {**CASES, **EXTRA}


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("case", ALL)
def test_the_runs_under_a_run_span_are_the_whole_traces(case: str, config: str) -> None:
    spans = ALL[case]
    run_spans = {(s.trace_id, s.span_id) for s in spans if classify_span(s).role is Role.RUN}
    assert _check(spans, CONFIGS[config]) == len(run_spans)


@pytest.mark.parametrize("case", ALL)
def test_the_runs_under_a_run_span_are_the_whole_traces_with_any_one_span_missing(case: str) -> None:
    spans = ALL[case]
    for i in range(len(spans)):
        _check(spans[:i] + spans[i + 1 :], CONFIGS["default"])


def test_spans_beside_a_run_span_are_not_read() -> None:
    """The session's second run, rebuilt alone, reads its own tool span, not the other runs' or the root's."""
    nodes = _traces(EXTRA["session"])[TRACE]
    stats = ExtractStats()
    (run,) = rebuild_under(nodes, "2000000000000000", None, stats)
    assert (stats.spans, stats.calls, [call.name for call in run.calls]) == (2, 1, ["search_hotels"])
    assert run.parent_span_id is None, "above it only the unrecognised root: no run invoked it"


def test_only_a_run_span_has_its_runs_under_it() -> None:
    nodes = _traces(EXTRA["session"])[TRACE]
    with pytest.raises(ValueError, match="no run span"):
        rebuild_under(nodes, "a000000000000000")
