"""`pipeline_config_from_env()`: `PipelineConfig` from `TOOLSCORE_PIPELINE__*`, for `instrument()`.

The variables are the ones `toolscore serve` reads for its `pipeline` section
(`TOOLSCORE_PIPELINE__SETTLE_MS=250`, `TOOLSCORE_PIPELINE__EXTRACT__MAX_CALLS_PER_RUN=100`, JSON for
lists and maps), so one deployment's settings mean the same in-process and in the collector. Unlike
the collector, which refuses to start on a bad value, an instrumented application must not go down
for a typo in its environment: a bad value is logged with its variable's name and that key keeps
its default (see `toolscore.collector.env`).
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from pydantic_settings import EnvSettingsSource
from pydantic_settings.exceptions import SettingsError

from toolscore.collector.error_text import error_message
from toolscore.collector.pipeline.config import PipelineConfig

__all__ = ["PIPELINE_ENV_PREFIX", "key_paths", "pipeline_config_from_env"]

_log = logging.getLogger(__name__)

PIPELINE_ENV_PREFIX = "TOOLSCORE_PIPELINE__"
"""Prefix of the variables read; the key's path follows, upper-cased, `__` between levels."""


class _Sections(BaseModel):
    """The shape `toolscore serve`'s configuration gives the pipeline: its `pipeline` section."""

    pipeline: PipelineConfig = Field(default_factory=PipelineConfig)


def _read() -> dict[str, Any]:
    source = EnvSettingsSource(
        _Sections,  # type: ignore[arg-type]  # reads only model_fields and model_config
        env_prefix="TOOLSCORE_",
        env_nested_delimiter="__",
        case_sensitive=False,
    )
    section = dict(source()).get("pipeline", {})
    return section if isinstance(section, dict) else {}


def _drop(data: dict[str, Any], loc: tuple[str | int, ...]) -> bool:
    """Remove the key at `loc` (nested); False when there is none to remove."""
    node: Any = data
    for step in loc[:-1]:
        node = node.get(step) if isinstance(node, dict) else None
    if isinstance(node, dict) and loc and loc[-1] in node:
        del node[loc[-1]]
        return True
    return False


def key_paths(value: Any) -> list[tuple[str, ...]]:
    """The key paths of the values in nested mappings, to name the variables behind an error no one key explains."""
    if not isinstance(value, dict) or not value:
        return [()]
    return [(str(key), *rest) for key, sub in value.items() for rest in key_paths(sub)]


def pipeline_config_from_env() -> PipelineConfig:
    """The defaults, overridden by every valid `TOOLSCORE_PIPELINE__*` variable."""
    try:
        data = _read()
    except SettingsError as exc:
        _log.warning("%s* variables ignored, pipeline defaults used: %s", PIPELINE_ENV_PREFIX, exc)
        return PipelineConfig()
    while True:
        try:
            return PipelineConfig.model_validate(data)
        except ValidationError as exc:
            dropped = False
            for error in exc.errors():
                loc = tuple(error["loc"])
                if loc:
                    name = PIPELINE_ENV_PREFIX + "__".join(str(step).upper() for step in loc)
                    _log.warning("%s ignored, its default is used: %s", name, error_message(error, PipelineConfig))
                    dropped = _drop(data, loc) or dropped
            if not dropped:  # an error no single key explains (a cross-field rule): all defaults
                names = ", ".join(PIPELINE_ENV_PREFIX + "__".join(path).upper() for path in key_paths(data))
                message = error_message(exc.errors()[0], PipelineConfig)
                _log.warning("%s ignored, the pipeline defaults are used: %s", names, message)
                return PipelineConfig()
