"""Tool calls and runs built without validation are indistinguishable from validated ones."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from toolscore.collector.extract import ExtractConfig, ExtractStats, rebuild_runs
from toolscore.collector.extract.conventions.base import NOT_CAPTURED, IssuedCall, ToolRead
from toolscore.collector.extract.model_calls import build_model_call
from toolscore.collector.extract.order import PendingCall
from toolscore.collector.extract.values import agent_run, build_call
from toolscore.collector.spans import SpanRecord
from toolscore.scorers import AgentRun, ToolCall

EPOCH_NS = 1_767_225_600_000_000_000


def _span(start_ns: int = EPOCH_NS, end_ns: int = EPOCH_NS + 5) -> SpanRecord:
    return SpanRecord("ab" * 16, "cd" * 8, None, "execute_tool search", start_ns=start_ns, end_ns=end_ns)


def _validated(call: ToolCall, message: int | None = None) -> ToolCall:
    """The same call through the validating constructor, with the fields `build_call` passes."""
    fields = ("name", "args", "args_state", "result", "call_id", "error", "error_type", "start_ns", "end_ns", "span_id")
    fields = (*fields, "final") if message is None else (*fields, "final", "message_index")
    return ToolCall(**{name: getattr(call, name) for name in fields})


def _assert_same(built: ToolCall | AgentRun, validated: ToolCall | AgentRun) -> None:
    assert built == validated
    assert list(built.__dict__) == list(validated.__dict__)  # declaration order, as validation fills it
    assert built.model_fields_set == validated.model_fields_set
    assert built.model_dump() == validated.model_dump()
    assert built.model_dump(exclude_unset=True) == validated.model_dump(exclude_unset=True)
    assert built.model_dump_json() == validated.model_dump_json()
    assert built.__pydantic_extra__ == validated.__pydantic_extra__
    assert built.__pydantic_private__ == validated.__pydantic_private__


READS: list[tuple[ToolRead, IssuedCall | None, SpanRecord]] = [
    (ToolRead("search", '{"q": "x", "n": [1, 2]}', "call_1", '{"ok": true}'), None, _span()),
    (ToolRead("search", NOT_CAPTURED, None, None, error=True, error_type="TimeoutError"), None, _span(0, 0)),
    (ToolRead("search", "not json", "c", {"rows": [1]}), IssuedCall("c", "search", '{"q": 1}'), _span()),
    (ToolRead(None, "", None, 3, handoff=True), IssuedCall("c9", "transfer", None), _span()),
]


@pytest.mark.parametrize("message", [None, 0, 3])
@pytest.mark.parametrize(("read", "issued", "span"), READS)
def test_built_calls_equal_validated_calls(
    read: ToolRead, issued: IssuedCall | None, span: SpanRecord, message: int | None
) -> None:
    call = build_call(read, span, issued, ExtractConfig(), ExtractStats(), message=message)

    _assert_same(call, _validated(call, message))
    assert ("message_index" in call.model_fields_set) is (message is not None)


def test_built_calls_stay_frozen_and_copyable() -> None:
    call = build_call(READS[0][0], _span(), None, ExtractConfig(), ExtractStats())

    with pytest.raises(ValidationError):
        call.name = "other"  # type: ignore[misc]
    copy = call.model_copy(update={"name": "other"})
    assert (copy.name, call.name, copy.args) == ("other", "search", {"q": "x", "n": [1, 2]})
    assert copy.model_fields_set == call.model_fields_set


class _Name(str):
    pass


def test_values_of_other_types_are_still_validated() -> None:
    read = ToolRead(_Name("search"), "{}", _Name("call_1"), error=1)  # type: ignore[arg-type]
    call = build_call(read, _span(), None, ExtractConfig(), ExtractStats())

    values: dict[str, Any] = {"name": call.name, "call_id": call.call_id, "error": call.error}
    assert {key: type(value) for key, value in values.items()} == {"name": str, "call_id": str, "error": bool}
    assert values == {"name": "search", "call_id": "call_1", "error": True}


def _run_spans() -> list[SpanRecord]:
    run = SpanRecord(
        "ab" * 16,
        "01" * 8,
        None,
        "invoke_agent travel",
        start_ns=EPOCH_NS,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "travel",
            "gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text", "content": "Plan it"}]}]',
            "note": "x" * 10_000,
        },
        resource={"service.name": "svc"},
    )
    tool = SpanRecord(
        "ab" * 16,
        "02" * 8,
        "01" * 8,
        "execute_tool search",
        start_ns=EPOCH_NS + 1,
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"},
    )
    return [run, tool]


def test_rebuilt_runs_equal_validated_runs() -> None:
    (run,) = rebuild_runs(_run_spans())
    validated = AgentRun(**{name: getattr(run, name) for name in run.model_fields_set})

    _assert_same(run, validated)
    assert (run.agent_name, run.input, run.tool_names) == ("travel", "Plan it", ["search"])
    assert len(run.attributes["note"]) == 4096  # capped
    copy = run.model_copy(update={"agent_name": "other"})
    assert (copy.agent_name, run.agent_name, copy.model_fields_set >= {"agent_name"}) == ("other", "travel", True)


def test_trusted_runs_own_their_default_dicts() -> None:
    first, second = AgentRun.trusted({"trace_id": "t"}), AgentRun.trusted({"trace_id": "u"})

    assert first.attributes == {}
    assert first.attributes is not second.attributes
    assert first.resource is not second.resource
    assert first == AgentRun(trace_id="t")
    assert first.model_fields_set == {"trace_id"}


def test_run_values_of_other_types_are_still_validated() -> None:
    fields: dict[str, Any] = {
        "trace_id": "ab" * 16,
        "span_id": "01" * 8,
        "agent_name": _Name("travel"),
        "input": None,
        "output": None,
        "calls": (),
        "attributes": {},
        "resource": {},
        "convention": "genai",
        "inferred": 0,
        "parent_span_id": None,
        "start_ns": None,
    }
    run = agent_run(fields)

    assert (type(run.agent_name), type(run.inferred), run.inferred) == (str, bool, False)
    with pytest.raises(ValidationError):
        agent_run({**fields, "agent_name": 7})


@pytest.mark.parametrize(
    "issued",
    [IssuedCall("c1", "search", {"q": "x"}), IssuedCall(None, "search", None), IssuedCall("c2", "s", "not json")],
)
def test_model_only_calls_equal_validated_calls(issued: IssuedCall) -> None:
    read = ToolRead(issued.name, issued.args, issued.call_id)
    pending = PendingCall(_span(), read, issued, "cd" * 8, 0, model_only=True)

    call = build_model_call(pending, ExtractConfig(), ExtractStats())

    fields = ("name", "args", "args_state", "call_id", "model_only")
    _assert_same(call, ToolCall(**{name: getattr(call, name) for name in fields}))
    assert (call.model_only, call.span_id) == (True, None)
