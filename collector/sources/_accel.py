"""The compiled span decoder (`_wire.c`), when the install built it and the environment allows it.

`decode_spans(data)` gives the spans of an OTLP protobuf trace export as `SpanRecord`s, the same ones
`otlp_proto.spans_from_request` builds, or None where that path must decide (bad bytes, skipped spans, an
empty or other signal's export). It is None itself when the extension is missing (no C compiler at install:
`setup.py` builds it as optional) or `TOOLSCORE_PURE_PYTHON` is set to anything but empty or 0, which
runs the pure-Python path alone (`make test-oldest` does, so the whole unit suite runs on it too).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from toolscore.collector.spans import SpanEvent, SpanRecord

__all__ = ["PURE_PYTHON_ENV", "decode_spans", "load"]

PURE_PYTHON_ENV = "TOOLSCORE_PURE_PYTHON"


def load(environ: dict[str, str] | None = None) -> Callable[[bytes], list[SpanRecord] | None] | None:
    """The compiled decoder, or None when it is not built or `TOOLSCORE_PURE_PYTHON` turns it off."""
    flag = (os.environ if environ is None else environ).get(PURE_PYTHON_ENV, "")
    if flag not in ("", "0"):
        return None
    try:
        from toolscore.collector.sources import _wire
    except ImportError:
        return None
    _wire.configure(SpanRecord, SpanEvent)
    return _wire.decode_spans


decode_spans = load()
