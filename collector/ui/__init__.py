"""The runs page: the latest scored runs with what was asked, what the agent called and why a score failed;
one run beside its expected calls; each expectation's pass rate over time; a run made an expectation.

Server-rendered HTML from the score store (plus a little script that keeps the list live), served by
`toolscore serve` (`ui`) or by `toolscore ui --db PATH` on a store alone. Every module is private. The names
here are loaded on first use, so that the CLI, which reads the trajectory modes offered, does not load the
server, the diff and the reports with them (`toolscore --help` stays fast).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolscore.collector.serve._ui_config import UiConfig
    from toolscore.collector.ui._from_run import ARGS_MODES, MODES, FromRun, default_name, expectation_from_run
    from toolscore.collector.ui._server import UiServer, start_ui

__all__ = ["ARGS_MODES", "MODES", "FromRun", "UiConfig", "UiServer", "default_name", "expectation_from_run", "start_ui"]

_HOMES = {
    "ARGS_MODES": "toolscore.collector.ui._from_run",
    "MODES": "toolscore.collector.ui._from_run",
    "FromRun": "toolscore.collector.ui._from_run",
    "default_name": "toolscore.collector.ui._from_run",
    "expectation_from_run": "toolscore.collector.ui._from_run",
    "UiConfig": "toolscore.collector.serve._ui_config",
    "UiServer": "toolscore.collector.ui._server",
    "start_ui": "toolscore.collector.ui._server",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
