"""Tool calls built without validation are indistinguishable from validated ones."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from toolscore.collector.extract import ExtractConfig, ExtractStats
from toolscore.collector.extract.conventions.base import NOT_CAPTURED, IssuedCall, ToolRead
from toolscore.collector.extract.values import build_call
from toolscore.collector.spans import SpanRecord
from toolscore.scorers import ToolCall

EPOCH_NS = 1_767_225_600_000_000_000


def _span(start_ns: int = EPOCH_NS, end_ns: int = EPOCH_NS + 5) -> SpanRecord:
    return SpanRecord("ab" * 16, "cd" * 8, None, "execute_tool search", start_ns=start_ns, end_ns=end_ns)


def _validated(call: ToolCall) -> ToolCall:
    """The same call through the validating constructor, with the fields `build_call` passes."""
    fields = ("name", "args", "args_state", "result", "call_id", "error", "error_type", "start_ns", "end_ns", "span_id")
    return ToolCall(**{name: getattr(call, name) for name in fields})


def _assert_same(built: ToolCall, validated: ToolCall) -> None:
    assert built == validated
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


@pytest.mark.parametrize(("read", "issued", "span"), READS)
def test_built_calls_equal_validated_calls(read: ToolRead, issued: IssuedCall | None, span: SpanRecord) -> None:
    call = build_call(read, span, issued, ExtractConfig(), ExtractStats())

    _assert_same(call, _validated(call))


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
