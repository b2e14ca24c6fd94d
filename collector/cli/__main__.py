"""`python -m toolscore.collector.cli`: the same entry point as the `toolscore` command."""

from toolscore.collector.cli import main

main()
