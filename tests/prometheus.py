"""A real Prometheus server for tests: Debian's `prometheus` on a free 127.0.0.1 port, data in a temp directory.

`.ci/install-prometheus` installs it (`make test` runs that); a test fails, rather than skips, without it,
so a missing binary cannot pass for a green run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.serve_harness import free_port

__all__ = ["Prometheus"]


class Prometheus:
    """`prometheus` scraping `targets` and evaluating `rule_files` every `interval`; PromQL over its HTTP API."""

    def __init__(self, root: Path, targets: list[str], rule_files: Sequence[Path] = (), interval: str = "1s") -> None:
        binary = shutil.which("prometheus")
        if binary is None:
            pytest.fail("Prometheus is not installed: `make test` installs it with .ci/install-prometheus")
        config = {
            "global": {"scrape_interval": interval, "evaluation_interval": interval},
            "rule_files": [str(path) for path in rule_files],
            "scrape_configs": [{"job_name": "toolscore", "static_configs": [{"targets": targets}]}],
        }
        (root / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.url = f"http://127.0.0.1:{free_port()}"
        self.log = root / "prometheus.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [
                    binary,
                    f"--config.file={root / 'prometheus.yml'}",
                    f"--storage.tsdb.path={root / 'data'}",
                    f"--web.listen-address={self.url.removeprefix('http://')}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=5) as response:
            return json.loads(response.read()) if path.startswith("/api/") else response.status

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()
            try:
                if self.get("/-/ready") == 200:
                    return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        raise AssertionError(f"prometheus not ready after {timeout_s} s:\n{self.log.read_text()}")

    def query(self, promql: str) -> list[dict[str, Any]]:
        answer = self.get("/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
        assert answer["status"] == "success", answer
        return list(answer["data"]["result"])

    def query_until(
        self, promql: str, done: Callable[[list[dict[str, Any]]], bool], timeout_s: float = 30.0
    ) -> list[dict[str, Any]]:
        """The rows of `promql` once `done(rows)` holds (scrapes and rule evaluations come every interval)."""
        deadline = time.monotonic() + timeout_s
        rows = self.query(promql)
        while not done(rows):
            if time.monotonic() > deadline:
                raise AssertionError(f"{promql}: not there after {timeout_s} s: {rows}")
            time.sleep(0.5)
            rows = self.query(promql)
        return rows

    def alerts(self) -> list[dict[str, Any]]:
        """Active alerts (pending and firing), as `/api/v1/alerts` lists them."""
        answer = self.get("/api/v1/alerts")
        assert answer["status"] == "success", answer
        return list(answer["data"]["alerts"])

    def rule_groups(self) -> list[dict[str, Any]]:
        """Loaded rule groups with each rule's health and last error, as `/api/v1/rules` lists them."""
        answer = self.get("/api/v1/rules")
        assert answer["status"] == "success", answer
        return list(answer["data"]["groups"])

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
