"""`toolscore ui`: the runs page `toolscore serve` serves, on a score store alone (no collector running).

Reads the store at `--db` (read-only, safe while a collector writes it); with a registry (`--registry`, by
default `.toolscore/registry.db` when it exists) it also shows the diffs, the version history, and makes
runs expectations. Serves until interrupted.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import click

from toolscore.collector.cli.privacy_options import privacy_from_options, privacy_options
from toolscore.collector.cli.runs import DEFAULT_DB

__all__ = ["ui_command"]

DEFAULT_REGISTRY = ".toolscore/registry.db"


@click.command("ui")
@click.option("--db", default=DEFAULT_DB, show_default=True, help="The score store `toolscore serve` writes.")
@click.option(
    "--registry", help=f"The registry (SQLite file or PostgreSQL URL). Default: {DEFAULT_REGISTRY} if it exists."
)
@click.option("--endpoint", default="127.0.0.1:4330", show_default=True, help="host:port to listen on (port 0: any).")
@click.option("--token", envvar="TOOLSCORE_UI__BEARER_TOKEN", help="Bearer token every request must carry.")
@click.option("--trace-url", envvar="TOOLSCORE_UI__TRACE_URL", help="Trace link template, {trace_id} and {span_id}.")
@privacy_options
def ui_command(
    db: str, registry: str | None, endpoint: str, token: str | None, trace_url: str | None, **privacy: Any
) -> None:
    """Serve the runs page for a score store: runs, one run with its diffs, expectations over time.

    The privacy options are the settings the collector masked the store's runs with (`--privacy-config` takes
    its configuration file): the expected values in the diffs are masked alike, so they compare and show as
    the runs do."""
    from pydantic import ValidationError

    from toolscore.collector.cli.expectations import _open_store_registry
    from toolscore.collector.serve._ui_config import UiConfig
    from toolscore.collector.ui import start_ui

    if not Path(db).is_file():
        raise click.ClickException(f"no score store at {db} (is `toolscore serve` writing elsewhere? see --db)")
    try:
        config = UiConfig(endpoint=endpoint, bearer_token=token, trace_url=trace_url)
    except ValidationError as exc:
        raise click.BadParameter(str(exc.errors()[0]["msg"])) from None
    registry_db = registry or (DEFAULT_REGISTRY if Path(DEFAULT_REGISTRY).is_file() else None)
    reg = _open_store_registry(registry_db, create=False) if registry_db else None
    try:
        server = start_ui(config, db, reg, privacy_from_options(**privacy))
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {endpoint}: {exc}") from None
    click.echo(
        f"toolscore ui: the runs page on {server.url} (store {db}"
        + (f", registry {registry_db})" if registry_db else ", no registry)"),
        err=True,
    )
    sys.stdout.flush()
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        if reg is not None:
            reg.close()
