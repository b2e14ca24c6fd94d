"""The Langfuse Python SDK set up for the Langfuse captures (`langfuse-langgraph/`, `langfuse-openai/`).

Langfuse's SDK (v3 and later) traces with OpenTelemetry: a `Langfuse` client adds its own span processor (a
`BatchSpanProcessor` exporting OTLP/HTTP to `<base_url>/api/public/otel/v1/traces`) to the `TracerProvider` it
is given (`Langfuse(tracer_provider=...)`, else the global one, `_client/resource_manager.py`), and makes every
observation with the tracer `langfuse-sdk` of that provider. A team that wants the same spans elsewhere adds its
own processor to that provider; so does this module: an in-memory exporter beside Langfuse's processor, on one
provider (not the global one) that the client is given.

No Langfuse server exists here: the client's `base_url` is `Sink`, an HTTP server on 127.0.0.1 that answers every
request 200 (and keeps the paths, to show what Langfuse's own exporter sent). Connections outside the loopback are
refused (`loopback_only_connections`, before anything is imported); LangSmith tracing is off. Langfuse has no
product telemetry of its own to turn off (its SDK sends nothing but the export and the API calls a program makes).

Imported from the Langfuse capture venv only (`/work/venvs/langfuse`).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import version
from typing import Any

from capture_kit import loopback_only_connections

__all__ = ["REFUSED", "Capture", "Sink", "langfuse_versions", "setup"]

REFUSED = loopback_only_connections()
"""Connections refused outside the loopback; a script fails when it is not empty."""

for _name, _value in {
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "OPENAI_API_KEY": "sk-scripted-not-a-key",
    "LANGFUSE_PUBLIC_KEY": "pk-lf-capture",
    "LANGFUSE_SECRET_KEY": "sk-lf-capture",
    "LANGFUSE_MEDIA_UPLOAD_ENABLED": "false",
}.items():
    os.environ[_name] = _value


class Sink:
    """A stand-in for the Langfuse server on 127.0.0.1: every request is answered 200 with `{}`."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        paths = self.paths

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                paths.append(f"{self.command} {self.path}")
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            do_POST = do_GET = do_PUT = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


@dataclass
class Capture:
    """The provider the Langfuse client traces with, the in-memory exporter on it, the client and the sink."""

    provider: Any
    exporter: Any
    langfuse: Any
    sink: Sink

    def spans(self) -> list[Any]:
        """The finished spans since the last `clear`, after the client flushed its own processor."""
        self.langfuse.flush()
        return list(self.exporter.get_finished_spans())

    def clear(self) -> None:
        self.exporter.clear()


def setup(service_name: str) -> Capture:
    """A `TracerProvider` with an in-memory exporter, and the `Langfuse` client on it (base URL: the sink)."""
    from langfuse import Langfuse
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    sink = Sink()
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    langfuse = Langfuse(base_url=sink.base_url, tracer_provider=provider)
    return Capture(provider, exporter, langfuse, sink)


def langfuse_versions() -> str:
    return f"langfuse {version('langfuse')}, opentelemetry-sdk {version('opentelemetry-sdk')}"
