"""JSON text → Python values exactly as `json.loads` gives them, at orjson's speed where that is safe.

Extraction parses JSON once per tool call (its arguments) and once per run message list; with the
standard library that was about a tenth of turning spans into runs. orjson decodes every document
`json.loads` accepts to an equal value of the same types, with two exceptions, both routed back to
`json` so results never depend on which decoder ran:

- integers outside 64 bits come back from orjson as floats (precision lost): text holding a run of
  19 or more digits is handed to `json` (found with one `translate` over the encoded bytes);
- documents orjson refuses and `json` accepts (`NaN`, `Infinity`, numbers that overflow to
  infinity, lone surrogates) are handed to `json`, which also raises the error for text neither
  accepts, so callers see `json`'s `ValueError` as before. The one difference from `json.loads`:
  a lone surrogate in a decoded string becomes U+FFFD (see `_without_lone_surrogates`).

Text nested more than `MAX_DEPTH` levels is not JSON here either (a `ValueError`), so that every
caller keeps it as it keeps any other text that is not JSON (arguments stay raw text). Decoders
reach deeper (orjson 1,024 levels, `json` the interpreter's recursion limit), but everything that
writes or compares a value afterwards recurses once per level too: the standard encoder (eval
reports, `toolscore extract`, score details) fails somewhere under 1,000 levels, depending on the
stack it starts from, and failed the whole report or trace. No tool's arguments nest that deep.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from toolscore.collector.utf8 import valid_utf8

__all__ = ["MAX_DEPTH", "decode_json"]

MAX_DEPTH = 128
"""Deepest nesting of arrays and objects decoded; deeper text is not JSON (see the module docstring)."""

_DIGIT_RUNS = bytes(48 if 48 <= b <= 57 else 91 if b in (91, 123) else 32 for b in range(256))
"""Every ASCII digit becomes `0`, `[` and `{` become `[`, every other byte a space: digit runs survive as runs of
`0`, and one count gives the opening brackets (UTF-8 never encodes another character with an ASCII byte)."""
_SHALLOW_BYTES = 2 * (MAX_DEPTH + 1) - 1
"""The longest text that cannot nest more than `MAX_DEPTH` levels (each level past it takes two brackets)."""
_LONG_RUN = b"0" * 19
"""The shortest digit run that can spell an integer beyond 64 bits (int64 max has 19 digits)."""


def decode_json(text: str) -> Any:
    """`json.loads(text)`: the same value or the same `ValueError`; nested too deeply, a `ValueError` too."""
    # Fewer brackets than levels allowed cannot nest deeper (counted at C speed); only texts with
    # more, rare for arguments, have their value walked.
    try:
        data = text.encode()
    except UnicodeEncodeError:  # lone surrogates: orjson refuses them, json keeps them
        value = _loads(text)
        brackets = text.count("[") + text.count("{")
    else:
        marks = data.translate(_DIGIT_RUNS)
        # Nesting deeper than `MAX_DEPTH` takes more openers and as many closers: shorter text cannot.
        brackets = marks.count(b"[") if len(data) > _SHALLOW_BYTES else 0
        if marks.find(_LONG_RUN) != -1:  # not `in`, which first tries a bytes operand as an int (a formatted error)
            value = _loads(text)
        else:
            try:
                value = orjson.loads(data)
            except orjson.JSONDecodeError:
                value = _loads(text)
    if brackets > MAX_DEPTH and _deeper_than(value, MAX_DEPTH):
        raise ValueError(f"JSON text nested more than {MAX_DEPTH} levels")
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest more than `limit` levels in `value`, walked without recursion."""
    left: list[tuple[Any, int]] = [(value, 1)]
    while left:
        item, depth = left.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        if depth > limit:
            return True
        left.extend((child, depth + 1) for child in item if isinstance(child, dict | list))
    return False


def _loads(text: str) -> Any:
    try:
        value = json.loads(text)
        return _without_lone_surrogates(value) if "\\u" in text or not text.isascii() else value
    except RecursionError:
        raise ValueError("JSON text nested deeper than the decoder's recursion limit") from None


def _without_lone_surrogates(value: Any) -> Any:
    """Strings with each lone surrogate as U+FFFD: decoded JSON is where toolscore's text gets them.

    `"\\ud800"` is valid JSON and decodes to a str that no UTF-8 writer takes (sqlite3, protobuf, the
    OTLP exporters refuse it, and with it a row or a whole batch). Cleaned here, where only the
    fallback decoder can produce them, everything read from the value is writable text.
    """
    if isinstance(value, str):
        return valid_utf8(value)
    if isinstance(value, list):
        return [_without_lone_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {valid_utf8(key): _without_lone_surrogates(item) for key, item in value.items()}
    return value
