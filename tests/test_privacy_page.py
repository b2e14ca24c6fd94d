"""`toolscore ui` on a store a masking `serve` wrote: the privacy options mask the diffs' expected values alike.

The store holds the run as serve masked it (markers); the expectation in the registry holds the values its author
wrote. Given the same settings and key, the page masks the expected values with them: the diff compares markers
with markers (the run that paid with the expected card shows no differing argument) and the page holds no
secret. Without the options, the page shows the expected values as written: the control.
"""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.privacy_runs import ARGS, MASKING, SECRETS
from tests.serve_harness import free_port
from toolscore.collector.extract.privacy import PrivacyConfig, mask_run, masker_for
from toolscore.collector.extract.privacy_rules import masked_scorer
from toolscore.collector.registry import Registry, RegistryConfig, SqliteStoreConfig
from toolscore.collector.serve.scores import ScoreStoreConfig
from toolscore.collector.serve.scores._store import ScoreStore
from toolscore.scorers import AgentRun, ToolCall

pytestmark = pytest.mark.integration

PAYMENTS = {
    "name": "payments",
    "match": {"agent": "payer"},
    "scorers": [{"type": "trajectory", "mode": "strict", "expected": [{"name": "charge", "args": ARGS}]}],
}


def _store(tmp_path: Path) -> tuple[Path, Path]:
    """A store holding the run serve masked (scored against `payments`), and the registry holding `payments`."""
    registry_db = tmp_path / "registry.db"
    registry = Registry(config=RegistryConfig(store=SqliteStoreConfig(path=str(registry_db))))
    expectation = registry.put(PAYMENTS)
    registry.close()
    call = ToolCall(name="charge", args=ARGS, args_state="value")
    plain = AgentRun(trace_id="1" * 32, span_id="1" * 16, agent_name="payer", input="Pay", calls=(call,))
    privacy = PrivacyConfig.model_validate(MASKING)
    run = mask_run(plain, privacy)
    scorer = masked_scorer(expectation.scorers[0].scorer, masker_for(privacy))  # as serve scores it
    store = ScoreStore(ScoreStoreConfig(path=str(tmp_path / "scores.db"), write_interval_ms=10))
    store.record(run, expectation, scorer.score(run))
    assert store.close()
    return tmp_path / "scores.db", registry_db


def _page(db: Path, registry: Path, *options: str, env: dict[str, str] | None = None) -> str:
    port = free_port()
    command = [sys.executable, "-m", "toolscore.collector.cli", "ui", "--db", str(db), "--registry", str(registry)]
    with subprocess.Popen(
        [*command, "--endpoint", f"127.0.0.1:{port}", *options],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    ) as proc:
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            assert f"the runs page on http://127.0.0.1:{port}/" in line, line
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", "/run/1")
            response = conn.getresponse()
            assert response.status == 200
            page = response.read().decode()
            conn.close()
        finally:
            proc.terminate()
            proc.wait(10)
    return page


def test_toolscore_ui_masks_the_diffs_expected_values_with_the_privacy_options(tmp_path: Path) -> None:
    db, registry = _store(tmp_path)
    settings = tmp_path / "serve.yaml"
    settings.write_text(yaml.safe_dump({"pipeline": {"extract": {"privacy": MASKING}}}))
    masked = _page(db, registry, "--privacy-config", str(settings))
    plain = _page(db, registry)

    assert [secret for secret in SECRETS[:3] if secret in plain], "the control: expected values as written"
    assert [secret for secret in SECRETS if secret in masked] == []
    assert "wrong args" in plain  # markers against raw values
    assert "wrong args" not in masked  # markers against markers: the run paid as expected
    assert "«masked:" in masked


def test_toolscore_ui_with_another_key_cannot_compare_the_markers(tmp_path: Path) -> None:
    db, registry = _store(tmp_path)
    other = {**MASKING, "hash_key": "another-key"}
    settings = tmp_path / "other.yaml"
    settings.write_text(yaml.safe_dump({"privacy": other}))
    page = _page(db, registry, "--privacy-config", str(settings))
    assert [secret for secret in SECRETS if secret in page] == []
    assert "wrong args" in page  # why security.md asks for the same key in every process that compares markers
