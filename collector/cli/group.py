"""The root `toolscore` command group; subcommands are attached in `toolscore.collector.cli`."""

from __future__ import annotations

import click

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="toolscore")
def main() -> None:
    """Score whether AI agents call the right tools, from their OpenTelemetry traces."""
