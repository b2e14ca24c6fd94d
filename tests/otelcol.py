"""A real OpenTelemetry Collector for tests: the distribution `.ci/install-otelcol` builds, run as a process.

The Collector configs are the ones under `deploy/`, loaded as a user would write them, with only their
listen and export endpoints moved to free 127.0.0.1 ports (`rewrite_endpoints`) and the trace backend
replaced by the `file` exporter, whose length-prefixed protobuf output `FileSpans` reads back. Each
Collector's own metrics are served on a port of its own (`Otelcol.metric`), so several can run at once.

`make test` builds the binary (`.ci/install-otelcol`); a test fails, rather than skips, without it, so a
missing Collector cannot pass for a green run.
"""

from __future__ import annotations

import copy
import hashlib
import os
import struct
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.serve_harness import LoggedProcess, free_port

__all__ = [
    "COMPOSE_CONFIG",
    "DEPLOY_CONFIGS",
    "GATEWAY_CONFIG",
    "FileSpans",
    "Otelcol",
    "compose_config",
    "gateway_config",
    "otelcol_binary",
    "prometheus_sum",
    "rewrite_endpoints",
]

ROOT = Path(__file__).parent.parent
MANIFEST = ROOT / ".ci" / "otelcol-builder.yaml"
COMPOSE_CONFIG = ROOT / "deploy" / "compose" / "otelcol" / "config.yaml"
COMPOSE_FILE = ROOT / "deploy" / "compose" / "docker-compose.yml"
GATEWAY_CONFIG = ROOT / "deploy" / "kubernetes" / "otelcol" / "config.yaml"
DEPLOY_CONFIGS = sorted(
    path for path in (ROOT / "deploy").rglob("*.yaml") if path.parent.name == "otelcol" and path.name == "config.yaml"
)
"""Every Collector config under deploy/ (each in a folder named `otelcol`)."""


def otelcol_binary() -> Path:
    """The Collector `.ci/install-otelcol` built from the manifest as it is now (or `$TOOLSCORE_OTELCOL`)."""
    given = os.environ.get("TOOLSCORE_OTELCOL")
    if given:
        return Path(given)
    key = hashlib.sha256(MANIFEST.read_bytes()).hexdigest()[:12]
    cache = os.environ.get("OTELCOL_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "toolscore" / "otelcol"
    )
    binary = Path(cache) / key / "otelcol-toolscore"
    if not binary.exists():
        pytest.fail(f"no OpenTelemetry Collector at {binary}: `make test` builds it with .ci/install-otelcol")
    return binary


def rewrite_endpoints(config: dict[str, Any], endpoints: Mapping[str, str]) -> dict[str, Any]:
    """A copy of `config` with each `endpoint` value found in `endpoints` replaced (`0.0.0.0:4317` → a free
    loopback port, `toolscore:4317` → a replica), everything else as written."""

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: endpoints.get(v, v) if k == "endpoint" and isinstance(v, str) else walk(v) for k, v in node.items()
            }
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    rewritten: dict[str, Any] = walk(copy.deepcopy(config))
    return rewritten


def _loopback_listeners(config: dict[str, Any]) -> dict[str, str]:
    """A free 127.0.0.1 port for every `0.0.0.0:<port>` endpoint the config listens on."""
    text = yaml.safe_dump(config)
    listens = sorted({word.strip("'\",") for word in text.split() if word.strip("'\",").startswith("0.0.0.0:")})
    return {address: f"127.0.0.1:{free_port()}" for address in listens}


def _file_backend(config: dict[str, Any], backend: str, out: Path) -> None:
    """Replace the exporter `backend` (the trace backend: Jaeger, Tempo...) by a `file` exporter writing `out`."""
    config["exporters"].pop(backend)
    config["exporters"]["file/backend"] = {"path": str(out), "format": "proto", "flush_interval": "100ms"}
    for pipeline in config["service"]["pipelines"].values():
        pipeline["exporters"] = ["file/backend" if name == backend else name for name in pipeline["exporters"]]


def compose_config(
    toolscore_grpc: str, out: Path | None = None, backend: str | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The compose stack's Collector config (`deploy/compose/otelcol/config.yaml`) on free loopback ports,
    exporting to `toolscore serve` at `toolscore_grpc`, and to `out` (a `file` exporter) in place of Jaeger, or
    to the real trace backend at `backend` (host:port, OTLP/gRPC) through the config's own Jaeger exporter.

    Returns the config and its listen addresses by the address the file names (`0.0.0.0:4317`...)."""
    config = yaml.safe_load(COMPOSE_CONFIG.read_text())
    listeners = _loopback_listeners(config)
    moved = {**listeners, "toolscore:4317": toolscore_grpc}
    if backend is not None:
        moved["jaeger:4317"] = backend
    config = rewrite_endpoints(config, moved)
    if out is not None:
        _file_backend(config, "otlp/jaeger", out)
    return config, listeners


def compose_env(scored_endpoint: str) -> dict[str, str]:
    """toolscore's environment in the compose file, its forward endpoint (`otel-collector:4319`) on loopback;
    the registry's files and the store paths come from the test's config file instead."""
    services = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
    env = {k: str(v) for k, v in services["toolscore"]["environment"].items() if k != "TOOLSCORE_REGISTRY__FILES"}
    assert env["TOOLSCORE_FORWARD__ENDPOINT"] == "http://otel-collector:4319"
    env["TOOLSCORE_FORWARD__ENDPOINT"] = f"http://{scored_endpoint}"
    return env


def gateway_config(out: Path, resolver: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The Kubernetes gateway's config (`deploy/kubernetes/otelcol/config.yaml`) on free loopback ports, exporting
    to `out` in place of the trace backend. `resolver`: `{"static": {"hostnames": [...]}}` replaces its `dns`
    resolver; `{"dns": {...}}` overrides keys of it (`hostname`, `port`, `interval`). Returns as
    `compose_config` does."""
    config = yaml.safe_load(GATEWAY_CONFIG.read_text())
    listeners = _loopback_listeners(config)
    config = rewrite_endpoints(config, listeners)
    exporter = config["exporters"]["loadbalancing"]
    if "dns" in resolver:
        exporter["resolver"]["dns"].update(resolver["dns"])
    else:
        exporter["resolver"] = resolver
    _file_backend(config, "otlp/backend", out)
    return config, listeners


def prometheus_sum(url: str, name: str, *, prefix: bool = False, **labels: str) -> float:
    """The sum of the samples of `name` (`prefix`: of every metric whose name starts with it) whose labels
    include `labels`, in the Prometheus text at `url`."""
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name) or line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        metric, _, label_text = series.partition("{")
        if metric != name and not (prefix and metric.startswith(name)):
            continue
        found = dict(
            part.split("=", 1) for part in label_text.rstrip("}").split(",") if "=" in part
        )  # values keep their quotes
        if all(found.get(k) == f'"{v}"' for k, v in labels.items()):
            total += float(value)
    return total


class Otelcol(LoggedProcess):
    """The Collector running `config`, in `root` (config, log); its health check and own metrics on free ports.
    `terminate` sends SIGTERM: the Collector drains its pipelines."""

    name = "otelcol"

    def __init__(
        self,
        root: Path,
        config: dict[str, Any],
        name: str = "otelcol",
        wrap: Callable[[list[str]], list[str]] | None = None,
    ) -> None:
        """`wrap`: the command line to run the Collector's with (`HostsFile.command`), which must exec it."""
        config = copy.deepcopy(config)
        self.health_port = free_port()
        self.metrics_port = free_port()
        config.setdefault("extensions", {})["health_check"] = {"endpoint": f"127.0.0.1:{self.health_port}"}
        service = config["service"]
        service["extensions"] = sorted({*service.get("extensions", []), "health_check"})
        service["telemetry"] = {
            "logs": {"level": "info"},
            "metrics": {
                "level": "detailed",
                "readers": [{"pull": {"exporter": {"prometheus": {"host": "127.0.0.1", "port": self.metrics_port}}}}],
            },
        }
        self.config_path = root / f"{name}.yaml"
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        argv = [str(otelcol_binary()), f"--config={self.config_path}"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        super().__init__(wrap(argv) if wrap is not None else argv, root / f"{name}.log", env)

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"otelcol exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/", timeout=1) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        raise AssertionError(f"otelcol not ready after {timeout_s} s:\n{self.log()}")

    def metric(self, name: str, **labels: str) -> float:
        """The Collector's own metric `name` (`otelcol_exporter_sent_spans_total`...), summed over `labels`."""
        return prometheus_sum(f"http://127.0.0.1:{self.metrics_port}/metrics", name, **labels)


class FileSpans:
    """The spans a `file` exporter (`format: proto`) wrote: 4-byte big-endian lengths, each before one
    `TracesData`, which is wire-compatible with `ExportTraceServiceRequest`."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def requests(self) -> list[ExportTraceServiceRequest]:
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        out, at = [], 0
        while at + 4 <= len(data):
            (size,) = struct.unpack(">I", data[at : at + 4])
            if at + 4 + size > len(data):
                break  # a write in progress
            out.append(ExportTraceServiceRequest.FromString(data[at + 4 : at + 4 + size]))
            at += 4 + size
        return out

    def spans(self) -> Iterator[Span]:
        for request in self.requests():
            for resource_spans in request.resource_spans:
                for scope_spans in resource_spans.scope_spans:
                    yield from scope_spans.spans

    def wait_for(self, keys: set[tuple[str, str]], timeout_s: float = 30.0, quiet_s: float = 1.0) -> Counter[Any]:
        """How many times each (trace id, span id) hex key was written, once all of `keys` were and nothing
        more came for `quiet_s` (a duplicate would come right behind), or `timeout_s` passed."""
        deadline = time.monotonic() + timeout_s
        last_size, quiet_since = -1, time.monotonic()
        while True:
            counts = Counter((span.trace_id.hex(), span.span_id.hex()) for span in self.spans())
            size = self.path.stat().st_size if self.path.exists() else 0
            if size != last_size:
                last_size, quiet_since = size, time.monotonic()
            if (keys <= counts.keys() and time.monotonic() - quiet_since >= quiet_s) or time.monotonic() > deadline:
                return counts
            time.sleep(0.1)
