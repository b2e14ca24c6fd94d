"""The `toolscore` command line: one module per subcommand, attached to the root group here."""

from __future__ import annotations

from toolscore.collector.cli.group import main
from toolscore.collector.cli.score import score_command

__all__ = ["main"]

main.add_command(score_command)
