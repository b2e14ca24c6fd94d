"""The runs page over HTTP (no browser): what the store keeps for it, who may read it, the write it makes, and
`toolscore expectations from-run`. The browser's view is tests/test_ui_browser.py."""

from __future__ import annotations

import http.client
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
import yaml
from click.testing import CliRunner

from tests.serve_harness import free_port
from toolscore.collector.cli import main
from toolscore.collector.registry import Expectation, Registry, RegistryConfig, SqliteStoreConfig, parse_expectation
from toolscore.collector.registry._matching import matches
from toolscore.collector.serve.scores import ScoreStoreConfig, query_runs, run_by_span, runs_page
from toolscore.collector.serve.scores._store import ScoreStore
from toolscore.collector.ui import UiConfig, UiServer, expectation_from_run, start_ui
from toolscore.scorers import AgentRun, ToolCall

TRAVEL = {
    "name": "travel.book",
    "match": {"agent": "travel"},
    "scorers": [
        {
            "type": "trajectory",
            "mode": "strict",
            "expected": [{"name": "search_flights", "args": {"to": "JFK"}}, {"name": "book_flight"}],
            "args_match": {"mode": "subset"},
        }
    ],
}


def _run(n: int, to: str = "JFK", agent: str = "travel", request: str | None = "Book SFO to JFK") -> AgentRun:
    calls = (
        ToolCall(name="search_flights", args={"to": to}, args_state="value"),
        ToolCall(name="book_flight", args={"id": "UA1"}, args_state="value"),
    )
    return AgentRun(trace_id=f"{n:032x}", span_id=f"{n:016x}", agent_name=agent, input=request, calls=calls)


def _score(store: ScoreStore, expectation: Expectation, run: AgentRun) -> None:
    for scorer in expectation.scorers:
        store.record(run, expectation, scorer.scorer.score(run))


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    reg = Registry(config=RegistryConfig(store=SqliteStoreConfig(path=str(tmp_path / "registry.db"))))
    yield reg
    reg.close()


@pytest.fixture
def scored(tmp_path: Path, registry: Registry) -> Path:
    """A store with a passing run (1) and a failing one (2), both against `travel.book` v1."""
    expectation = registry.put(TRAVEL)
    store = ScoreStore(ScoreStoreConfig(path=str(tmp_path / "scores.db"), write_interval_ms=10))
    _score(store, expectation, _run(1))
    _score(store, expectation, _run(2, to="LAX"))
    assert store.flush(5)
    store.close()
    return tmp_path / "scores.db"


def _serve(db: Path, registry: Registry | None, **config: object) -> UiServer:
    return start_ui(UiConfig(endpoint="127.0.0.1:0", **config), str(db), registry)  # type: ignore[arg-type]


def _get(server: UiServer, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
    finally:
        conn.close()


def _post(server: UiServer, path: str, form: dict[str, str], headers: dict[str, str] | None = None) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        body = urlencode(form)
        conn.request("POST", path, body, {"content-type": "application/x-www-form-urlencoded", **(headers or {})})
        response = conn.getresponse()
        return response.status, response.getheader("location") or response.read().decode()
    finally:
        conn.close()


def test_the_store_keeps_each_runs_request(scored: Path) -> None:
    (newest, oldest) = query_runs(scored)
    assert (newest.request, oldest.request) == ("Book SFO to JFK", "Book SFO to JFK")
    assert newest.row_id > oldest.row_id


def test_a_store_written_before_requests_were_kept_is_read_and_upgraded(tmp_path: Path) -> None:
    db = tmp_path / "scores.db"
    store = ScoreStore(ScoreStoreConfig(path=str(db), write_interval_ms=10))
    store.close()
    conn = sqlite3.connect(db)
    conn.execute("ALTER TABLE runs DROP COLUMN request")
    conn.execute(
        "INSERT INTO runs (id, trace_id, span_id, agent, calls_json, calls_total, incomplete, scored_ns)"
        " VALUES (1, 'ab', 'cd', 'travel', '[]', 0, 0, 1)"
    )
    conn.commit()
    conn.close()
    assert [run.request for run in query_runs(db)] == [None]  # read as it is, without writing
    ScoreStore(ScoreStoreConfig(path=str(db))).close()  # the collector adds the column
    conn = sqlite3.connect(db)
    assert "request" in {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
    conn.close()


def test_pages_go_back_by_run_id(scored: Path) -> None:
    first = runs_page(scored, limit=1)
    older = runs_page(scored, before_id=first[0].row_id, limit=1)
    assert [run.trace_id for run in first + older] == [f"{2:032x}", f"{1:032x}"]


def test_a_failing_run_shows_the_differing_argument_and_links_its_trace(scored: Path, registry: Registry) -> None:
    server = _serve(scored, registry, trace_url="http://jaeger.example/trace/{trace_id}?span={span_id}")
    try:
        status, headers, html = _get(server, f"/run/{runs_page(scored)[0].row_id}")
    finally:
        server.stop()
    assert status == 200
    assert "wrong args" in html
    assert "to: expected &quot;JFK&quot;, got &quot;LAX&quot;" in html
    assert f'href="http://jaeger.example/trace/{2:032x}?span={2:016x}"' in html
    assert "script-src 'sha256-" in headers["content-security-policy"]


def test_a_diff_is_read_against_the_expectation_version_that_scored_the_run(scored: Path, registry: Registry) -> None:
    changed = {**TRAVEL, "scorers": [{**TRAVEL["scorers"][0], "expected": [{"name": "other_tool"}]}]}  # type: ignore[dict-item]
    assert registry.put(changed).version == 2
    server = _serve(scored, registry)
    try:
        _, _, html = _get(server, f"/run/{runs_page(scored)[0].row_id}")
    finally:
        server.stop()
    assert "search_flights(to=&quot;JFK&quot;)" in html  # v1's expected call, not v2's
    assert "other_tool" not in html


def test_with_a_token_the_page_answers_only_to_it_or_its_cookie(scored: Path) -> None:
    server = _serve(scored, None, bearer_token="s3cret")
    try:
        assert _get(server, "/")[0] == 401
        assert _get(server, "/", {"authorization": "Bearer wrong"})[0] == 401
        assert _get(server, "/", {"authorization": "bearer s3cret"})[0] == 200
        status, headers, _ = _get(server, "/?token=s3cret")
        assert status == 303
        assert headers["location"] == "/"
        cookie = headers["set-cookie"].split(";")[0]
        assert "HttpOnly" in headers["set-cookie"]
        assert _get(server, "/api/latest", {"cookie": cookie})[0] == 200
        assert _get(server, "/?token=nope")[0] == 401
        assert _get(server, "/", {"cookie": "$Version=1; a@b=c"})[0] == 401  # unreadable: refused, answered
    finally:
        server.stop()


def test_the_page_makes_a_run_an_expectation_only_from_its_own_form(scored: Path, registry: Registry) -> None:
    server = _serve(scored, registry)
    row = runs_page(scored)[-1].row_id  # the passing run
    try:
        _, _, preview = _get(server, f"/run/{row}/expect?name=ui.made&mode=strict&args_mode=exact&match_input=1")
        shown = re.search(r'<pre id="preview">(.*?)</pre>', preview, re.S)
        assert shown is not None
        assert "name: ui.made" in shown.group(1)
        csrf = re.search(r'name=csrf value="([^"]+)"', preview)
        assert csrf is not None
        form = {"name": "ui.made", "mode": "strict", "args_mode": "exact", "match_input": "1"}
        assert _post(server, f"/run/{row}/expect", form)[0] == 403
        evil = {"origin": "http://evil.example"}
        assert _post(server, f"/run/{row}/expect", {**form, "csrf": csrf.group(1)}, evil)[0] == 403
        status, location = _post(server, f"/run/{row}/expect", {**form, "csrf": csrf.group(1)})
    finally:
        server.stop()
    assert (status, location) == (303, "/expectations?applied=ui.made")
    made = registry.get("ui.made")
    assert made.labels["trace_id"] == f"{1:032x}"
    assert made.scorers[0].spec["expected"] == [
        {"name": "search_flights", "args": {"to": "JFK"}},
        {"name": "book_flight", "args": {"id": "UA1"}},
    ]
    assert made.scorers[0].scorer.score(_run(9)).label == "pass"
    assert made.scorers[0].scorer.score(_run(9, to="LAX")).label == "fail"


def test_a_run_made_an_expectation_matches_its_agent_and_request(scored: Path) -> None:
    (run,) = run_by_span(scored, f"{1:032x}")
    built = expectation_from_run(run, mode="unordered", args_mode="ignore")
    document = yaml.safe_load(built.yaml)["expectations"][0]
    assert document["match"] == {"agent": "travel", "input": {"equals": "Book SFO to JFK"}}
    assert parse_expectation(document).scorers[0].spec["mode"] == "unordered"
    agent_only = expectation_from_run(run, match_input=False).expectation
    assert agent_only.match.input is None


def test_from_run_prints_writes_and_applies_the_expectation(scored: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    trace = f"{1:032x}"
    printed = runner.invoke(main, ["expectations", "from-run", trace, "--scores", str(scored)])
    assert printed.exit_code == 0, printed.output
    assert yaml.safe_load(printed.stdout)["expectations"][0]["name"] == f"from-run.travel.{trace[:8]}"
    out = tmp_path / "made.yaml"
    written = runner.invoke(main, ["expectations", "from-run", trace, "--scores", str(scored), "--write", str(out)])
    assert written.exit_code == 0, written.output
    assert yaml.safe_load(out.read_text())["expectations"][0]["scorers"][0]["mode"] == "strict"
    reg = tmp_path / "other-registry.db"
    args = ["expectations", "from-run", trace.upper(), "--scores", str(scored), "--apply", "--db", str(reg)]
    applied = runner.invoke(main, [*args, "--name", "cli.made", "--mode", "exact"])
    assert applied.exit_code == 0, applied.output
    assert "cli.made created" in applied.stdout
    missing = runner.invoke(main, ["expectations", "from-run", "f" * 32, "--scores", str(scored)])
    assert missing.exit_code == 1
    assert "no run of trace" in missing.output


def test_hostile_values_are_escaped_in_every_view(tmp_path: Path, registry: Registry) -> None:
    hostile = '"><script>alert(1)</script><img src=x onerror=alert(2)>'
    expectation = registry.put({**TRAVEL, "match": {"agent": hostile}})
    store = ScoreStore(ScoreStoreConfig(path=str(tmp_path / "scores.db"), write_interval_ms=10))
    calls = (ToolCall(name=hostile, args={hostile: hostile}, args_state="value"),)
    run = AgentRun(
        trace_id="a" * 32,
        span_id="b" * 16,
        agent_name=hostile,
        input=hostile,
        calls=calls,
        attributes={hostile: hostile},  # offered as a `match` selector on the run's page
        resource={"service.name": hostile},
    )
    _score(store, expectation, run)
    assert store.flush(5)
    store.close()
    server = _serve(tmp_path / "scores.db", registry)
    try:
        pages = [
            _get(server, path)[2] for path in ("/", "/?" + urlencode({"agent": hostile}), "/run/1", "/expectations")
        ]
    finally:
        server.stop()
    for html in pages:
        assert "<script>alert" not in html
        assert "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages[2]
    assert pages[2].count('name=match_attribute value="&quot;&gt;&lt;script&gt;alert(1)') == 1  # the span attribute
    assert pages[1].count("&lt;script&gt;alert(1)") >= 2  # the filtered list holds the run, the form its agent


@pytest.mark.integration
def test_toolscore_ui_serves_the_page_on_a_store_alone(scored: Path, tmp_path: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "toolscore.collector.cli", "ui", "--db", str(scored)]
    with subprocess.Popen(
        [*command, "--endpoint", f"127.0.0.1:{port}", "--registry", str(tmp_path / "registry.db")],
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            assert f"the runs page on http://127.0.0.1:{port}/" in line, line
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", "/run/2")
            response = conn.getresponse()
            page = response.read().decode()
            conn.close()
        finally:
            proc.terminate()
            proc.wait(10)
    assert response.status == 200
    assert "wrong args" in page  # the diff, from the registry given
    missing = CliRunner().invoke(main, ["ui", "--db", str(tmp_path / "none.db")])
    assert missing.exit_code == 1
    assert "no score store at" in missing.output


def _attributed(tmp_path: Path, registry: Registry) -> Path:
    """A store with one run (1) of agent travel carrying span attribute `tenant` and resource `service.name`,
    scored against an expectation whose second scorer (`sample_rate` 0) never runs."""
    expectation = registry.put(
        {**TRAVEL, "scorers": [*TRAVEL["scorers"], {**TRAVEL["scorers"][0], "sample_rate": 0, "name": "costly"}]}
    )
    store = ScoreStore(ScoreStoreConfig(path=str(tmp_path / "scores.db"), write_interval_ms=10))
    run = _run(1).model_copy(update={"attributes": {"tenant": "acme"}, "resource": {"service.name": "travel-svc"}})
    store.record(run, expectation, expectation.scorers[0].scorer.score(run))
    assert store.close()
    return tmp_path / "scores.db"


def test_a_run_with_a_sampled_out_scorer_is_flagged_sampled(tmp_path: Path, registry: Registry) -> None:
    server = _serve(_attributed(tmp_path, registry), registry)
    try:
        _, _, listed = _get(server, "/")
        _, _, one = _get(server, "/run/1")
    finally:
        server.stop()
    assert re.search(r'<span class="flag sampled" title="[^"]*travel.book v1 / costly \(sample_rate 0\)', listed)
    assert "sampled: not scored by (sampled out): travel.book v1 / costly (sample_rate 0)" in one


def test_a_run_made_an_expectation_can_match_a_chosen_attribute(tmp_path: Path, registry: Registry) -> None:
    (run,) = run_by_span(_attributed(tmp_path, registry), f"{1:032x}")
    built = expectation_from_run(run, match_input=False, match_attributes=("tenant", "service.name"))
    document = yaml.safe_load(built.yaml)["expectations"][0]
    assert document["match"] == {
        "agent": "travel",
        "attributes": {"tenant": {"equals": "acme"}},
        "service": {"equals": "travel-svc"},
    }
    same = _run(5).model_copy(update={"attributes": {"tenant": "acme"}, "resource": {"service.name": "travel-svc"}})
    assert matches(built.expectation.match, same)
    assert not matches(built.expectation.match, same.model_copy(update={"attributes": {"tenant": "other"}}))
    baggage = same.model_copy(update={"attributes": {"baggage.tenant": "acme"}})
    assert matches(built.expectation.match, baggage)  # read as the matcher reads it
    with pytest.raises(ValueError, match=r"no attribute 'region' to match on \(it has: tenant, service.name\)"):
        expectation_from_run(run, match_attributes=("region",))


def test_the_page_previews_and_writes_an_expectation_matching_a_chosen_attribute(
    tmp_path: Path, registry: Registry
) -> None:
    server = _serve(_attributed(tmp_path, registry), registry)
    try:
        _, _, form = _get(server, "/run/1")
        assert 'name=match_attribute value="tenant"' in form
        assert 'name=match_attribute value="service.name"' in form
        _, _, preview = _get(server, "/run/1/expect?name=ui.tenant&mode=strict&args_mode=subset&match_attribute=tenant")
        shown = re.search(r'<pre id="preview">(.*?)</pre>', preview, re.S)
        assert shown is not None
        assert yaml.safe_load(html_text(shown.group(1)))["expectations"][0]["match"] == {
            "agent": "travel",
            "attributes": {"tenant": {"equals": "acme"}},
        }
        assert 'type=hidden name=match_attribute value="tenant"' in preview
        csrf = re.search(r'name=csrf value="([^"]+)"', preview)
        assert csrf is not None
        form_fields = urlencode(
            [
                ("csrf", csrf.group(1)),
                ("name", "ui.tenant"),
                ("mode", "strict"),
                ("args_mode", "subset"),
                ("match_input", "0"),
                ("match_attribute", "tenant"),
            ]
        )
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("POST", "/run/1/expect", form_fields, {"content-type": "application/x-www-form-urlencoded"})
        assert conn.getresponse().status == 303
        conn.close()
    finally:
        server.stop()
    assert registry.get("ui.tenant").match.attributes["tenant"].value == "acme"


def test_from_run_matches_the_attributes_given(tmp_path: Path, registry: Registry) -> None:
    scores = _attributed(tmp_path, registry)
    args = ["expectations", "from-run", f"{1:032x}", "--scores", str(scores), "--no-match-input"]
    printed = CliRunner().invoke(main, [*args, "--match-attribute", "service.name", "--match-attribute", "tenant"])
    assert printed.exit_code == 0, printed.output
    assert yaml.safe_load(printed.stdout)["expectations"][0]["match"] == {
        "agent": "travel",
        "attributes": {"tenant": {"equals": "acme"}},
        "service": {"equals": "travel-svc"},
    }
    missing = CliRunner().invoke(main, [*args, "--match-attribute", "region"])
    assert missing.exit_code == 1
    assert "no attribute 'region'" in missing.output


def html_text(text: str) -> str:
    import html

    return html.unescape(text)


def test_the_expectations_view_counts_runs_passed_with_their_trend_last_failure_and_history(
    tmp_path: Path, registry: Registry
) -> None:
    """Run 1 passes both scorers, run 2 fails one of two: half the runs passed (the scorer pass rate is 3/4)."""
    two = {**TRAVEL, "scorers": [*TRAVEL["scorers"], {"type": "tool_selection", "expected_tool": "book_flight"}]}
    registry.put(TRAVEL)
    expectation = registry.put(two)
    store = ScoreStore(ScoreStoreConfig(path=str(tmp_path / "scores.db"), write_interval_ms=10))
    _score(store, expectation, _run(1))
    _score(store, expectation, _run(2, to="LAX"))
    assert store.close()
    server = _serve(tmp_path / "scores.db", registry)
    try:
        pages = {window: _get(server, f"/expectations?window={window}")[2] for window in ("1h", "1d", "7d")}
        _, _, history = _get(server, "/expectations/travel.book")
    finally:
        server.stop()
    failing = runs_page(tmp_path / "scores.db")[0].row_id
    for window, html in pages.items():
        row = re.search(r"<tr><td><code>travel.book</code></td>(.*?)</tr>", html, re.S)
        assert row is not None, window
        cells = re.findall(r"<td>(.*?)</td>", row.group(1), re.S)
        assert re.sub(r"<[^>]+>", "", cells[1]) == "2"  # runs
        assert cells[2] == "50%"  # runs passed / runs
        assert cells[3] == "0.750"  # mean score: 1, 1, 0, 1
        assert cells[4].count('class="ok"') == 1  # one slice scored, half of it passing
        assert f'href="/run/{failing}"' in cells[5]
        assert f"<b>{window}</b>" in html
    assert re.search(r"<h2>v2 .*?</h2>.*<h2>v1 ", history, re.S)  # newest first
    assert "expected_tool: book_flight" in history


def test_a_run_breaking_a_policy_shows_the_broken_rule_under_its_call(tmp_path: Path, registry: Registry) -> None:
    policy = {
        "name": "travel.policy",
        "match": {"agent": "travel"},
        "scorers": [{"type": "tool_policy", "before": [["confirm", "book_flight"]]}],
    }
    expectation = registry.put(policy)
    store = ScoreStore(ScoreStoreConfig(path=str(tmp_path / "scores.db"), write_interval_ms=10))
    _score(store, expectation, _run(1))  # books without confirming
    assert store.close()
    server = _serve(tmp_path / "scores.db", registry)
    try:
        _, _, html = _get(server, "/run/1")
    finally:
        server.stop()
    diff = re.search(r'<table class="diff">.*?</table>', html, re.S)
    assert diff is not None
    broken = re.findall(r"<tr class=bad>(.*?)</tr>", diff.group(0), re.S)
    assert len(broken) == 1
    assert "book_flight" in broken[0]
    assert "before" in broken[0]
    assert "confirm" in broken[0]
