"""The `toolscore` command line: one module per subcommand, attached to the root group here."""

from __future__ import annotations

from toolscore.collector.cli.demo import demo_command
from toolscore.collector.cli.eval import eval_command
from toolscore.collector.cli.expectations import expectations_group
from toolscore.collector.cli.extract import extract_command
from toolscore.collector.cli.from_run import from_run_command
from toolscore.collector.cli.group import main
from toolscore.collector.cli.runs import runs_command
from toolscore.collector.cli.score import score_command
from toolscore.collector.cli.serve import serve_command
from toolscore.collector.cli.ui import ui_command

__all__ = ["main"]

main.add_command(score_command)
main.add_command(extract_command)
main.add_command(expectations_group)
main.add_command(eval_command)
main.add_command(serve_command)
main.add_command(demo_command)
main.add_command(runs_command)
main.add_command(ui_command)
expectations_group.add_command(from_run_command)
