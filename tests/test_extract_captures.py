"""Every recorded framework capture in testdata/traces reproduces its truth file exactly.

The captures come from the frameworks' own instrumentation with scripted models, so each run's
calls are known; both encodings (OTLP protobuf and OTLP/JSON) must give the same runs.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from toolscore.collector.extract import ExtractStats, rebuild_runs
from toolscore.collector.sources import LogBatch, join_log_events, read_trace_file
from toolscore.collector.spans import SpanRecord
from toolscore.scorers import AgentRun, Trajectory

TRACES = Path(__file__).parent / "testdata" / "traces"
MCP = Path(__file__).parent / "testdata" / "mcp"
TRUTHS = sorted((Path(__file__).parent / "testdata" / "truth").glob("*/*.truth.json"))


def _as_truth(runs: list[AgentRun]) -> list[dict[str, Any]]:
    return [
        {
            "trace_id": run.trace_id,
            "agent_span_id": run.span_id,
            "agent_name": run.agent_name,
            "incomplete": run.incomplete,
            "calls": [
                {"name": c.name, "args": c.args, "call_id": c.call_id, "error": c.error, "final": c.final}
                for c in run.calls
            ],
        }
        for run in runs
    ]


def _expected_call(call: dict[str, Any]) -> dict[str, Any]:
    """A truth call as `_as_truth` writes one: a missing call id is none, `final_answer`/`finish` (the shared
    captures' names for the flag) are `final`; a call whose outcome the trace does not hold (`outcome_captured:
    false`) has no `error` to compare (its run must be flagged incomplete instead: see below)."""
    final = bool(call.get("final") or call.get("final_answer") or call.get("finish"))
    expected = {"name": call["name"], "args": call["args"], "call_id": call.get("call_id"), "error": call["error"]}
    if call.get("outcome_captured") is False:
        del expected["error"]
    return expected | {"final": final}


def _like(actual: list[dict[str, Any]], expected: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`actual` runs (`_as_truth`) without the `error` of the calls whose expected outcome is not captured."""
    for run, want in zip(actual, expected, strict=False):
        for call, wanted in zip(run["calls"], want["calls"], strict=False):
            if "error" not in wanted:
                del call["error"]
    return actual


def _expected(truth_path: Path) -> list[dict[str, Any]]:
    """The truth's runs as `_as_truth` writes them. A run the truth marks `incomplete` must come out flagged: its
    trace does not record all it did (content capture off: the calls it made are the truth's `calls_made`, and
    `calls`, what the trace records, is empty; or an outcome no span holds)."""
    truth = json.loads(truth_path.read_text())
    keys = ("trace_id", "agent_span_id", "agent_name")
    return [
        {
            **{key: run[key] for key in keys},
            "incomplete": run.get("incomplete", False),
            "calls": [_expected_call(c) for c in run["calls"]],
        }
        for run in truth["runs"]
    ]


def _capture(truth_path: Path, encoding: str) -> Path:
    """The capture a truth file describes, in `encoding` (`.pb` or `.json`)."""
    folder = MCP if truth_path.parent.name == "mcp" else TRACES / truth_path.parent.name
    return folder / truth_path.name.replace(".truth.json", encoding)


def _read(capture: Path) -> list[SpanRecord]:
    """The capture's spans, with the GenAI log events of the logs export beside it (`<scenario>.logs.pb`) joined."""
    logs = LogBatch()
    spans = read_trace_file(capture, logs=logs)
    beside = capture.with_name(capture.name.replace(capture.suffix, ".logs" + capture.suffix))
    if beside.exists():
        read_trace_file(beside, logs=logs)
        assert join_log_events(spans, logs.events) == []
    return spans


def _case_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name.removesuffix('.truth.json')}"


def test_every_framework_capture_has_a_truth_file() -> None:
    assert {p.parent.name for p in TRUTHS} >= {"openai-agents", "pydantic-ai", "vercel-ai", "mcp"}
    assert len(TRUTHS) >= 16


@pytest.mark.parametrize("encoding", [".pb", ".json"])
@pytest.mark.parametrize("truth_path", TRUTHS, ids=_case_id)
def test_capture_reproduces_truth(truth_path: Path, encoding: str) -> None:
    stats = ExtractStats()
    spans = _read(_capture(truth_path, encoding))

    runs = rebuild_runs(spans, stats=stats)

    expected = _expected(truth_path)
    assert _like(_as_truth(runs), expected) == expected
    assert stats.runs == len(runs)
    assert stats.inferred_runs == json.loads(truth_path.read_text()).get("inferred_runs", 0)
    assert stats.skipped == json.loads(truth_path.read_text()).get("skipped", {})


@pytest.mark.parametrize("truth_path", TRUTHS, ids=_case_id)
def test_capture_gives_same_runs_shuffled_duplicated_and_split(truth_path: Path) -> None:
    spans = _read(_capture(truth_path, ".pb"))
    shuffled = list(spans) + list(spans[: len(spans) // 2])
    random.Random(7).shuffle(shuffled)
    stats = ExtractStats()

    runs = rebuild_runs(iter(shuffled), stats=stats)

    expected = _expected(truth_path)
    assert _like(_as_truth(runs), expected) == expected
    assert stats.duplicate_spans == len(spans) // 2


def test_failed_calls_keep_their_error_type() -> None:
    by_framework = {}
    for framework in ("pydantic-ai", "vercel-ai", "openai-agents", "mastra"):
        runs = rebuild_runs(read_trace_file(TRACES / framework / "e_tool_error_retry.pb"))
        by_framework[framework] = [(c.error, c.error_type) for c in runs[0].calls]

    assert by_framework == {
        "pydantic-ai": [(True, "pydantic_ai.exceptions.ToolRetryError"), (False, None)],
        "vercel-ai": [(True, "Error"), (False, None)],
        "openai-agents": [(True, "_OTHER"), (False, None)],
        "mastra": [(True, "_OTHER"), (False, None)],  # `error.type` = Mastra's placeholder `unknown`
    }


def test_runs_carry_convention_input_output_and_start() -> None:
    runs = rebuild_runs(read_trace_file(TRACES / "vercel-ai" / "g_two_runs_one_trace.json"))
    pyd = rebuild_runs(read_trace_file(TRACES / "pydantic-ai" / "g_two_runs_one_trace.json"))

    assert [(r.convention, r.agent_name, r.input, r.output) for r in runs] == [
        ("vercel_ai", "triage-agent", "Where is order A-1?", "A-1 shipped."),
        ("vercel_ai", "followup-agent", "And the weather in Oslo?", "Oslo is sunny."),
    ]
    assert [(r.convention, r.input, r.output) for r in pyd] == [
        ("pydantic_ai", "Weather in Rome?", "Rome is 21C."),
        ("pydantic_ai", "And Milan in F?", "Milan is 70F."),
    ]
    assert all(r.start_ns and r.attributes.get("gen_ai.operation.name") == "invoke_agent" for r in runs + pyd)
    assert runs[0].resource["service.name"] == "capture-vercel-ai"


PARALLEL = (
    "c_parallel",
    "i_parallel_random_ids",
    "j_tool_spans_parallel",
    "k_responses_parallel",
    "l_responses_streamed",
)
"""Scenarios whose model issues every tool call in one response (tests/captures/capture_scenarios.py)."""
SEQUENTIAL = ("b_sequential", "e_tool_error_retry", "m_responses_error")
"""Scenarios whose model issues one tool call per response."""
MESSAGE_NAMES = PARALLEL + SEQUENTIAL
NO_MODEL_SPANS = {
    "adk-openinference": "OpenInference's ADK instrumentor records every model call of a run onto ADK's invoke_agent "
    "span, each overwriting the last (ADK schema v2 has no call_llm span), so no span holds one model response",
}
"""Capture folders whose traces have no span per model response: their calls state no model message."""
NOT_CAPTURED = [p for p in TRUTHS if json.loads(p.read_text()).get("content_captured") is False]
"""Captures made with content capture off whose spans hold no call: their truths list the calls made under each
run's `calls_made`, none under `calls` (tests/captures/openai_tool_loop.py `not_captured`)."""
UNSEEN = [p for p in TRUTHS if any("calls_made" in run for run in json.loads(p.read_text())["runs"])]
"""Captures whose runs' calls are in no span under them (content capture off; LiteLLM's streamed responses, logged
outside the run's trace): the calls made are under each run's `calls_made`, none under `calls`."""
MESSAGE_CASES = [
    p
    for p in TRUTHS
    if p.name.removesuffix(".truth.json") in MESSAGE_NAMES and p.parent.name not in NO_MODEL_SPANS and p not in UNSEEN
]


def _messages(run: AgentRun) -> list[list[str]]:
    """The run's calls (ids, else names) grouped by model message: neighbours with one `message_index`."""
    groups: list[list[str]] = []
    previous: int | None = None
    for call in run.calls:
        assert "message_index" in call.model_fields_set, "a run with model spans states each call's message"
        if not groups or call.message_index != previous:
            groups.append([])
        groups[-1].append(call.call_id or call.name)
        previous = call.message_index
    return groups


@pytest.mark.parametrize("truth_path", MESSAGE_CASES, ids=_case_id)
def test_calls_of_one_model_response_share_a_message(truth_path: Path) -> None:
    runs = rebuild_runs(_read(_capture(truth_path, ".pb")))
    calls = [[c.call_id or c.name for c in run.calls if not c.final] for run in runs]
    finals = [[c.call_id or c.name for c in run.calls if c.final] for run in runs]

    messages = [_messages(run) for run in runs]

    if truth_path.name.removesuffix(".truth.json") in PARALLEL:
        expected = [[mine] + [[f] for f in final] for mine, final in zip(calls, finals, strict=True)]
    else:
        expected = [[[c] for c in mine] + [[f] for f in final] for mine, final in zip(calls, finals, strict=True)]
    assert messages == expected


@pytest.mark.parametrize("folder", sorted(NO_MODEL_SPANS))
def test_calls_of_a_trace_without_model_responses_state_no_message(folder: str) -> None:
    # No model span to tell one response's calls from the next: the calls compare one by one, none grouped.
    cases = [p for p in TRUTHS if p.parent.name == folder and p.name.removesuffix(".truth.json") in MESSAGE_NAMES]
    assert cases
    for truth_path in cases:
        runs = rebuild_runs(_read(_capture(truth_path, ".pb")))
        calls = [call for run in runs for call in run.calls]
        assert calls
        assert not any("message_index" in call.model_fields_set for call in calls), truth_path.name


@pytest.mark.parametrize("framework", ["pydantic-ai", "openai-agents", "langgraph-openinference", "crewai"])
def test_strict_trajectory_takes_the_parallel_calls_of_a_trace_in_any_order(framework: str) -> None:
    run = rebuild_runs(_read(TRACES / framework / "c_parallel.pb"))[0]
    reordered = [{"name": c.name, "args": c.args} for c in reversed(run.calls)]

    one_message = Trajectory(mode="strict", expected=[{**c, "message": 0} for c in reordered]).score(run)
    one_per_message = Trajectory(mode="strict", expected=[{**c, "message": i} for i, c in enumerate(reordered)]).score(
        run
    )

    assert len(run.calls) == 3
    assert (one_message.value, one_per_message.value) == (1.0, 0.0)
    assert one_per_message.details["first_mismatch_message"] == 0


@pytest.mark.parametrize("folder", ["agent-framework", "agent-framework-chat"])
def test_agent_framework_tool_without_arguments_reads_empty_arguments_from_its_span_alone(folder: str) -> None:
    # Agent Framework records a call without arguments as `gen_ai.tool.call.arguments` = "None"; the model's `{}`
    # in the chat span would cover it, so the chat spans and their events are left out here.
    spans = [s for s in _read(TRACES / folder / "j_no_arg_tool.pb") if not s.name.startswith("chat ")]
    assert [s.attributes["gen_ai.tool.call.arguments"] for s in spans if s.name.startswith("execute_tool")] == ["None"]

    (run,) = rebuild_runs(spans)

    assert [(c.name, c.args, c.args_state, c.call_id) for c in run.calls] == [("get_utc_time", {}, "value", "call_j1")]


def test_agent_framework_without_sensitive_data_marks_arguments_not_captured() -> None:
    # ENABLE_SENSITIVE_DATA off: no arguments on tool spans, no messages on chat spans, no message events.
    for capture in sorted((TRACES / "agent-framework-nosensitive").glob("*.pb")):
        runs = rebuild_runs(_read(capture))

        calls = [c for run in runs for c in run.calls]
        assert calls, capture.name
        assert all(c.args is None and c.args_state == "not_captured" for c in calls), capture.name


@pytest.mark.parametrize("truth_path", NOT_CAPTURED, ids=_case_id)
def test_run_whose_calls_were_not_captured_is_flagged_incomplete(truth_path: Path) -> None:
    # Content capture off and no tool span: the calls are in no span. A run that made some must come out
    # incomplete (not scored as a run that called nothing); a run that made none must not.
    truth = json.loads(truth_path.read_text())
    runs = {run.span_id: run for run in rebuild_runs(_read(_capture(truth_path, ".pb")))}

    flagged = {run["agent_span_id"]: runs[run["agent_span_id"]].incomplete for run in truth["runs"]}

    assert flagged == {run["agent_span_id"]: bool(run["calls_made"]) for run in truth["runs"]}
    assert all(run["incomplete"] == bool(run["calls_made"]) for run in truth["runs"])


def test_not_captured_cases_include_runs_with_and_without_calls() -> None:
    made = [bool(run["calls_made"]) for p in NOT_CAPTURED for run in json.loads(p.read_text())["runs"]]
    assert {p.parent.name for p in NOT_CAPTURED} >= {"openai-openinference-hidden", "openai-openllmetry-nocontent"}
    assert True in made
    assert False in made


FLAGGED = [p for p in TRUTHS if any("incomplete" in run for run in json.loads(p.read_text())["runs"])]
"""Truths that say which of their runs cannot be read whole (`incomplete`): calls or outcomes no span holds."""


@pytest.mark.parametrize("truth_path", FLAGGED, ids=_case_id)
def test_runs_are_flagged_incomplete_where_the_truth_says(truth_path: Path) -> None:
    truth = json.loads(truth_path.read_text())
    runs = {run.span_id: run for run in rebuild_runs(_read(_capture(truth_path, ".pb")))}

    flagged = {run["agent_span_id"]: runs[run["agent_span_id"]].incomplete for run in truth["runs"]}

    assert flagged == {run["agent_span_id"]: run.get("incomplete", False) for run in truth["runs"]}


def test_a_call_whose_outcome_is_not_captured_is_in_an_incomplete_run() -> None:
    unread = [
        (p, run)
        for p in TRUTHS
        for run in json.loads(p.read_text())["runs"]
        if any(call.get("outcome_captured") is False for call in run["calls"])
    ]
    assert unread
    assert all(run.get("incomplete") is True for _, run in unread)
