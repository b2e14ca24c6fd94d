"""Readers for the deploy files (Dockerfile, compose, manifests, Collector configs), for static checks.

Nothing here starts a container or pulls an image: each reader turns one file format into plain data
that tests/test_deploy_files.py and tests/test_deploy_kubernetes.py compare against toolscore's real
configuration model, metric table and the vendored component list of the pinned OpenTelemetry Collector
Contrib release.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from toolscore.collector.serve import ServeConfig, load_config
from toolscore.collector.serve._config import ENV_NESTED_DELIMITER, ENV_PREFIX

__all__ = [
    "COMPONENTS",
    "COMPONENT_KINDS",
    "COMPOSE_DIR",
    "DEPLOY",
    "DOCKERFILE",
    "DSN",
    "K8S",
    "ROOT",
    "TESTDATA",
    "Dockerfile",
    "collector_configs",
    "collector_problems",
    "compose",
    "config_value",
    "defaults",
    "dockerignore_excludes",
    "isolate_env",
    "k8s_serve_config",
    "load_yaml",
    "manifest",
    "manifests",
    "port_of",
    "same_value",
    "toolscore_container",
]

ROOT = Path(__file__).parent.parent
DEPLOY = ROOT / "deploy"
COMPOSE_DIR = DEPLOY / "compose"
K8S = DEPLOY / "kubernetes"
DOCKERFILE = DEPLOY / "docker" / "Dockerfile"
TESTDATA = Path(__file__).parent / "testdata" / "deploy"
DSN = "postgresql://toolscore@postgres.example/toolscore"
"""Stands in for the Secret's value wherever a manifest reads the DSN from it."""

COMPONENT_KINDS = ("receivers", "processors", "exporters", "extensions", "connectors")
_SUFFIX = {"receivers": "receiver", "processors": "processor", "exporters": "exporter", "extensions": "extension"}


def load_yaml(path: Path) -> Any:
    """The single document of a YAML file (the deploy files hold one each)."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))


COMPONENTS: dict[str, Any] = load_yaml(TESTDATA / "otelcol-contrib-components.yaml")


def port_of(endpoint: str) -> int:
    """`host:port`, `http://host:port` or `http://host:port/path` → port."""
    match = re.search(r":(\d+)(?:/|$)", endpoint)
    assert match is not None, f"no port in {endpoint!r}"
    return int(match.group(1))


@dataclass
class Dockerfile:
    """The instructions of a Dockerfile, stage by stage (continuation lines joined, comments dropped)."""

    stages: list[list[tuple[str, str]]] = field(default_factory=list)

    @classmethod
    def read(cls, path: Path) -> Dockerfile:
        text = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))
        out = cls()
        for raw in text.splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            op, _, rest = line.partition(" ")
            if op.upper() == "FROM":
                out.stages.append([])
            elif not out.stages:
                continue  # ARG before the first FROM
            out.stages[-1].append((op.upper(), rest.strip()))
        return out

    def args(self, op: str, stage: int = -1) -> list[str]:
        return [rest for name, rest in self.stages[stage] if name == op]

    def env(self, stage: int = -1) -> dict[str, str]:
        """`ENV K=V K2=V2` (the only form the file uses) of one stage."""
        out: dict[str, str] = {}
        for rest in self.args("ENV", stage):
            for word in shlex.split(rest):
                key, sep, value = word.partition("=")
                assert sep, f"ENV without '=': {rest!r}"
                out[key] = value
        return out

    def copy_sources(self) -> list[str]:
        """Sources of the COPY instructions that read the build context (not `--from=` another stage)."""
        out: list[str] = []
        for stage in range(len(self.stages)):
            for rest in self.args("COPY", stage):
                words = [w for w in shlex.split(rest) if not w.startswith("--")]
                if "--from=" not in rest:
                    out.extend(words[:-1])
        return out


def dockerignore_excludes(patterns: list[str], path: str) -> bool:
    """Whether `.dockerignore` leaves `path` (or its parent directory) out: the last matching pattern wins."""
    parts = path.rstrip("/").split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    excluded = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        glob = pattern.removeprefix("!").rstrip("/")
        if any(fnmatch.fnmatch(c, glob) or fnmatch.fnmatch(c, glob.removeprefix("**/")) for c in candidates):
            excluded = not negate
    return excluded


def _component_types(components: dict[str, list[str]]) -> dict[str, set[str]]:
    """Module names → comparable types per kind: `memorylimiterprocessor` → `memorylimiter`."""
    return {
        kind: {m.removesuffix(_SUFFIX.get(kind, "connector")) for m in components.get(kind, [])}
        for kind in COMPONENT_KINDS
    }


def collector_problems(config: dict[str, Any], components: dict[str, list[str]]) -> list[str]:
    """What is wrong with a Collector config: unknown component types, pipelines naming undefined ids."""
    known = _component_types(components)
    problems: list[str] = []
    for kind in COMPONENT_KINDS:
        for name in config.get(kind) or {}:
            type_ = name.split("/", 1)[0]
            if type_.replace("_", "") not in known[kind]:
                problems.append(f"{kind}: {name!r} is not a component of otelcol-contrib")
    service = config.get("service") or {}
    defined = {kind: set(config.get(kind) or {}) for kind in COMPONENT_KINDS}
    problems += [
        f"service.extensions: {e!r} undefined" for e in service.get("extensions", []) if e not in defined["extensions"]
    ]
    for pipeline, spec in (service.get("pipelines") or {}).items():
        for kind in ("receivers", "processors", "exporters"):
            allowed = defined[kind] | (defined["connectors"] if kind != "processors" else set())
            problems += [f"{pipeline}.{kind}: {c!r} undefined" for c in spec.get(kind, []) if c not in allowed]
        if not spec.get("receivers") or not spec.get("exporters"):
            problems.append(f"{pipeline}: a pipeline needs receivers and exporters")
    return problems


def config_value(config: ServeConfig, env_name: str) -> Any:
    """The value in `config` that `TOOLSCORE_<A>__<B>` sets; KeyError when it names no config key."""
    assert env_name.startswith(ENV_PREFIX), env_name
    node: Any = config
    for part in env_name.removeprefix(ENV_PREFIX).lower().split(ENV_NESTED_DELIMITER):
        if not isinstance(node, BaseModel) or part not in type(node).model_fields:
            raise KeyError(f"{env_name}: no config key {part!r} under {type(node).__name__}")
        node = getattr(node, part)
    return node


def same_value(actual: Any, raw: str) -> bool:
    """Whether the text of an environment variable is the value the config ended up with."""
    if isinstance(actual, list | dict):
        return bool(json.loads(raw) == actual)
    if isinstance(actual, bool):
        return raw.lower() in ("1", "true", "yes", "on") if actual else raw.lower() in ("0", "false", "no", "off")
    return bool(type(actual)(raw) == actual)


def isolate_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the variables a test sets reach the config loader."""
    for name in list(os.environ):
        if name.startswith(("TOOLSCORE_", "OTEL_")):
            monkeypatch.delenv(name)


def compose() -> dict[str, Any]:
    data: dict[str, Any] = load_yaml(COMPOSE_DIR / "docker-compose.yml")
    return data


def manifests() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for name in load_yaml(K8S / "kustomization.yaml")["resources"]:
        docs.extend(d for d in yaml.safe_load_all((K8S / name).read_text()) if d)
    return docs


def manifest(kind: str, name: str) -> dict[str, Any]:
    found = [m for m in manifests() if m["kind"] == kind and m["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} manifests"
    return found[0]


def toolscore_container() -> dict[str, Any]:
    container: dict[str, Any] = manifest("Deployment", "toolscore")["spec"]["template"]["spec"]["containers"][0]
    return container


def k8s_serve_config(monkeypatch: pytest.MonkeyPatch) -> ServeConfig:
    """deploy/kubernetes/config/serve.yaml as a replica loads it: the image's env, the pod's env, the file."""
    for key, value in Dockerfile.read(DOCKERFILE).env().items():
        monkeypatch.setenv(key, value)
    for var in toolscore_container()["env"]:
        monkeypatch.setenv(var["name"], var.get("value", DSN))
    return load_config(K8S / "config" / "serve.yaml")


def collector_configs() -> dict[str, dict[str, Any]]:
    return {
        "compose": load_yaml(COMPOSE_DIR / "otelcol" / "config.yaml"),
        "kubernetes": load_yaml(K8S / "otelcol" / "config.yaml"),
    }


def defaults() -> ServeConfig:
    return load_config()
