"""What a trace split by a resize leaves to each replica: the loadbalancing exporter sends the batches a trace's
spans came in before the ring changed to one replica and the rest to another, so each replica rebuilds runs from
a prefix or a suffix of the trace's spans in the order they ended (the run span, ending last, in the suffix).

Why runs can go unscored after a resize (tests/test_otelcol_scaleout.py, docs/deploy.md): a run marked by a run
span (an agent span of its convention) is rebuilt on the side that holds that span, at every split point; an
*inferred* run (a convention with no agent span, such as OpenInference from LangChain.js: the run is inferred at
the top of the spans above a model response) is rebuilt only where its model response is, at the topmost of its
ancestors that side holds, so when the response and the run's root are on different replicas, no replica
rebuilds the run under its own span id. When the response is the topmost span its side holds, that side rebuilds
no run at all for a run that called no tool (a response alone is one step of a loop, not a run)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.capture_replay import CAPTURES
from toolscore.collector.extract import rebuild_runs
from toolscore.collector.sources import read_trace_file
from toolscore.collector.spans import SpanRecord


def _splits(spans: list[SpanRecord]) -> Iterator[tuple[list[SpanRecord], list[SpanRecord]]]:
    """Every (before, after) split of each trace's spans in the order they ended, as a resize cuts them."""
    traces: dict[str, list[SpanRecord]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    for items in traces.values():
        ordered = sorted(items, key=lambda span: (span.end_ns, bool(span.parent_id)))
        for k in range(1, len(ordered)):
            yield ordered[:k], ordered[k:]


def _captures() -> list[str]:
    """Every capture's trace export (a `.logs.pb` beside one holds its GenAI log events, no spans)."""
    paths = sorted(CAPTURES.glob("*/*.pb"))
    return [str(path.relative_to(CAPTURES)) for path in paths if not path.name.endswith(".logs.pb")]


@pytest.mark.parametrize("capture", _captures())
def test_a_run_with_a_run_span_is_rebuilt_on_one_side_of_every_split(capture: str) -> None:
    spans = read_trace_file(CAPTURES / capture)
    marked = {(run.trace_id, run.span_id) for run in rebuild_runs(spans) if not run.inferred}
    for before, after in _splits(spans):
        trace_id = before[0].trace_id
        found = {(run.trace_id, run.span_id) for side in (before, after) for run in rebuild_runs(side)}
        assert {key for key in marked if key[0] == trace_id} - found == set(), f"split after {len(before)} spans"


def test_an_inferred_run_whose_model_response_went_to_the_other_replica_is_rebuilt_on_neither() -> None:
    """LangChain.js `d_no_tool`: its spans split after the 4th (as 3 batches are, one to each side of a resize)
    leave the model response and the chain around it on one side, the root `smalltalk_agent` on the other."""
    spans = read_trace_file(CAPTURES / "langchainjs-openinference" / "d_no_tool.pb")
    (whole,) = rebuild_runs(spans)
    assert (whole.agent_name, whole.inferred) == ("smalltalk_agent", True)
    before, after = next((b, a) for b, a in _splits(spans) if len(b) == 4)
    assert [run.agent_name for run in rebuild_runs(after)] == [], "the root's side has no model response"
    (fragment,) = rebuild_runs(before)
    assert fragment.inferred
    assert fragment.span_id != whole.span_id, "inferred at the top of what this side holds"


def test_an_inferred_run_whose_model_response_reached_a_replica_alone_is_rebuilt_on_neither_side() -> None:
    """LangGraph `d_no_tool_coordinator` (OpenInference) split after its 2nd span: the prompt and the model
    response, which called no tool, on one side without the chain they ran in, the rest on the other."""
    spans = read_trace_file(CAPTURES / "langgraph-openinference" / "d_no_tool_coordinator.pb")
    (whole,) = rebuild_runs(spans)
    assert (whole.agent_name, whole.inferred, whole.calls) == ("coordinator", True, ())
    before, after = next((b, a) for b, a in _splits(spans) if len(b) == 2)
    assert [span.name for span in before] == ["Prompt", "ChatOpenAI"]
    assert rebuild_runs(before) == [], "a model response alone is no run"
    assert rebuild_runs(after) == [], "the root's side has no model response"
