"""Did the agent pick the right tool (or tools, in the right order)? Mastra's tool-call accuracy.

Reproduces `createToolCallAccuracyScorerCode` from `@mastra/evals` 1.10.2 exactly, including the
parts that surprise: only some invocation states count, flexible order checks use each name's
*first* occurrence, and an empty `expected_order` is "present" and falls back to single-tool mode.
"""

from __future__ import annotations

from itertools import pairwise
from operator import attrgetter
from typing import Any, Literal

from pydantic import Field, PrivateAttr, model_validator

from toolscore.scorers._base import ScorerBase
from toolscore.scorers._model import AgentRun, Score, ToolCall

__all__ = ["COUNTED_STATES", "ToolSelection", "check_order"]

COUNTED_STATES = frozenset({"result", "call", "output-error"})
"""Invocation states Mastra counts as a made call; every other state (`partial-call`, `pending`,
`output-available`, `RESULT`, `""`, ...) is skipped. A call with no recorded state is a `result`."""


def check_order(actual: list[str], expected: list[str], strict: bool) -> bool:
    """Mastra's `checkToolOrder`.

    Strict: the very same sequence. Flexible: each expected name's *first* occurrence in `actual`
    must exist and the occurrences must be strictly increasing, so a repeated expected name always
    fails (`["a", "a"]` vs `["a", "a"]` is false) and later occurrences are never used.
    """
    if strict:
        return actual == expected
    positions = []
    for name in expected:
        if name not in actual:
            return False
        positions.append(actual.index(name))
    return all(earlier < later for earlier, later in pairwise(positions))


def _counted(call: ToolCall) -> bool:
    return bool(call.name) and ("result" if call.state is None else call.state) in COUNTED_STATES


_by_message = attrgetter("message_index")

_Verdict = tuple[float, str, bool, bool | None]
"""(value, explanation, correct_tool_called, correct_order_called) for one sequence of counted names."""

_VERDICT_LIMIT = 1024
"""Distinct name sequences whose verdict a scorer keeps."""


def _call_infos(calls: tuple[ToolCall, ...]) -> list[dict[str, Any]]:
    """Counted calls as Mastra's `toolCallInfos`; `invocation_index` still counts skipped calls.

    Fields are read from each call's `__dict__`: a pydantic model's attribute access goes through its
    `__getattr__` hook, and this runs once per call of every scored run.
    """
    fields = [call.__dict__ for call in calls]
    message = fields[0]["message_index"] if fields else 0
    for f in fields:
        if f["message_index"] != message:
            break
    else:  # one assistant message (every run read from a trace)
        return [
            {
                "tool_name": f["name"],
                "tool_call_id": f["call_id"] or f"{message}-{index}",
                "message_index": message,
                "invocation_index": index,
            }
            for index, f in enumerate(fields)
            if f["name"] and (f["state"] is None or f["state"] in COUNTED_STATES)  # `_counted`, inlined
        ]
    infos: list[dict[str, Any]] = []
    seen_in_message: dict[int, int] = {}
    for call in sorted(calls, key=_by_message):
        message = call.message_index
        index = seen_in_message.get(message, 0)
        seen_in_message[message] = index + 1
        if _counted(call):
            infos.append(
                {
                    "tool_name": call.name,
                    "tool_call_id": call.call_id or f"{message}-{index}",
                    "message_index": message,
                    "invocation_index": index,
                }
            )
    return infos


class ToolSelection(ScorerBase):
    """Binary: 1 when the expected tool was called (or the expected order was followed), else 0.

    Checks, in Mastra's order:
    1. no counted call -> 0, whatever the options (so no calls and `expected_order=[]` is 0);
    2. `expected_order` non-empty -> 1 iff the order check passes (`expected_tool` is ignored);
    3. `expected_tool` empty or not given -> 0 (only reachable with `expected_order=[]`);
    4. `strict` -> 1 iff the only counted call is `expected_tool`;
    5. otherwise -> 1 iff `expected_tool` is among the counted calls.

    Only calls with a non-empty name and a counted state (`COUNTED_STATES`) count. Construction
    fails when neither `expected_tool` (non-empty) nor `expected_order` (even `[]`) is given.
    Mastra also refuses runs with no output messages; a toolscore run always has an output, so a
    run with no calls simply scores 0.
    """

    type: Literal["tool_selection"] = "tool_selection"
    expected_tool: str | None = Field(default=None, description="The tool that should be called. Default: none.")
    strict: bool = Field(
        default=False,
        description="Single tool: it must be the only call. Order: the calls must be exactly `expected_order`.",
    )
    expected_order: list[str] | None = Field(
        default=None, description="Tool names that must be called in this order. Default: none."
    )

    @model_validator(mode="after")
    def _needs_an_expectation(self) -> ToolSelection:
        if not self.expected_tool and self.expected_order is None:
            raise ValueError(
                "Either expected_tool or expected_order must be provided "
                "(Mastra: Either expectedTool or expectedToolOrder must be provided)"
            )
        return self

    def _correct_tool(self, actual: list[str]) -> bool:
        if not self.expected_tool:
            return False
        if self.strict:
            return actual == [self.expected_tool]
        return self.expected_tool in actual

    def _order_rule(self, actual: list[str]) -> str:
        if self.strict:
            return "strict: identical sequence"
        firsts = [actual.index(name) if name in actual else None for name in self.expected_order or ()]
        return f"flexible: first occurrences {firsts} must be increasing"

    @property
    def expected_names(self) -> list[str]:
        """The names the score checks: a non-empty `expected_order` (it decides alone), else
        `expected_tool`; none when neither is usable (the score is 0 whatever the calls)."""
        if self.expected_order:
            return list(self.expected_order)
        return [self.expected_tool] if self.expected_tool else []

    def counted(self, calls: tuple[ToolCall, ...]) -> list[int]:
        """Indices of the calls the score reads, in the order it reads them (by message, then as made):
        named calls in a `COUNTED_STATES` state, as `_call_infos` takes them. Public so a diff can tell
        the calls the score skipped from the calls it judged."""
        order = sorted(range(len(calls)), key=lambda k: calls[k].message_index)
        return [k for k in order if _counted(calls[k])]

    def pairs(self, calls: tuple[ToolCall, ...]) -> dict[int, tuple[int, bool]]:
        """Expected name index (`expected_names`) -> (index in `calls`, counted as a match), as the
        score reads the calls; a name it found no call for has no entry. Public so a diff shows what
        the score counted.

        Strict `expected_order` compares the i-th counted call with expected name i (Mastra compares the
        sequences). Otherwise each expected name stands for the *first* counted call of that name, as
        `check_order` looks it up: a name expected twice meets the same call twice, and later calls of
        the name are never used.
        """
        counted = self.counted(calls)
        names = self.expected_names
        if self.strict and self.expected_order:
            return {i: (k, calls[k].name == name) for i, (name, k) in enumerate(zip(names, counted, strict=False))}
        first: dict[str, int] = {}
        for k in counted:
            first.setdefault(calls[k].name, k)
        return {i: (first[name], True) for i, name in enumerate(names) if name in first}

    _verdicts: dict[tuple[str, ...], _Verdict] = PrivateAttr(default_factory=dict)

    def _score(self, run: AgentRun) -> Score:
        infos = _call_infos(run.calls)
        actual = [info["tool_name"] for info in infos]
        # The verdict depends only on the sequence of counted names, and production runs repeat a few
        # sequences: memoized (bounded), a scored run costs the infos, the details and the Score.
        verdicts: dict[tuple[str, ...], _Verdict] = self.__pydantic_private__["_verdicts"]  # type: ignore[index]
        key = tuple(actual)
        verdict = verdicts.get(key)
        if verdict is None:
            verdict = self._verdict(actual, len(run.calls))
            if len(verdicts) < _VERDICT_LIMIT:
                verdicts[key] = verdict
        value, explanation, correct_tool, order_ok = verdict
        return self._result(value, explanation, self._details(actual, infos, correct_tool, order_ok))

    def _verdict(self, actual: list[str], recorded: int) -> _Verdict:
        correct_tool = self._correct_tool(actual)
        order_ok = None if self.expected_order is None else check_order(actual, self.expected_order, self.strict)
        if not actual:
            value, why = 0.0, f"no counted tool calls ({recorded} recorded, none named and in a counted state)"
        elif self.expected_order:
            value = 1.0 if order_ok else 0.0
            verdict = "followed" if order_ok else "not followed"
            why = f"expected order {self.expected_order} ({self._order_rule(actual)}) {verdict}"
        elif not self.expected_tool:
            value, why = 0.0, "expected_order is empty and no expected_tool is given"
        else:
            rule = "the only call" if self.strict else "among the calls"
            value = 1.0 if correct_tool else 0.0
            why = f"expected tool {self.expected_tool!r} {'is' if correct_tool else 'is not'} {rule}"
        return value, f"{why}; actual tools {actual} -> score {value:g}", correct_tool, order_ok

    def _details(
        self, actual: list[str], infos: list[dict[str, Any]], correct_tool: bool, order_ok: bool | None
    ) -> dict[str, Any]:
        """Mastra's `preprocessStepResult` in snake_case and its key order; absent options stay absent."""
        details: dict[str, Any] = {}
        if self.expected_tool is not None:
            details["expected_tool"] = self.expected_tool
        details["actual_tools"] = actual
        details["strict_mode"] = self.strict
        if self.expected_order is not None:
            details["expected_tool_order"] = list(self.expected_order)
        details["has_tool_calls"] = bool(actual)
        details["correct_tool_called"] = correct_tool
        details["tool_call_infos"] = infos
        details["correct_order_called"] = order_ok
        return details
