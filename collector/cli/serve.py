"""`toolscore serve`: run the standalone OTLP collector until SIGTERM/SIGINT.

Exit statuses: 0 after a graceful shutdown, 2 when the configuration is invalid (every problem is
printed with the file and line, or the environment variable, it came from) or names addresses it cannot
listen on (every one taken is listed, with its key and variable), 1 when a component cannot start
(an unreachable database, an unreadable forward certificate).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

__all__ = ["serve_command"]

EXIT_BAD_CONFIG = 2
EXIT_START_FAILED = 1


@click.command("serve")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="YAML configuration file; keys not in it keep their defaults (see --print-config).",
)
@click.option(
    "--print-config",
    is_flag=True,
    help="Print the effective configuration (defaults, file, TOOLSCORE_* variables) as commented YAML and exit.",
)
@click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], case_sensitive=False),
    default="INFO",
    show_default=True,
    help="Python logging level of the collector.",
)
def serve_command(config_path: Path | None, print_config: bool, log_level: str) -> None:
    """Receive OTLP traces, score agent runs in-stream, forward every span downstream.

    Listens on OTLP/gRPC 127.0.0.1:4317 and OTLP/HTTP 127.0.0.1:4318 by default; override any key with
    an environment variable named after its path, e.g. TOOLSCORE_RECEIVER__GRPC_ENDPOINT=0.0.0.0:4317.
    """
    # loaded here, not at import, so that `toolscore --help` stays fast
    from toolscore.collector.serve._config import ConfigError, load_config_sources
    from toolscore.collector.serve._config_yaml import render_yaml

    try:
        config, source = load_config_sources(config_path)
    except ConfigError as exc:
        click.echo("toolscore serve: invalid configuration:", err=True)
        for problem in exc.problems:
            click.echo(f"  {problem}", err=True)
        sys.exit(EXIT_BAD_CONFIG)
    if print_config:
        click.echo(render_yaml(config, source=source), nl=False)
        return
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from toolscore.collector.serve._service import ServiceStartError, run_service

    try:
        sys.exit(run_service(config))
    except ServiceStartError as exc:
        click.echo(f"toolscore serve: cannot start: {exc}", err=True)
        sys.exit(EXIT_BAD_CONFIG if exc.bad_config else EXIT_START_FAILED)
