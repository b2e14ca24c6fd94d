"""The scorers' compiled equality (`_equal.c`), when the install built it and the environment allows it.

`compiled` is the module, with `json_equal(a, b)` (`_json_equality`'s JSON equality, rule for rule),
`freeze(value)` (flexible mode's key of a value) and `exact_counts(names, tests, actual)` (exact mode's pair
counts, both `_trajectory_evalite`'s); None when the extension
is missing (no C compiler at install: `setup.py` builds it as optional) or `TOOLSCORE_PURE_PYTHON` is set, which
runs the pure-Python paths alone (`make test-oldest` does, so the whole unit suite runs on them too).
`compiled_module` is the one reading of that variable, and the one way each compiled module of the distribution
is loaded.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from types import ModuleType

__all__ = ["PURE_PYTHON_ENV", "compiled", "compiled_module", "load"]

PURE_PYTHON_ENV = "TOOLSCORE_PURE_PYTHON"


def compiled_module(name: str, environ: Mapping[str, str] | None = None) -> ModuleType | None:
    """The compiled module `name`, or None when the install did not build it or `TOOLSCORE_PURE_PYTHON` (anything but
    empty or 0, in `environ`, default the process's environment) turns every compiled module off: this one, the OTLP
    wire code (`collector.sources._accel`) and the span processor's gate and decoder (`collector.pipeline.span_gate`).
    """
    if (os.environ if environ is None else environ).get(PURE_PYTHON_ENV, "") not in ("", "0"):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def load(environ: Mapping[str, str] | None = None) -> ModuleType | None:
    """The compiled equality's module, or None when it is not built or `TOOLSCORE_PURE_PYTHON` turns it off."""
    return compiled_module("toolscore.scorers._equal", environ)


compiled = load()
