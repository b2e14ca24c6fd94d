"""The privacy options the offline commands share (`extract`, `eval`, `runs`): the settings `serve` masks with.

`--privacy-config FILE` reads the settings from a YAML/JSON file: `toolscore serve`'s own configuration (its
`pipeline.extract.privacy` block), or a file holding just that block (`mask_keys`, `mask_patterns`, ...). The
flags add to what the file says (`--mask-key`, `--mask-pattern`, `--default-patterns`) or replace its content
setting (`--names-only`). The hash key is the file's `hash_key`, else `TOOLSCORE_PRIVACY_HASH_KEY`: set the
same one as `serve` for markers that compare with its.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from toolscore.collector.extract.privacy import PrivacyConfig

__all__ = ["privacy_from_options", "privacy_options"]

_F = TypeVar("_F", bound=Callable[..., Any])


def privacy_options(command: _F) -> _F:
    """Add the privacy options to a click command; they reach it as `privacy_config`, `mask_keys`,
    `mask_patterns`, `default_patterns` and `names_only` (read them with `privacy_from_options`)."""
    options = [
        click.option(
            "--privacy-config",
            type=click.Path(exists=True, dir_okay=False),
            help="YAML/JSON file with the privacy settings: serve's configuration (pipeline.extract.privacy) "
            "or that block alone.",
        ),
        click.option(
            "--mask-key",
            "mask_keys",
            multiple=True,
            metavar="KEY",
            help="Mask the values of this argument key, dot path or glob (repeatable).",
        ),
        click.option(
            "--mask-pattern",
            "mask_patterns",
            multiple=True,
            metavar="RE2",
            help="Mask any string value this pattern finds a match in (repeatable).",
        ),
        click.option("--default-patterns", is_flag=True, help="Mask emails and Luhn-checked card numbers too."),
        click.option(
            "--names-only", is_flag=True, help="Keep tool names and argument keys only: no value, result or text."
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def privacy_from_options(
    privacy_config: str | None,
    mask_keys: tuple[str, ...],
    mask_patterns: tuple[str, ...],
    default_patterns: bool,
    names_only: bool,
) -> PrivacyConfig:
    """The settings the options give; a bad file or pattern is a usage error naming it."""
    from pydantic import ValidationError

    from toolscore.collector.extract.privacy import PrivacyConfig

    base: dict[str, Any] = _read_block(privacy_config) if privacy_config else {}
    data = dict(base)
    data["mask_keys"] = [*base.get("mask_keys", ()), *mask_keys]
    data["mask_patterns"] = [*base.get("mask_patterns", ()), *mask_patterns]
    if default_patterns:
        data["default_patterns"] = True
    if names_only:
        data["content"] = "names_only"
    try:
        return PrivacyConfig.model_validate(data)
    except ValidationError as exc:
        from toolscore.collector.error_text import error_message

        where = f"{privacy_config}: " if privacy_config else ""
        error = exc.errors(include_url=False)[0]
        field = ".".join(str(part) for part in ("privacy", *error["loc"]))
        raise click.UsageError(f"{where}{field}: {error_message(error, PrivacyConfig)}") from None


def _read_block(path: str) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise click.UsageError(f"{path}: cannot read the privacy settings: {exc}") from None
    if not isinstance(data, dict):
        raise click.UsageError(f"{path}: the privacy settings are a mapping")
    block: Any = data
    if "pipeline" in data:  # serve's configuration
        block = ((data.get("pipeline") or {}).get("extract") or {}).get("privacy") or {}
    elif "privacy" in data:
        block = data["privacy"]
    if not isinstance(block, dict):
        raise click.UsageError(f"{path}: pipeline.extract.privacy is not a mapping")
    return block
