"""Every `Default: X` a configuration field's description states is that field's real default.

The descriptions are what `toolscore serve --print-config` prints above each key and what the reference
pages render, so a stale `Default:` misleads exactly the reader who checks. The models are found, not
listed: every pydantic model defined in `toolscore.collector` and `toolscore.scorers`.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

import toolscore.collector
import toolscore.scorers
from tests.docs_text import ROOT, page
from toolscore.collector.registry.api import RegistryServerConfig
from toolscore.collector.serve import ServeConfig, load_config

_DEFAULT = re.compile(r"\bDefault: (\S+?)[.,;]?(?=\s|$)")
"""`Default: 250.`, `Default: 134217728 (128 MiB).`, `Default: unset.`: the value is the first word."""

_UNSET = {"unset", "none", "null"}


def _modules() -> Iterator[str]:
    for package in (toolscore.collector, toolscore.scorers):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if not info.name.endswith("__main__"):
                yield info.name


def _subclasses(cls: type[BaseModel]) -> Iterator[type[BaseModel]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _project_models() -> list[type[BaseModel]]:
    for name in _modules():
        importlib.import_module(name)
    models = {m for m in _subclasses(BaseModel) if m.__module__.startswith("toolscore.")}
    return sorted(models, key=lambda m: f"{m.__module__}.{m.__qualname__}")


def _stated(description: str | None) -> str | None:
    match = _DEFAULT.search(description or "")
    return match.group(1) if match else None


def _plain(value: Any) -> Any:
    """The value as `--print-config` writes it (tuples as lists), to compare with what YAML reads back."""
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _agrees(stated: str, default: Any, model: type[BaseModel]) -> bool:
    """`250` for 250.0, `true` for True, `unset` for None.

    None stands for a fallback, which a description may name in words (`Default: the scorer's type.`,
    `Default: `max_message_bytes`.`): a word is accepted for it, but not a number or a boolean.
    """
    if default is None:
        if stated.startswith("`"):
            return stated.strip("`") in model.model_fields
        try:
            loaded = yaml.safe_load(stated)
        except yaml.YAMLError:
            return True
        return loaded is None or stated.lower() in _UNSET or isinstance(loaded, str)
    try:
        return bool(yaml.safe_load(stated) == _plain(default))
    except yaml.YAMLError:
        return False


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No `OTEL_*` or `TOOLSCORE_*` variable: the defaults a fresh shell gets."""
    for name in list(os.environ):
        if name.startswith(("OTEL_", "TOOLSCORE_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(ROOT)


def _wrong(model: type[BaseModel], values: dict[str, Any]) -> list[str]:
    wrong = []
    for name, field in model.model_fields.items():
        stated = _stated(field.description)
        value = values[name]
        if stated is None or isinstance(value, BaseModel):  # a section's `Default:` describes it in words
            continue
        if not _agrees(stated, value, model):
            wrong.append(f"{model.__qualname__}.{name}: description says Default: {stated}, default is {value!r}")
    return wrong


@pytest.mark.usefixtures("clean_env")
def test_every_stated_default_is_the_fields_default() -> None:
    models = _project_models()
    checked = {m.__name__ for m in models if any(_stated(f.description) for f in m.model_fields.values())}
    assert {"ReceiverConfig", "ForwardConfig", "TelemetryConfig", "ScoreStoreConfig", "ExtractConfig"} <= checked
    assert {"PipelineConfig", "ServePipelineConfig", "JudgeBudgetConfig", "ServeConfig"} <= checked
    wrong = []
    for model in models:
        defaults = {name: field.get_default(call_default_factory=True) for name, field in model.model_fields.items()}
        wrong += _wrong(model, defaults)
    assert wrong == []


def _sections(config: BaseModel) -> Iterator[BaseModel]:
    yield config
    for name in type(config).model_fields:
        value = getattr(config, name)
        if isinstance(value, BaseModel):
            yield from _sections(value)


@pytest.mark.usefixtures("clean_env")
def test_print_config_comments_state_the_defaults_serve_runs_with() -> None:
    """A section `toolscore serve` builds its own way (Prometheus on) states the default it really has there."""
    wrong = []
    for section in _sections(load_config()):
        wrong += _wrong(type(section), {name: getattr(section, name) for name in type(section).model_fields})
    assert wrong == []


def test_a_wrong_stated_default_is_caught() -> None:
    from pydantic import Field

    class Example(BaseModel):
        settle_ms: float = Field(default=250.0, description="How long. Default: 300.")
        limit: int | None = Field(default=None, description="Cap. Default: `settle_ms`.")
        port: int | None = Field(default=None, description="Port. Default: 4317.")
        enabled: bool = Field(default=True, description="On. Default: false.")

    defaults = {"settle_ms": 250.0, "limit": None, "port": None, "enabled": True}
    caught = [line.split(":")[0].rsplit(".", 1)[-1] for line in _wrong(Example, defaults)]
    assert caught == ["settle_ms", "port", "enabled"]


_DOCUMENTED = re.compile(r"`([\w.]+)`\s+\(default\s+=\s+([^)]+)\)")


def _resolve(config: BaseModel, path: str) -> Any:
    value: Any = config
    for part in path.split("."):
        value = getattr(value, part)
    return value


@pytest.mark.usefixtures("clean_env")
def test_the_security_page_states_the_real_bounds() -> None:
    """docs/security.md collects the bounds from several sections: each default it writes is the real one."""
    serve = load_config()
    registry_server = RegistryServerConfig()
    documented = _DOCUMENTED.findall(page("security.md"))
    assert len(documented) >= 30
    wrong = []
    for key, stated in documented:
        section = key.split(".")[0]
        owner: BaseModel = serve if section in ServeConfig.model_fields else registry_server
        model = type(owner) if "." not in key else type(_resolve(owner, key.rsplit(".", 1)[0]))
        if not _agrees(stated.strip().strip("`"), _resolve(owner, key), model):
            wrong.append(f"{key}: docs/security.md says {stated}, the default is {_resolve(owner, key)!r}")
    assert wrong == []


def test_models_are_found_in_this_checkout() -> None:
    assert Path(toolscore.collector.__path__[0]).resolve().is_relative_to(ROOT)
