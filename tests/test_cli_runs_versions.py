"""`toolscore runs --by-version` on the store a real `toolscore serve` wrote: two versions of an agent compared.

Version 1.0 of the `travel` agent (its resource's `service.version`) books the flight on each of its 20 runs,
version 1.1 on 5 of its 20, and 3 runs say no version; the collector scores them into its score store and
stops. The CLI then reads that file as a user would.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.serve_harness import ServeProcess, serve_config
from tests.test_deploy_alert_e2e import EXPECTATIONS, Agent
from toolscore.collector.cli import main

pytestmark = pytest.mark.integration

EXPECTATION = "e2e.travel.book-flight"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    tmp_path = tmp_path_factory.mktemp("versions")
    config = serve_config(tmp_path, [EXPECTATIONS], None, pipeline={"settle_ms": 50})
    with ServeProcess(config, tmp_path) as serve:
        serve.wait_ready()
        agents = {version: Agent(serve.grpc_endpoint, version) for version in ("1.0", "1.1", None)}
        try:
            for _ in range(20):
                agents["1.0"].run(True)
            for i in range(20):
                agents["1.1"].run(i < 5)
            for _ in range(3):
                agents[None].run(True)
        finally:
            for agent in agents.values():
                agent.provider.shutdown()  # sends what is left
        assert _stored_runs(tmp_path / "scores.db") == 43, serve.log()
        assert serve.terminate() == 0, serve.log()
    return str(tmp_path / "scores.db")


def _stored_runs(path: Path) -> int:
    """Waits until the collector has stored the 43 runs (it writes every 200 ms)."""
    deadline = time.monotonic() + 30
    count = 0
    while time.monotonic() < deadline:
        code, out, _ = invoke("--db", str(path), "--limit", "100", "-o", "json")
        count = len(json.loads(out)) if code == 0 else 0
        if count >= 43:
            break
        time.sleep(0.2)
    return count


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["runs", *args])
    return result.exit_code, result.stdout, result.stderr


def test_each_version_gets_its_runs_pass_rate_and_difference_from_the_one_before(store: str) -> None:
    code, out, _ = invoke("--db", store, "--by-version", "-o", "json")
    assert code == 1, "1.1 passes 0.75 less often than 1.0, on 20 runs each"
    rows = json.loads(out)
    assert [(r["agent"], r["expectation"], r["agent_version"]) for r in rows] == [
        ("travel", EXPECTATION, "1.0"),
        ("travel", EXPECTATION, "1.1"),
        ("travel", EXPECTATION, None),
    ]
    old, new, unversioned = rows
    assert (old["runs"], old["passed"], old["pass_rate"], old["mean_score"]) == (20, 20, 1.0, 1.0)
    assert (new["runs"], new["passed"], new["pass_rate"], new["mean_score"]) == (20, 5, 0.25, 0.25)
    assert (old["previous_version"], old["delta"], old["worse"]) == (None, None, False)
    assert (new["previous_version"], new["delta"], new["worse"]) == ("1.0", -0.75, True)
    assert (unversioned["runs"], unversioned["delta"], unversioned["worse"]) == (3, None, False)
    assert old["first_seen"] <= old["last_seen"] <= new["first_seen"] <= new["last_seen"]


def test_the_table_marks_the_worse_version_and_says_why(store: str) -> None:
    code, out, _ = invoke("--db", store, "--by-version")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["AGENT", "EXPECTATION", "VERSION", "RUNS", "PASS"]
    assert lines[1].split()[:6] == ["travel", EXPECTATION, "1.0", "20", "100.0%", "1.000"]
    assert lines[2].split()[:6] == ["travel", EXPECTATION, "1.1", "20", "25.0%", "0.250"]
    assert lines[2].endswith("-0.75 vs 1.0  WORSE")
    assert lines[3].split()[:4] == ["travel", EXPECTATION, "(none)", "3"]
    assert lines[3].endswith("-")
    assert lines[4] == (
        "1 version(s) below the one before it by more than 0.10 (on at least 20 runs each): "
        f"travel/{EXPECTATION} 1.1 (after 1.0)"
    )


@pytest.mark.parametrize(
    "args",
    [("--margin", "0.75"), ("--min-runs", "21"), ("--agent-version", "1.1"), ("--since", "1000000d", "--agent", "x")],
)
def test_a_drop_within_the_margin_on_too_few_runs_or_without_a_version_before_is_not_worse(
    store: str, args: tuple[str, ...]
) -> None:
    code, out, _ = invoke("--db", store, "--by-version", "-o", "json", *args)
    assert code == 0
    assert not any(row["worse"] for row in json.loads(out))


def test_listing_one_versions_runs_shows_their_version(store: str) -> None:
    code, out, _ = invoke("--db", store, "--agent-version", "1.1", "--label", "fail", "--limit", "100")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["SCORED", "AGENT", "VERSION"]
    assert len(lines) == 1 + 15
    assert all(line.split()[2:4] == ["travel", "1.1"] for line in lines[1:])
    code, out, _ = invoke("--db", store, "--limit", "100", "-o", "json")
    versions = [run["agent_version"] for run in json.loads(out)]
    assert (versions.count("1.0"), versions.count("1.1"), versions.count(None)) == (20, 20, 3)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--by-version", "--label", "fail"), "--label: not with --by-version"),
        (("--by-version", "--limit", "5"), "--limit: not with --by-version"),
        (("--margin", "0.2"), "--margin: only with --by-version"),
    ],
)
def test_an_option_of_the_other_view_is_refused(store: str, args: tuple[str, ...], message: str) -> None:
    code, _, err = invoke("--db", store, *args)
    assert code == 2
    assert message in err
