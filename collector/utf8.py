"""Text that toolscore writes out (score store rows, run-span attributes, evaluation events) is valid UTF-8.

A Python `str` may hold lone surrogates (U+D800..U+DFFF) that no UTF-8 encoder accepts. Decoded JSON
is where they come from: `"\\ud800"` is valid JSON text, valid UTF-8 on the wire, and `json.loads`
keeps the lone surrogate it spells (tool-call arguments, message lists, the names read from them).
Every writer then refuses the whole value: sqlite3 and protobuf (upb) raise `UnicodeEncodeError`,
orjson raises, and the OTel exporters drop the batch holding it. Replacing each lone surrogate with
U+FFFD where toolscore hands text to such a writer keeps the rest of the value, and the rest of the
batch; the checks cost an `isascii` scan for the usual ASCII text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["valid_utf8", "valid_utf8_values"]

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def valid_utf8(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD; the same object when it has none."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(REPLACEMENT, text)


def _valid(value: Any) -> Any:
    if isinstance(value, str):
        return valid_utf8(value)
    if isinstance(value, list | tuple) and any(isinstance(item, str) for item in value):
        return [valid_utf8(item) if isinstance(item, str) else item for item in value]
    return value


def valid_utf8_values(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes (str, scalar or a list of them) with `valid_utf8` applied to every string value."""
    return {key: _valid(value) for key, value in attributes.items()}
