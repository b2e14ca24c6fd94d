"""A `CallDiff` as text: the same cells for every report (console, JUnit, Markdown, pytest).

Calls read like Python calls with JSON values, `search_docs(query="otel spans", limit=2)`, cut to a
width a terminal and a CI log show on one line; the differing keys follow on their own lines, each
saying what was expected and what was passed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from toolscore.collector.evaluate.diff import CallDiff, DiffRow, KeyDiff

__all__ = ["DiffCells", "cells", "format_call", "format_value", "order_text", "render_diff"]

MAX_CELL = 60
"""Characters of one call shown in a column; longer calls end in `…`."""

MODEL_ONLY_NOTE = "seen only in the model's output (no tool span)"
"""The note on a call no tool span recorded (`ToolCall.model_only`)."""

STATUS_TEXT = {
    "ok": "ok",
    "wrong_args": "wrong args",
    "wrong_call": "wrong call",
    "missing": "missing",
    "extra": "extra",
    "not_counted": "not counted",
}


def order_text(diff: CallDiff) -> str:
    """How the calls were lined up, after the rule in a diff's heading."""
    return "by position" if diff.positional else "in order" if diff.ordered else "any order"


def format_value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def format_call(view: dict[str, Any] | None, index: int | None, width: int = MAX_CELL) -> str:
    """`2. search_docs(query="x", limit=2)`; `-` when there is no call."""
    if view is None:
        return "-"
    args = view.get("args")
    prefix = f"{index}. " if index is not None else ""
    if "args" not in view:  # no arguments recorded, or (expected side) none asked for
        return _cut(f"{prefix}{view['name']}", width)
    if isinstance(args, dict):
        inner = ", ".join(f"{key}={format_value(value)}" for key, value in args.items())
    else:
        inner = format_value(args) if args != "<not captured>" else "<args not captured>"
    return _cut(f"{prefix}{view['name']}({inner})", width)


def _key_line(diff: KeyDiff) -> str:
    where = diff.key or "arguments"
    if diff.kind == "missing":
        return f"{where}: missing (expected {format_value(diff.expected)})"
    if diff.kind == "extra":
        return f"{where}: not expected (got {format_value(diff.actual)})"
    return f"{where}: expected {format_value(diff.expected)}, got {format_value(diff.actual)}"


def status_text(row: DiffRow) -> str:
    text = STATUS_TEXT[row.status]
    if row.out_of_order:
        text = "out of order" if row.status == "ok" else f"{text}, out of order"
    return f"{text} (allowed)" if row.allowed else text


@dataclass(frozen=True, slots=True)
class DiffCells:
    """One row as text: status, expected call, actual call, and notes (differing keys, positions)."""

    ok: bool
    status: str
    expected: str
    actual: str
    notes: tuple[str, ...]


def _notes(row: DiffRow) -> tuple[str, ...]:
    notes = [_key_line(key) for key in row.keys]
    if row.status == "not_counted" and row.actual is not None:
        state = row.actual.get("state")
        notes.append("no tool name" if not row.actual["name"] else f"state {format_value(state)}, not scored")
    if row.out_of_order:
        notes.append(f"called {row.actual_index}., expected {row.expected_index}.")
    if row.actual is not None and row.actual.get("model_only"):
        notes.append(MODEL_ONLY_NOTE)
    return tuple(notes)


def cells(diff: CallDiff, width: int = MAX_CELL) -> list[DiffCells]:
    return [
        DiffCells(
            ok=row.ok,
            status=status_text(row),
            expected=format_call(row.expected, row.expected_index, width),
            actual=format_call(row.actual, row.actual_index, width),
            notes=_notes(row),
        )
        for row in diff.rows
    ]


def render_diff(diff: CallDiff, indent: str = "  ", width: int = MAX_CELL) -> str:
    """Aligned plain text, a header line then one line per call; notes indented under their call."""
    rows = cells(diff, width)
    status_w = max([len("status"), *(len(r.status) for r in rows)])
    expected_w = max([len("expected"), *(len(r.expected) for r in rows)])
    header = f"{indent}  {'':{status_w}}  {'expected':{expected_w}}  actual"
    lines = [f"{indent}{diff.rule or 'calls'}, {order_text(diff)}:", header]
    for row in rows:
        mark = " " if row.ok else "✗"
        lines.append(f"{indent}{mark} {row.status:{status_w}}  {row.expected:{expected_w}}  {row.actual}".rstrip())
        lines.extend(f"{indent}  {'':{status_w}}    {note}" for note in row.notes)
    if not rows:
        lines.append(f"{indent}  (no calls expected, none made)")
    return "\n".join(lines)
