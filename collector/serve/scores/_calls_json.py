"""The JSON text a scored run's calls are kept as in the score store: compact, valid UTF-8, bounded.

Whatever a call's arguments hold, the row can be written: orjson where it can (about ten times the
standard encoder's speed), the standard encoder where orjson refuses. Arguments decode from JSON
nested up to 1,024 levels (orjson's limit), but orjson encodes 254 and the standard encoder recurses
until the interpreter's limit (somewhere under 1,000, depending on the stack it starts from):
arguments nested deeper than that are kept as their JSON text, written by a loop over its own stack
(`walked_json`), in a string (`args_text`), cut at `max_args_chars` like any long arguments, so that a reader's
`json.loads` of the row does not meet the same limit.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from toolscore.collector.utf8 import valid_utf8
from toolscore.scorers._json_text import walked_json
from toolscore.scorers._model import AgentRun

__all__ = ["calls_json", "dumps"]

_encode = json.JSONEncoder(ensure_ascii=False, default=str).encode


def dumps(value: Any) -> str:
    """Compact JSON text, valid UTF-8; orjson unless it refuses.

    orjson refuses integers beyond 64 bits, which the standard encoder writes; both write anything
    else JSON cannot hold as its `str` (`default=str`). Non-finite floats, which only a span's own
    values can carry, are written `null` by orjson rather than the standard `NaN`. orjson also refuses
    lone surrogates (decoded from `"\\ud800"` in a call's arguments), which the standard encoder
    writes and SQLite would refuse: they become U+FFFD (`valid_utf8`).
    """
    try:
        return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # orjson.JSONEncodeError is one; it also refuses more than 254 levels
        return valid_utf8(_encode(value))  # RecursionError deeper still: the caller's to handle


def calls_json(run: AgentRun, max_calls: int, max_args_chars: int) -> str:
    """The run's first `max_calls` calls as JSON `[{"name", ..., "args"?}]`, long arguments cut and marked.

    The whole list is encoded once: when it is no longer than `max_args_chars`, no call's arguments
    can be, and that one call to the encoder is all a run costs. Otherwise each call is looked at.
    """
    entries = [call.to_json() for call in run.calls[:max_calls]]
    try:
        text = dumps(entries)
    except RecursionError:  # a call's arguments nest too deeply: `_call_json` finds which
        text = None
    if text is not None and len(text) <= max_args_chars:
        return text
    return "[" + ",".join(_call_json(entry, max_args_chars) for entry in entries) + "]"


def _call_json(entry: dict[str, Any], max_args_chars: int) -> str:
    try:
        text = dumps(entry)
    except RecursionError:
        args = valid_utf8(walked_json(entry["args"], max_args_chars + 1))
        entry["args_text"] = True
    else:
        if len(text) <= max_args_chars or "args" not in entry:
            return text
        args = dumps(entry["args"])
        if len(args) <= max_args_chars:
            return text
    if len(args) > max_args_chars:
        args = args[:max_args_chars]
        entry["args_truncated"] = True
    entry["args"] = args
    return dumps(entry)
