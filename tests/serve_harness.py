"""`toolscore serve` as a subprocess on free 127.0.0.1 ports, and a downstream OTLP/gRPC receiver to forward to."""

from __future__ import annotations

import itertools
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any, Self

import grpc
import yaml
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.trace.v1.trace_pb2 import Span

__all__ = ["Downstream", "LoggedProcess", "ServeProcess", "free_port", "serve_config"]


_LOWEST_PORT = 10_000
_ports_lock = threading.Lock()
_port_order: list[Iterator[int]] = []
"""The ports to try next, in turn (made at the first call)."""


def _ephemeral_start() -> int:
    """The first port of the kernel's ephemeral range (bind to port 0, outgoing connections), 32768 by default."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A 127.0.0.1 port free now, below the kernel's ephemeral range, and not given out before by this process.

    Below the ephemeral range because a port is only reserved once the process it is for binds it, seconds later:
    a port the kernel handed out for port 0 could go, meanwhile, to a server binding port 0 (a test's downstream)
    or to an outgoing connection, and the kernel hands a port just closed out again (seen in CI: `toolscore serve`
    failed to start, its `ui.endpoint` taken by its own gRPC receiver's port, then by another socket). The ports
    are taken in turn from a start of this process's own, so that two test processes rarely meet.
    """
    with _ports_lock:
        top = _ephemeral_start()
        span = top - _LOWEST_PORT
        if span < 1_000:  # an unusual kernel setting: the kernel's own choice, as a last resort
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                return int(sock.getsockname()[1])
        if not _port_order:
            first = random.Random(os.getpid()).randrange(span)
            _port_order.append(_LOWEST_PORT + (first + k) % span for k in itertools.count())
        for _ in range(span):
            port = next(_port_order[0])
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue  # in use
            return port
    raise RuntimeError(f"no free port between {_LOWEST_PORT} and {top}")


class Downstream(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
    """An OTLP/gRPC receiver that keeps every request it is sent (what an OpenTelemetry Collector would get)."""

    def __init__(self) -> None:
        self.requests: list[trace_service_pb2.ExportTraceServiceRequest] = []
        self._lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def Export(self, request: Any, context: Any) -> Any:
        with self._lock:
            self.requests.append(request)
        return trace_service_pb2.ExportTraceServiceResponse()

    def spans(self) -> list[tuple[dict[str, Any], Span]]:
        """(resource attributes, span) of every span received so far, in arrival order."""
        with self._lock:
            requests = list(self.requests)
        out = []
        for request in requests:
            for resource_spans in request.resource_spans:
                resource = {kv.key: kv.value.string_value for kv in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    out.extend((resource, span) for span in scope_spans.spans)
        return out

    def wait_for(self, keys: set[tuple[str, str]], timeout_s: float = 20.0) -> list[Span]:
        """The spans received with these (trace id, span id) hex keys, once all arrived or `timeout_s` passed."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = [span for _, span in self.spans() if (span.trace_id.hex(), span.span_id.hex()) in keys]
            if {(s.trace_id.hex(), s.span_id.hex()) for s in found} >= keys or time.monotonic() > deadline:
                time.sleep(0.2)  # a duplicate would arrive right behind
                return [span for _, span in self.spans() if (span.trace_id.hex(), span.span_id.hex()) in keys]
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.stop(0).wait(5)


def serve_config(tmp_path: Path, expectations: list[Path], downstream: Downstream | None, **sections: Any) -> Path:
    """A config file for a collector on free ports with its state under `tmp_path`; `sections` override keys."""
    config: dict[str, Any] = {
        "receiver": {"grpc_endpoint": f"127.0.0.1:{free_port()}", "http_endpoint": f"127.0.0.1:{free_port()}"},
        "pipeline": {"settle_ms": 100},
        "registry": {
            "store": {"type": "sqlite", "path": str(tmp_path / "registry.db")},
            "files": [str(p) for p in expectations],
        },
        "score_store": {"path": str(tmp_path / "scores.db")},
        "ui": {"endpoint": f"127.0.0.1:{free_port()}"},
        "telemetry": {"prometheus_enabled": True, "prometheus_port": free_port()},
        "shutdown_grace_s": 10,
    }
    if downstream is not None:
        config["forward"] = {"endpoint": downstream.endpoint, "batch_timeout_ms": 20}
    for name, values in sections.items():
        config[name] = {**config.get(name, {}), **values} if isinstance(values, dict) else values
    path = tmp_path / "serve.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _clean_env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLSCORE_"))}
    env.update(extra or {})
    return env


class LoggedProcess:
    """A subprocess whose output goes to `log_path`: stopped with SIGTERM by `terminate`, killed on leaving a
    `with` block if still running. `name` says which in the failures."""

    name = "process"

    def __init__(self, argv: list[str], log_path: Path, env: dict[str, str], cwd: Path | None = None) -> None:
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=self._log, stderr=subprocess.STDOUT)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def terminate(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, then the exit status (killed, and the test failed, if it takes longer than `timeout_s`)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise AssertionError(f"{self.name} did not exit within {timeout_s} s of SIGTERM:\n{self.log()}") from None
        finally:
            self._log.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        self._log.close()


class ServeProcess(LoggedProcess):
    """`python -m toolscore.collector.cli serve --config FILE` in `cwd`; its output goes to `cwd/serve.log`."""

    name = "toolscore serve"

    def __init__(self, config: Path, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.config = yaml.safe_load(config.read_text())
        argv = [sys.executable, "-m", "toolscore.collector.cli", "serve", "--config", str(config)]
        super().__init__(argv, cwd / "serve.log", _clean_env(env), cwd)

    @property
    def grpc_endpoint(self) -> str:
        return str(self.config["receiver"]["grpc_endpoint"])

    @property
    def http_url(self) -> str:
        return f"http://{self.config['receiver']['http_endpoint']}"

    @property
    def metrics_port(self) -> int:
        return int(self.config["telemetry"]["prometheus_port"])

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"toolscore serve exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(self.http_url + "/readyz", timeout=1) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        raise AssertionError(f"toolscore serve not ready after {timeout_s} s:\n{self.log()}")
