"""Run boundaries, call order and robustness of `rebuild_runs`, on spans from the real OTel SDK."""

from __future__ import annotations

import json
import random
from dataclasses import replace

from toolscore.collector.extract import ExtractConfig, ExtractStats, Role, rebuild_runs
from toolscore.collector.extract.conventions import EXTRACTORS
from toolscore.collector.extract.conventions.base import Read
from toolscore.collector.spans import SpanRecord
from toolscore.scorers import AgentRun

from .test_extract_support import Traces, genai_chat, genai_run, genai_tool, hex_id, missing_parent


def _names(run: AgentRun) -> list[str]:
    return [f"{c.name}:{c.call_id}" for c in run.calls]


def _two_runs_with_parallel_steps() -> Traces:
    """An app span with two agent runs; the first has a parallel step whose calls all start at once."""
    t = Traces()
    app = t.span("handle_request", start=0, end=100)
    first = t.span("invoke_agent a", genai_run("a"), parent=app, start=1, end=50)
    t.span(
        "chat m", genai_chat(("c_z", "w", {"i": 1}), ("c_a", "w", {"i": 2}), ("c_m", "t", {})), parent=first, start=2
    )
    for call_id, name in (("c_m", "t"), ("c_a", "w"), ("c_z", "w")):
        t.span(f"execute_tool {name}", genai_tool(name, call_id), parent=first, start=10, end=20)
    t.span("chat m", genai_chat(("c_b", "s", {})), parent=first, start=21)
    t.span("execute_tool s", genai_tool("s", "c_b"), parent=first, start=30)
    second = t.span("invoke_agent b", genai_run("b"), parent=app, start=60, end=90)
    t.span("execute_tool x", genai_tool("x", "c_x"), parent=second, start=70)
    return t


def test_parallel_calls_keep_model_order_when_they_start_together() -> None:
    runs = rebuild_runs(_two_runs_with_parallel_steps().records())

    assert [r.agent_name for r in runs] == ["a", "b"]
    assert _names(runs[0]) == ["w:c_z", "w:c_a", "t:c_m", "s:c_b"]
    assert _names(runs[1]) == ["x:c_x"]


def test_equal_start_without_model_response_orders_by_call_id_then_span_id() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=50)
    for call_id in ("c_2", "c_3", "c_1"):
        t.span("execute_tool w", genai_tool("w", call_id), parent=run, start=10)
    no_ids = [t.span("execute_tool v", genai_tool("v"), parent=run, start=20) for _ in range(3)]

    calls = rebuild_runs(t.records())[0].calls

    assert [c.call_id for c in calls[:3]] == ["c_1", "c_2", "c_3"]
    assert [c.span_id for c in calls[3:]] == sorted(hex_id(s) for s in no_ids)


def test_arguments_too_deep_to_compare_do_not_stop_the_model_order() -> None:
    """1,000 levels: more than `decode_json` takes, so kept raw; such calls still match the response by name."""
    deep = "[" * 1_000 + "]" * 1_000
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=50)
    parts = [{"type": "tool_call", "name": name, "arguments": deep} for name in ("w", "v")]
    response = {
        "gen_ai.operation.name": "chat",
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
    }
    t.span("chat", response, parent=run, start=1)
    for name in ("v", "w"):
        t.span(f"execute_tool {name}", genai_tool(name, None, deep), parent=run, start=10)

    (built,) = rebuild_runs(t.records())

    assert [(c.name, c.args_state) for c in built.calls] == [("w", "raw"), ("v", "raw")]


def test_model_order_applies_within_a_batch_not_across_steps() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=50)
    t.span("chat", genai_chat(("c_late", "b", {}), ("c_early", "a", {})), parent=run, start=1)
    t.span("execute_tool a", genai_tool("a", "c_early"), parent=run, start=5)
    t.span("execute_tool b", genai_tool("b", "c_late"), parent=run, start=5)
    t.span("chat", genai_chat(("c_next", "a", {})), parent=run, start=10)
    t.span("execute_tool a", genai_tool("a", "c_next"), parent=run, start=11)

    assert _names(rebuild_runs(t.records())[0]) == ["b:c_late", "a:c_early", "a:c_next"]


def test_call_ids_repeated_by_a_later_response_tie_each_call_to_its_own_response() -> None:
    """A provider numbering calls per response repeats ids; the order must not depend on arrival."""
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=50)
    t.span("chat", genai_chat(("call_b", "t", {"x": 1}), ("call_a", "t", {"x": 2})), parent=run, start=1)
    t.span("execute_tool t", genai_tool("t", "call_a", {"x": 2}), parent=run, start=5, end=8)
    t.span("execute_tool t", genai_tool("t", "call_b", {"x": 1}), parent=run, start=5, end=9)
    t.span("chat", genai_chat(("call_b", "u", {}), ("call_a", "v", {})), parent=run, start=20)
    t.span("execute_tool v", genai_tool("v", "call_a", {}), parent=run, start=30, end=31)
    t.span("execute_tool u", genai_tool("u", "call_b", {}), parent=run, start=30, end=33)
    records = t.records()

    for spans in (records, records[::-1]):
        (built,) = rebuild_runs(spans)
        assert [(c.name, c.args) for c in built.calls] == [("t", {"x": 1}), ("t", {"x": 2}), ("u", {}), ("v", {})]


def test_shuffled_spans_split_batches_and_duplicates_give_the_same_runs() -> None:
    records = _two_runs_with_parallel_steps().records()
    expected = rebuild_runs(records)
    shuffled = records + records[::3]
    random.Random(3).shuffle(shuffled)
    batches = [shuffled[i : i + 4] for i in range(0, len(shuffled), 4)]
    stats = ExtractStats()

    again = rebuild_runs((span for batch in batches for span in batch), stats=stats)

    assert again == expected
    assert stats.duplicate_spans == len(records[::3])
    assert sum(len(r.calls) for r in again) == 5


def test_nested_agent_is_its_own_run_and_the_parent_keeps_the_invoking_call() -> None:
    t = Traces()
    outer = t.span("invoke_agent outer", genai_run("outer"), start=0, end=100)
    delegate = t.span("execute_tool delegate", genai_tool("delegate", "c_d"), parent=outer, start=10, end=60)
    inner = t.span("invoke_agent inner", genai_run("inner"), parent=delegate, start=11, end=59)
    t.span("execute_tool search", genai_tool("search", "c_s"), parent=inner, start=20)
    t.span("execute_tool after", genai_tool("after", "c_a"), parent=outer, start=70)

    runs = {r.agent_name: r for r in rebuild_runs(t.records())}

    assert _names(runs["outer"]) == ["delegate:c_d", "after:c_a"]
    assert _names(runs["inner"]) == ["search:c_s"]
    assert runs["inner"].parent_span_id == hex_id(outer)
    assert runs["outer"].parent_span_id is None


OI_AUTOGEN = "openinference.instrumentation.autogen_agentchat"


def _oi_agent(name: str) -> dict[str, str]:
    """openinference-instrumentation-autogen-agentchat's AGENT span of an agent's turn (`<name>.on_messages_stream`)."""
    return {"openinference.span.kind": "AGENT", "graph.node.id": name}


def test_a_run_span_right_under_a_run_span_of_the_same_agent_is_that_run_traced_twice() -> None:
    # AutoGen's own invoke_agent around OpenInference's AGENT span: one run, the inner span's, the outer a layer
    t = Traces()
    outer = t.span("invoke_agent coordinator", genai_run("coordinator"), start=0, end=100)
    inner = t.span(
        "coordinator.on_messages_stream", _oi_agent("coordinator"), parent=outer, start=1, end=99, scope=OI_AUTOGEN
    )
    delegate = t.span("execute_tool expert", genai_tool("expert", "c_d"), parent=inner, start=10, end=60)
    expert_outer = t.span("invoke_agent expert", genai_run("expert"), parent=delegate, start=11, end=59)
    expert = t.span(
        "expert.on_messages_stream", _oi_agent("expert"), parent=expert_outer, start=12, end=58, scope=OI_AUTOGEN
    )
    t.span("execute_tool search", genai_tool("search", "c_s"), parent=expert, start=20)
    t.span("execute_tool late", genai_tool("late", "c_l"), parent=outer, start=99.5)  # beside the inner span
    stats = ExtractStats()

    runs = rebuild_runs(t.records(), stats=stats)

    assert [(r.span_id, r.agent_name, _names(r)) for r in runs] == [
        (hex_id(inner), "coordinator", ["expert:c_d", "late:c_l"]),
        (hex_id(expert), "expert", ["search:c_s"]),
    ]
    assert [r.parent_span_id for r in runs] == [None, hex_id(inner)]
    assert stats.skipped["run_layer"] == 2


def test_a_layer_of_a_layer_folds_into_the_innermost_run() -> None:
    t = Traces()
    top = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    middle = t.span("a.on_messages_stream", _oi_agent("a"), parent=top, start=1, end=99, scope=OI_AUTOGEN)
    inner = t.span("invoke_agent a", genai_run("a"), parent=middle, start=2, end=98)
    t.span("execute_tool search", genai_tool("search", "c_s"), parent=inner, start=20)
    stats = ExtractStats()

    (run,) = rebuild_runs(t.records(), stats=stats)

    assert (run.span_id, _names(run), run.parent_span_id) == (hex_id(inner), ["search:c_s"], None)
    assert stats.skipped["run_layer"] == 2


def test_a_run_span_right_under_a_run_span_of_another_agent_is_a_run_of_its_own() -> None:
    t = Traces()
    outer = t.span("invoke_agent team", genai_run("team"), start=0, end=100)
    inner = t.span("member.on_messages_stream", _oi_agent("member"), parent=outer, start=1, end=99, scope=OI_AUTOGEN)
    t.span("execute_tool search", genai_tool("search", "c_s"), parent=inner, start=20)
    nameless = t.span("invoke_agent", {"gen_ai.operation.name": "invoke_agent"}, parent=inner, start=30, end=40)
    t.span("invoke_agent", {"gen_ai.operation.name": "invoke_agent"}, parent=nameless, start=31, end=39)
    stats = ExtractStats()

    runs = rebuild_runs(t.records(), stats=stats)

    assert [(r.span_id, r.agent_name) for r in runs][:2] == [(hex_id(outer), "team"), (hex_id(inner), "member")]
    assert len(runs) == 4, "two runs without a name are no layers of each other"
    assert runs[1].parent_span_id == hex_id(outer)
    assert "run_layer" not in stats.skipped


def test_trace_without_run_span_makes_the_root_an_inferred_run() -> None:
    t = Traces()
    root = t.span("handle_request", start=0, end=10)
    t.span("execute_tool w", genai_tool("w", "c_1"), parent=root, start=1)
    stats = ExtractStats()

    (run,) = rebuild_runs(t.records(), stats=stats)

    assert (run.span_id, run.inferred, run.agent_name, run.convention) == (
        hex_id(root),
        True,
        "handle_request",
        "genai",
    )
    assert stats.inferred_runs == 1


def test_missing_root_uses_the_topmost_ancestor_that_arrived() -> None:
    t = Traces()
    anchor = t.span("unrelated", start=0)
    step = t.span("step 1", parent=missing_parent(anchor), start=1, end=9)
    t.span("execute_tool w", genai_tool("w", "c_1"), parent=step, start=2)
    records = [r for r in t.records() if r.name != "unrelated"]

    (run,) = rebuild_runs(records)

    assert (run.span_id, run.inferred, _names(run)) == (hex_id(step), True, ["w:c_1"])


def test_calls_under_an_uninstrumented_sub_agent_get_their_own_inferred_run() -> None:
    t = Traces()
    outer = t.span("invoke_agent outer", genai_run("outer"), start=0, end=100)
    delegate = t.span("execute_tool delegate", genai_tool("delegate", "c_d"), parent=outer, start=10, end=60)
    sub = t.span("sub_graph", parent=delegate, start=11, end=59)
    t.span("execute_tool search", genai_tool("search", "c_s"), parent=sub, start=20)

    runs = rebuild_runs(t.records())

    assert [(r.span_id, r.inferred, _names(r)) for r in runs] == [
        (hex_id(outer), False, ["delegate:c_d"]),
        (hex_id(sub), True, ["search:c_s"]),
    ]
    assert runs[1].parent_span_id == hex_id(outer)


def test_no_inferred_runs_when_disabled() -> None:
    t = Traces()
    root = t.span("handle_request", start=0, end=10)
    t.span("execute_tool w", genai_tool("w", "c_1"), parent=root, start=1)
    stats = ExtractStats()

    assert rebuild_runs(t.records(), ExtractConfig(infer_runs=False), stats) == []
    assert stats.skipped["call_without_run"] == 1


def test_run_without_calls_is_still_a_run() -> None:
    t = Traces()
    t.span("invoke_agent quiet", genai_run("quiet"), start=0)

    (run,) = rebuild_runs(t.records())

    assert (run.agent_name, run.calls, run.inferred) == ("quiet", (), False)


def test_unknown_convention_yields_no_runs_and_a_counted_reason() -> None:
    t = Traces()
    root = t.span("GET /health", {"http.request.method": "GET"}, start=0)
    t.span("SELECT", {"db.system": "postgresql"}, parent=root, start=1)
    stats = ExtractStats()

    assert rebuild_runs(t.records(), stats=stats) == []
    assert stats.skipped["unknown_convention"] == 1
    assert stats.spans == 2


class _Broken:
    """A convention whose reader fails on every span it claims."""

    name = "broken"

    def classify(self, span: SpanRecord) -> Role | None:
        return Role.TOOL if span.name == "broken" else None

    def read(self, span: SpanRecord, role: Role) -> Read:
        raise ValueError("unreadable")


def test_a_failing_reader_is_counted_and_the_rest_of_the_trace_survives() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=10)
    t.span("broken", parent=run, start=1)
    t.span("execute_tool w", genai_tool("w", "c_1"), parent=run, start=2)
    stats = ExtractStats()

    (result,) = rebuild_runs(t.records(), stats=stats, extractors=(_Broken(), *EXTRACTORS))

    assert _names(result) == ["w:c_1"]
    assert stats.skipped["read_error:broken"] == 1


def test_calls_beyond_the_per_run_limit_are_dropped_and_counted() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=10)
    for i in range(5):
        t.span("execute_tool w", genai_tool("w", f"c_{i}"), parent=run, start=1 + i)
    stats = ExtractStats()

    (result,) = rebuild_runs(t.records(), ExtractConfig(max_calls_per_run=3), stats)

    assert [c.call_id for c in result.calls] == ["c_0", "c_1", "c_2"]
    assert stats.skipped["calls_over_limit"] == 2


def test_calls_that_ran_one_after_another_keep_their_start_order() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=50)
    t.span("chat", genai_chat(("c_2", "b", {}), ("c_1", "a", {})), parent=run, start=1)
    t.span("execute_tool a", genai_tool("a", "c_1"), parent=run, start=5, end=6)
    t.span("execute_tool b", genai_tool("b", "c_2"), parent=run, start=7, end=8)

    assert _names(rebuild_runs(t.records())[0]) == ["a:c_1", "b:c_2"]


def test_parent_cycles_from_a_bad_exporter_do_not_hang_or_crash() -> None:
    t = Traces()
    first = t.span("execute_tool a", genai_tool("a", "c_1"), start=1)
    second = t.span("step", start=0)
    records = {r.name: r for r in t.records()}
    looped = [
        replace(records["execute_tool a"], parent_id=hex_id(second)),
        replace(records["step"], parent_id=hex_id(first), trace_id=records["execute_tool a"].trace_id),
    ]

    (run,) = rebuild_runs(looped)

    assert (run.inferred, _names(run)) == (True, ["a:c_1"])


def test_inferred_run_stops_at_the_topmost_span_a_convention_recognises() -> None:
    t = Traces()
    app = t.span("conversation", start=0, end=100)
    graphs = []
    for start, call_id in ((1, "c_1"), (50, "c_2")):
        graph = t.span("chat_graph", {"openinference.span.kind": "CHAIN"}, parent=app, start=start, end=start + 40)
        tool = {"openinference.span.kind": "TOOL", "tool.name": "w", "input.value": "{}", "tool.id": call_id}
        t.span("w", tool, parent=graph, start=start + 1)
        graphs.append(graph)

    runs = rebuild_runs(t.records())

    assert [(r.span_id, r.agent_name, r.inferred, _names(r)) for r in runs] == [
        (hex_id(graphs[0]), "chat_graph", True, ["w:c_1"]),
        (hex_id(graphs[1]), "chat_graph", True, ["w:c_2"]),
    ]
