"""The runs page: the latest scored runs with what was asked, what the agent called and why a score failed;
one run beside its expected calls; each expectation's pass rate over time; a run made an expectation.

Server-rendered HTML from the score store (plus a little script that keeps the list live), served by
`toolscore serve` (`ui`) or by `toolscore ui --db PATH` on a store alone. Every module is private.
"""

from __future__ import annotations

from toolscore.collector.serve._ui_config import UiConfig
from toolscore.collector.ui._from_run import ARGS_MODES, MODES, FromRun, default_name, expectation_from_run
from toolscore.collector.ui._server import UiServer, start_ui

__all__ = ["ARGS_MODES", "MODES", "FromRun", "UiConfig", "UiServer", "default_name", "expectation_from_run", "start_ui"]
