"""A real Arize Phoenix (`phoenix serve`) on free 127.0.0.1 ports, with its database in a temporary directory.

`.ci/install-phoenix` installs it into `.venv-phoenix` (`make test` runs that); a test fails, rather than
skips, without it.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.serve_harness import LoggedProcess, free_port

__all__ = ["Phoenix"]

_BIN = Path(__file__).resolve().parent.parent / ".venv-phoenix" / "bin" / "phoenix"


class Phoenix(LoggedProcess):
    """`phoenix serve`, its HTTP base URL (REST API and OTLP/HTTP) and its OTLP/gRPC endpoint."""

    name = "phoenix"

    def __init__(self, workdir: Path) -> None:
        if not _BIN.exists():
            pytest.fail("Phoenix is not installed: `make test` installs it with .ci/install-phoenix")
        self.http_port, self.grpc_port = free_port(), free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_"))}
        env.update(
            PHOENIX_WORKING_DIR=str(workdir),
            PHOENIX_HOST="127.0.0.1",
            PHOENIX_PORT=str(self.http_port),
            PHOENIX_GRPC_PORT=str(self.grpc_port),
            PHOENIX_TELEMETRY_ENABLED="false",
            DO_NOT_TRACK="1",
        )
        super().__init__([str(_BIN), "serve"], workdir / "phoenix.log", env)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.grpc_port}"

    def wait_ready(self, timeout_s: float = 90.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"phoenix exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=1) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise AssertionError(f"phoenix not ready after {timeout_s} s:\n{self.log()}")

    def get(self, path: str, **query: Any) -> Any:
        url = f"{self.url}{path}?{urllib.parse.urlencode(query, doseq=True)}"
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.load(response)

    def annotations(self, span_ids: list[str], project: str = "default") -> list[dict[str, Any]]:
        """The span annotations Phoenix holds for these spans (its REST API)."""
        found: list[dict[str, Any]] = []
        query: dict[str, Any] = {"span_ids": span_ids, "limit": 1000}  # Phoenix's default page is 10
        while True:
            try:
                page = self.get(f"/v1/projects/{project}/span_annotations", **query)
            except urllib.error.HTTPError as error:  # Phoenix answers 404 for spans it does not have
                if error.code == 404:
                    return found
                raise
            found += page["data"]
            if not page.get("next_cursor"):
                return found
            query["cursor"] = page["next_cursor"]

    def span_ids(self, project: str = "default") -> set[str]:
        """Every span id Phoenix has received into `project`."""
        try:
            spans = self.get(f"/v1/projects/{project}/spans", limit=1000)["data"]
        except urllib.error.HTTPError:  # the project exists once its first span arrived
            return set()
        return {span["context"]["span_id"] for span in spans}
