"""`ServeConfig`: every setting of `toolscore serve`, from one YAML file and `TOOLSCORE_*` variables.

Precedence, highest first:

1. `TOOLSCORE_<SECTION>__<KEY>` environment variables: the key's path upper-cased, prefixed with
   `TOOLSCORE_`, a double underscore between levels (`TOOLSCORE_RECEIVER__GRPC_ENDPOINT=0.0.0.0:4317`,
   `TOOLSCORE_REGISTRY__STORE__TYPE=postgres`, `TOOLSCORE_SHUTDOWN_GRACE_S=5`); scalars as text, lists and
   maps as JSON (`TOOLSCORE_REGISTRY__FILES='["expectations/"]'`);
2. the YAML file given with `--config`;
3. the standard `OTEL_*` variables where a section honours them (downstream endpoint, telemetry exporters);
4. the defaults below, chosen so that `toolscore serve` with no file works on a laptop: SQLite registry and
   score store under `./.toolscore/`, the expectations in `./deploy/expectations/` (watched) when that
   directory exists, Prometheus metrics on 127.0.0.1:9464, no downstream.

A service refuses to start on a bad setting rather than run with a surprise: unlike the in-process
instrumentation (which logs and falls back), a bad `TOOLSCORE_*` value or file key is a `ConfigError`
naming where it came from: `serve.yaml:12: receiver.grpc_endpoint: ...` or the variable's name. So is a bad
`OTEL_EXPORTER_OTLP_*` value for the downstream (an OTLP/HTTP URL left with the gRPC protocol): a collector
that fell back to forwarding nowhere would discard every span it receives.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError
from pydantic_settings import EnvSettingsSource
from pydantic_settings.exceptions import SettingsError

from toolscore.collector import env
from toolscore.collector.error_text import error_message, fold_misspelt_keys
from toolscore.collector.pipeline.config_env import key_paths
from toolscore.collector.registry._config import RegistryConfig, SqliteStoreConfig
from toolscore.collector.registry._errors import Problem
from toolscore.collector.registry._validation import drop_tags, field_path
from toolscore.collector.serve._phoenix import PhoenixConfig
from toolscore.collector.serve._pipeline_config import ServePipelineConfig
from toolscore.collector.serve.forward._config import (
    ForwardConfig,
    environment_endpoint,
    environment_values,
    standard_variable,
)
from toolscore.collector.serve.receivers._config import ReceiverConfig, split_endpoint
from toolscore.collector.serve.scores._store import ScoreStoreConfig
from toolscore.collector.telemetry.setup import TelemetryConfig
from toolscore.collector.telemetry.setup import standard_variable as telemetry_variable
from toolscore.collector.yaml_lines import line_of

__all__ = [
    "DEFAULT_EXPECTATIONS_DIR",
    "ENV_NESTED_DELIMITER",
    "ENV_PREFIX",
    "ConfigError",
    "ServeConfig",
    "ServeTelemetryConfig",
    "Source",
    "load_config",
    "load_config_sources",
]

ENV_PREFIX = "TOOLSCORE_"
ENV_NESTED_DELIMITER = "__"
DEFAULT_EXPECTATIONS_DIR = "deploy/expectations"
"""Loaded (and watched) by default when it exists under the working directory, as in a repository checkout."""


_Loc = tuple[str | int, ...]

_CROSS_KEY_RULES: dict[str, tuple[_Loc, ...]] = {
    "same_store_file": (("score_store", "path"), ("registry", "store", "path")),
    "forward_to_own_grpc_receiver": (("forward", "endpoint"), ("receiver", "grpc_endpoint")),
    "forward_to_own_http_receiver": (("forward", "endpoint"), ("receiver", "http_endpoint")),
}
"""The error types of `ServeConfig`'s rules between keys, each with the keys it compares. A field validator's
error is located at its own field, which may be a default the user never touched while they set the other key;
`load_config` reports these at the key the user set (`_Origins.clash`), saying where each value came from."""

_FORWARD_RULES = {"grpc_endpoint": "forward_to_own_grpc_receiver", "http_endpoint": "forward_to_own_http_receiver"}

_STANDARD_VARIABLES: dict[str, Callable[[str], str | None]] = {
    "forward": standard_variable,
    "telemetry": telemetry_variable,
}
"""Per section, the standard `OTEL_*` variable its defaults took a key's value from, if any."""


def _default_registry() -> RegistryConfig:
    files = [DEFAULT_EXPECTATIONS_DIR] if Path(DEFAULT_EXPECTATIONS_DIR).is_dir() else []
    return RegistryConfig(files=files)


class ServeTelemetryConfig(TelemetryConfig):
    """`TelemetryConfig` as `toolscore serve` defaults it: a collector is scraped, so Prometheus is on.

    Its own field, rather than the in-process default (off) overridden when the section is built, so that
    the description `--print-config` prints above the key states the default the collector really has.
    """

    prometheus_enabled: bool = Field(
        default=True,
        description="Serve the metrics on a Prometheus `/metrics` endpoint. Env: OTEL_METRICS_EXPORTER, when "
        "set (on only if it lists `prometheus`). Default: true.",
    )


def _default_telemetry() -> ServeTelemetryConfig:
    """The OTEL_* variables as the in-process telemetry reads them, but Prometheus on unless they choose."""
    explicit = {} if env.env_str(env.OTEL_METRICS_EXPORTER) else {"prometheus_enabled": True}
    return ServeTelemetryConfig.from_env(**explicit)


class ServeConfig(BaseModel):
    """The whole collector: one section per component, each that component's own config model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    receiver: ReceiverConfig = Field(
        default_factory=ReceiverConfig, description="The OTLP/gRPC and OTLP/HTTP receivers and the health endpoints."
    )
    pipeline: ServePipelineConfig = Field(
        default_factory=ServePipelineConfig, description="How runs are grouped, settled, scored and held."
    )
    registry: RegistryConfig = Field(
        default_factory=_default_registry,
        description="Where expectations are stored and which files feed them. "
        f"Default: SQLite under .toolscore/, files from {DEFAULT_EXPECTATIONS_DIR}/ when it exists.",
    )
    forward: ForwardConfig = Field(
        default_factory=ForwardConfig.from_env,
        description="The downstream every span is forwarded to (none unless OTEL_EXPORTER_OTLP_* is set).",
    )
    telemetry: ServeTelemetryConfig = Field(
        default_factory=_default_telemetry,
        description="toolscore's own metrics and evaluation events. Default here: Prometheus on 127.0.0.1:9464.",
    )
    score_store: ScoreStoreConfig = Field(
        default_factory=ScoreStoreConfig,
        description="The embedded SQLite store of scored runs that `toolscore runs` and `toolscore demo` read.",
    )
    phoenix: PhoenixConfig = Field(
        default_factory=PhoenixConfig,
        description="Every score also posted to Arize Phoenix as a span annotation on the run span (off by default).",
    )
    shutdown_grace_s: float = Field(
        default=10.0,
        gt=0,
        description="On SIGTERM/SIGINT: how long pending runs may take to be scored or released, and the "
        "downstream queue to drain, before the collector exits anyway. Default: 10.",
    )
    gc_threshold: int = Field(
        default=200_000,
        ge=0,
        description="Python's young-generation garbage-collection threshold while serving (the interpreter's "
        "default is 700). Under load the collector holds ~4 tracked objects per pending or queued span, which "
        "every young collection scans again while they churn; nearly all of its garbage is freed without the "
        "collector, so a threshold above the working set saves that CPU at the same resident memory (figures: "
        "docs/performance.md). 0 leaves the interpreter's setting alone. Default: 200000.",
    )

    @field_validator("forward")
    @classmethod
    def _not_forwarding_to_itself(cls, forward: ForwardConfig, info: ValidationInfo) -> ForwardConfig:
        """The agents' `OTEL_EXPORTER_OTLP_*` variables, left in the collector's shell, point it at itself.

        Every span would then come back to be received, scored and forwarded again, without end.
        """
        receiver = info.data.get("receiver")
        if forward.endpoint is None or not isinstance(receiver, ReceiverConfig):
            return forward
        receivers = (
            ("grpc_endpoint", receiver.grpc_enabled, receiver.grpc_endpoint),
            ("http_endpoint", receiver.http_enabled, receiver.http_endpoint),
        )
        for key, enabled, endpoint in receivers:
            if enabled and _same_listener(forward.endpoint, endpoint):
                raise PydanticCustomError(  # its own type: `load_config` says where each of the two was set
                    _FORWARD_RULES[key],
                    "forward.endpoint {forward} is this collector's own receiver (receiver.{key} {endpoint}): "
                    "every span would be forwarded back to itself. Point it at the downstream, or unset "
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT in the collector's "
                    "environment (they are for the agents that send to it)",
                    {"forward": repr(forward.endpoint), "key": key, "endpoint": endpoint},
                )
        return forward

    @field_validator("score_store")
    @classmethod
    def _not_the_registry_file(cls, score_store: ScoreStoreConfig, info: ValidationInfo) -> ScoreStoreConfig:
        """One SQLite file for both would hold both stores' tables, which every CLI command then refuses
        (`cli.store_files`), and the score store's retention and the registry's writes would contend for its lock.
        """
        registry = info.data.get("registry")
        if not score_store.enabled or not isinstance(registry, RegistryConfig):
            return score_store
        store = registry.store
        if isinstance(store, SqliteStoreConfig) and _same_file(store.path, score_store.path):
            raise PydanticCustomError(  # its own type: `load_config` says where each of the two paths was set
                "same_store_file",
                "score_store.path {score_store} and registry.store.path {registry} are the same file ({file}): "
                "the score store and the registry each need their own SQLite file",
                {
                    "score_store": repr(score_store.path),
                    "registry": repr(store.path),
                    "file": str(Path(store.path).resolve()),
                },
            )
        return score_store


def _same_file(a: str, b: str) -> bool:
    """Whether two SQLite paths, relative to the working directory as the stores open them, are one file."""
    if ":memory:" in (a, b):
        return False
    return Path(a).resolve() == Path(b).resolve()


_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0", "::", ""})


def _same_listener(forward: str, listen: str) -> bool:
    """Whether a forward endpoint reaches a receiver listening on `listen` on this host."""
    target = urlsplit(forward) if "://" in forward else urlsplit(f"//{forward}")
    try:
        port = target.port
    except ValueError:
        return False
    host, listen_port = split_endpoint(listen)
    if port is None:
        port = 443 if target.scheme == "https" else 80
    if port != listen_port:
        return False
    forward_host = (target.hostname or "").lower()
    local = forward_host in _LOCAL_HOSTS or forward_host.startswith("127.")
    return forward_host == host.lower() or (local and (host in _LOCAL_HOSTS or host.startswith("127.")))


class ConfigError(ValueError):
    """A configuration that does not validate; `problems` says where each error came from."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems) or (Problem("", "invalid configuration"),)
        super().__init__("\n".join(str(p) for p in self.problems))


Source = Callable[[Sequence[str]], "str | None"]
"""Where the value at a key path was set (`environment variable NAME`, `serve.yaml:12`); None for a default."""


def load_config(path: str | Path | None = None) -> ServeConfig:
    """The effective configuration: defaults, then the file at `path`, then `TOOLSCORE_*` variables."""
    return load_config_sources(path)[0]


def load_config_sources(path: str | Path | None = None) -> tuple[ServeConfig, Source]:
    """`load_config`, and where each value was set: `--print-config` says so beside every value not a default,
    since a value that differs from the "Default:" its comment states would otherwise look like a bug."""
    file = Path(path) if path is not None else None
    file_data, node = _read_file(file) if file is not None else ({}, None)
    env_data = _env_overrides()
    merged = _merge(_merge(_defaults(), file_data), env_data)
    _forward_endpoint_for_protocol(merged, file_data, env_data)
    origins = _Origins(file, file_data, node, env_data)
    try:
        config = ServeConfig.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_problems(exc, merged, origins)) from None
    return config, origins.source


def _defaults() -> dict[str, Any]:
    """Each section's defaults (some read `OTEL_*`), unchecked as a whole: the checks that span sections
    run once, on the merged configuration, so they see the file and variables too.

    The forward section takes the `OTEL_EXPORTER_OTLP_*` values as written, unchecked: a bad one is then a
    configuration error naming its variable, where `ForwardConfig.from_env` would log it and forward nowhere,
    dropping every span the collector receives.
    """
    out: dict[str, Any] = {}
    for name, field in ServeConfig.model_fields.items():
        if name == "forward":
            out[name] = {**ForwardConfig().model_dump(), **environment_values()}
            continue
        value = field.get_default(call_default_factory=True)
        out[name] = value.model_dump() if isinstance(value, BaseModel) else value
    return out


def _forward_endpoint_for_protocol(
    merged: dict[str, Any], file_data: Mapping[str, Any], env_data: Mapping[str, Any]
) -> None:
    """`OTEL_EXPORTER_OTLP_ENDPOINT` is a base whose URL depends on the protocol (OTLP/HTTP appends `v1/traces`):
    when the file or a `TOOLSCORE_*` variable chose the protocol and left the endpoint to the environment,
    build the endpoint for the protocol chosen."""
    forward = merged.get("forward")
    if not isinstance(forward, dict) or any(_has(data, ("forward", "endpoint")) for data in (file_data, env_data)):
        return
    if any(_has(data, ("forward", "protocol")) for data in (file_data, env_data)):
        forward["endpoint"] = environment_endpoint(str(forward.get("protocol")))


def _read_file(path: Path) -> tuple[dict[str, Any], yaml.Node | None]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([Problem("", f"cannot read: {exc.strerror or exc}", str(path))]) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise ConfigError([Problem("", f"not valid YAML: {exc.problem}", str(path), line)]) from None
    if node is None:
        return {}, None
    data = yaml.SafeLoader("").construct_document(node)
    if not isinstance(data, dict):
        line = node.start_mark.line + 1
        raise ConfigError([Problem("", "the configuration is a mapping of sections", str(path), line)])
    return data, node


def _env_overrides() -> dict[str, Any]:
    """`TOOLSCORE_A__B=v` as `{"a": {"b": "v"}}`, parsed by pydantic-settings (JSON for lists and maps)."""
    try:
        source = EnvSettingsSource(
            ServeConfig,  # type: ignore[arg-type]  # reads only model_fields and model_config
            env_prefix=ENV_PREFIX,
            env_nested_delimiter=ENV_NESTED_DELIMITER,
            case_sensitive=False,
        )
        overrides = dict(source())
    except SettingsError as exc:
        raise ConfigError([_unparsed(exc)]) from None
    fields = ServeConfig.model_fields
    sections = sorted(name for name, field in fields.items() if isinstance(field.annotation, type(BaseModel)))
    unknown = [
        Problem(
            section.lower(), f"no such section; the sections are {', '.join(sections)}", f"environment variable {name}"
        )
        for name in sorted(os.environ)
        if name.upper().startswith(ENV_PREFIX)
        and ENV_NESTED_DELIMITER in name
        and (section := name[len(ENV_PREFIX) :].split(ENV_NESTED_DELIMITER, 1)[0]).lower() not in fields
    ]
    if unknown:  # pydantic-settings skips them: a misspelt section would otherwise be ignored without a word
        raise ConfigError(unknown)
    return overrides


def _unparsed(exc: SettingsError) -> Problem:
    """pydantic-settings names the section it could not parse; say which variables and what they must hold."""
    section = str(exc).partition('field "')[2].partition('"')[0]
    prefix = f"{ENV_PREFIX}{section.upper()}{ENV_NESTED_DELIMITER}"
    names = sorted(name for name in os.environ if section and name.upper().startswith(prefix))
    where = f"environment variable{'s' if len(names) > 1 else ''} {', '.join(names)}" if names else "environment"
    example = '\'["expectations/"]\' or \'{"key": "value"}\''
    return Problem(section, f"not parsed: lists and maps are given as JSON, e.g. {example}", where)


def _merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge; a mapping whose `type` changes (a different store kind) replaces the old one whole."""
    out = dict(base)
    for key, value in override.items():
        old = out.get(key)
        same_kind = (
            isinstance(old, dict) and isinstance(value, dict) and value.get("type", old.get("type")) == old.get("type")
        )
        out[key] = _merge(old, value) if same_kind and isinstance(old, dict) else value
    return out


def _has(data: Any, loc: Sequence[str | int]) -> bool:
    for part in loc:
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def _leaves(data: Any, loc: tuple[str | int, ...]) -> list[tuple[str | int, ...]]:
    """The paths of the values set under `loc`: the variables a section-wide error comes from."""
    for part in loc:
        data = data[part]
    return [(*loc, *rest) for rest in key_paths(data)]


def _env_name(loc: Sequence[str | int]) -> str:
    return ENV_PREFIX + ENV_NESTED_DELIMITER.join(str(p).upper() for p in loc)


def _set_variable(loc: Sequence[str | int]) -> str:
    """The variable that set the value at `loc`: its own, or a section's given whole as JSON.

    `TOOLSCORE_PIPELINE='{"settle_ms": "soon"}'` sets `pipeline.settle_ms`; an error there must name the
    variable the author set, not `TOOLSCORE_PIPELINE__SETTLE_MS`, which they never did.
    """
    set_names = {name.upper(): name for name in os.environ}
    for n in range(len(loc), 0, -1):
        name = set_names.get(_env_name(loc[:n]))
        if name is not None:
            return name
    return _env_name(loc)


class _Origin(NamedTuple):
    """Where one value was set, and how deliberately: 0 toolscore's own configuration, 1 a standard `OTEL_*`
    variable, 2 a default."""

    where: str
    line: int | None
    rank: int

    def __str__(self) -> str:
        return self.where if self.line is None else f"{self.where}:{self.line}"


@dataclass(frozen=True)
class _Origins:
    """Where the merged values came from, to say where a bad one was set."""

    file: Path | None
    file_data: dict[str, Any]
    node: yaml.Node | None
    env_data: dict[str, Any]

    def value_origin(self, loc: _Loc) -> _Origin:
        """Where the one value at `loc` was set: `environment variable NAME`, else the file and its line, else the
        standard `OTEL_*` variable the section's defaults read, else `default` (a value none of them set, even
        when they set others of its section)."""
        if _has(self.env_data, loc):
            return _Origin(f"environment variable {_set_variable(loc)}", None, 0)
        if self.file is not None and self.node is not None and _has(self.file_data, loc):
            return _Origin(str(self.file), line_of(self.node, loc), 0)
        standard = _STANDARD_VARIABLES.get(str(loc[0])) if len(loc) == 2 else None
        if standard is not None and (name := standard(str(loc[1]))) is not None:
            return _Origin(f"environment variable{'s' if ',' in name else ''} {name}", None, 1)
        return _Origin("default", None, 2)

    def source(self, loc: Sequence[str]) -> str | None:
        """Where the value at `loc` was set, None when it is a default."""
        origin = self.value_origin(tuple(loc))
        return None if origin.rank == 2 else str(origin)

    def _env_set(self, loc: tuple[str | int, ...]) -> tuple[str | int, ...] | None:
        """Where in `loc` the variables set the value holding it: `loc` itself (a value, or a section whose keys
        they set), or the start of `loc` when they set a whole list or map the value is inside; None when they
        set none of it. A variable setting another key of the section (`TOOLSCORE_RECEIVER__TLS_CERT_FILE`
        beside the file's `tls_key_file`) sets none of it."""
        data: Any = self.env_data
        for n, part in enumerate(loc):
            if not isinstance(data, dict):
                return loc[:n]
            if part not in data:
                return None
            data = data[part]
        return loc or None

    def clash(self, locs: Sequence[_Loc], message: str) -> Problem:
        """An error between values that are each fine alone: told where each was set, and reported at the first
        one set in toolscore's own configuration (a `TOOLSCORE_*` variable or the file), else at the first a
        standard variable set, not at one left to its default: the key the user chose over a default or over the
        environment they inherited, which is the one they will look for."""
        origins = [self.value_origin(loc) for loc in locs]
        at = min(range(len(locs)), key=lambda i: (origins[i].rank, i))
        told = "; ".join(f"{field_path(loc)}: {origin}" for loc, origin in zip(locs, origins, strict=True))
        return Problem(field_path(locs[at]), f"{message} ({told})", origins[at].where, origins[at].line)

    def problem(self, loc: tuple[str | int, ...], message: str) -> Problem:
        """The variable that set the value, else the file's line, else a default."""
        env_loc = self._env_set(loc)
        if env_loc is not None:
            names = ", ".join(dict.fromkeys(_set_variable(leaf) for leaf in _leaves(self.env_data, env_loc)))
            plural = "s" if "," in names else ""
            return Problem(field_path(loc), message, f"environment variable{plural} {names}")
        in_file = self.file is not None and self.node is not None
        if in_file and self.node is not None and _has(self.file_data, loc):
            return Problem(field_path(loc), message, str(self.file), line_of(self.node, loc))
        origin = self.value_origin(loc)
        if origin.rank == 1:  # a standard `OTEL_*` variable the section's defaults read
            return Problem(field_path(loc), message, origin.where)
        if in_file and self.node is not None and (not loc or _has(self.file_data, loc[:1])):
            return Problem(field_path(loc), message, str(self.file), line_of(self.node, loc))
        return Problem(field_path(loc), message, "default")


def _problems(exc: ValidationError, merged: dict[str, Any], origins: _Origins) -> list[Problem]:
    return [
        origins.clash(_CROSS_KEY_RULES[err["type"]], error_message(err, ServeConfig))
        if err["type"] in _CROSS_KEY_RULES
        else origins.problem(drop_tags(err["loc"], merged), error_message(err, ServeConfig))
        for err in fold_misspelt_keys(exc.errors(include_url=False))
    ]
