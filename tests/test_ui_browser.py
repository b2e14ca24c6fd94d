"""The runs page in a real headless Chromium (Debian's, installed by .ci/install-chromium, driven by Playwright):
`toolscore serve` scores the demo's runs, and the page shows them, explains a failure, filters, turns a run
into an expectation that scores the next identical run, and renders hostile span content as text.

Screenshots of the three views are written under each test's tmp dir (`runs.png`, `run.png`,
`expectations.png`).
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright

from tests.serve_harness import ServeProcess, free_port, serve_config
from toolscore.collector.cli.demo import send_demo_runs
from toolscore.collector.cli.demo_runs import DEMO_RUNS, DemoCall, DemoRun, make_demo_spans
from toolscore.collector.sqlite_read import connect_read_only

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DEMO = Path(__file__).resolve().parent.parent / "deploy" / "expectations" / "demo.yaml"
RIGHT = next(run for run in DEMO_RUNS if run.title == "right: search, then book")

pytestmark = [
    pytest.mark.integration,  # a toolscore serve and a Chromium per test
    pytest.mark.skipif(
        shutil.which(CHROMIUM) is None, reason="no /usr/bin/chromium: run .ci/install-chromium (make test does)"
    ),
]


class Page:
    """The serve process, its page's URL, and a browser page on it."""

    def __init__(self, serve: ServeProcess, url: str, db: Path, browser: Any) -> None:
        self.serve, self.url, self.db, self.browser = serve, url, db, browser

    def new(self) -> Any:
        page = self.browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(15_000)
        return page


def _stored_runs(db: Path) -> int:
    try:
        conn = connect_read_only(db)
    except sqlite3.Error:
        return 0
    try:
        return int(conn.execute("SELECT count(*) FROM runs").fetchone()[0])
    except sqlite3.Error:
        return 0
    finally:
        conn.close()


def _wait_for_runs(db: Path, count: int, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if db.exists() and _stored_runs(db) >= count:
            return
        time.sleep(0.1)
    raise AssertionError(f"the store has {_stored_runs(db)} runs, not {count}")


def _send(serve: ServeProcess, runs: tuple[DemoRun, ...]) -> list[str]:
    """Export `runs` to the collector; returns their trace ids."""
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    exporter = OTLPSpanExporter(endpoint=serve.grpc_endpoint, insecure=True, timeout=10)
    traces = []
    try:
        for spans in make_demo_spans(runs):
            assert exporter.export(spans) is SpanExportResult.SUCCESS
            traces.append(f"{spans[0].context.trace_id:032x}")
    finally:
        exporter.shutdown()
    return traces


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    tmp = tmp_path_factory.mktemp("ui")
    ui_port = free_port()
    hostile = tmp / "hostile.yaml"  # scores the hostile run, so the store keeps it
    hostile.write_text(
        "expectations:\n  - name: ui.hostile\n    match: {input: {contains: please}}\n"
        "    scorers: [{type: tool_selection, expected_tool: lookup}]\n"
    )
    config = serve_config(
        tmp,
        [DEMO, hostile],
        None,
        telemetry={"enabled": False},
        ui={"endpoint": f"127.0.0.1:{ui_port}", "poll_interval_ms": 300},
    )
    with ServeProcess(config, tmp) as serve:
        serve.wait_ready()
        sent = send_demo_runs(serve.grpc_endpoint)
        _wait_for_runs(tmp / "scores.db", len(sent))
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, args=ARGS, headless=True, chromium_sandbox=False, timeout=60_000
            )
            context_dir = tmp / "chromium-profile"
            context_dir.mkdir()
            try:
                yield Page(serve, f"http://127.0.0.1:{ui_port}/", tmp / "scores.db", browser)
            finally:
                browser.close()
        serve.terminate()


def _rows(page: Any) -> list[dict[str, str]]:
    return [
        {"agent": row.locator("td").nth(1).inner_text(), "request": row.locator("td").nth(2).inner_text()}
        for row in page.locator("#rows tr[data-id]").all()
    ]


def test_the_demo_runs_appear_with_their_requests(site: Page, tmp_path: Path) -> None:
    page = site.new()
    page.goto(site.url)
    rows = _rows(page)
    assert len(rows) >= len(DEMO_RUNS)
    assert {"demo-travel-agent", "demo-weather-agent", "demo-trip-planner"} <= {row["agent"] for row in rows}
    assert RIGHT.prompt in {row["request"] for row in rows}
    assert page.locator("#rows .chip.fail").count() > 0
    assert page.locator("#rows .chip.pass").count() > 0
    page.screenshot(path=str(tmp_path / "runs.png"), full_page=True)
    assert (tmp_path / "runs.png").stat().st_size > 10_000
    assert f"the runs page on {site.url}" in site.serve.log()  # serve's ready line links the page


def test_a_failing_run_shows_the_missing_call_in_its_diff(site: Page, tmp_path: Path) -> None:
    page = site.new()
    page.goto(site.url + "?agent=demo-weather-agent&verdict=fail")
    page.locator("#rows tr.bad a").first.click()
    page.wait_for_url("**/run/*")
    diff = page.locator("table.diff").first
    assert "get_weather" in diff.inner_text()
    missing = diff.locator("tr.bad", has_text="missing")
    assert missing.count() >= 1
    assert '"Tokyo"' in missing.first.inner_text() or '"Paris"' in missing.first.inner_text()
    assert page.locator("h3 .fail").count() >= 1  # the failing scorer's verdict
    page.screenshot(path=str(tmp_path / "run.png"), full_page=True)


def test_the_runs_and_a_run_read_without_javascript(site: Page) -> None:
    context = site.browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.goto(site.url + "?agent=demo-weather-agent&verdict=fail")
        rows = _rows(page)
        assert rows
        assert {row["agent"] for row in rows} == {"demo-weather-agent"}
        page.locator("#rows tr.bad a").first.click()
        page.wait_for_url("**/run/*")
        assert "get_weather" in page.locator("table.diff").first.inner_text()
        assert page.locator("#request").inner_text()
        page.goto(site.url + "expectations")
        assert page.locator("table").count() >= 1
    finally:
        context.close()


def test_the_agent_filter_narrows_the_list(site: Page) -> None:
    page = site.new()
    page.goto(site.url)
    everyone = _rows(page)
    page.select_option("select[name=agent]", "demo-weather-agent")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**agent=demo-weather-agent**")
    narrowed = _rows(page)
    assert narrowed
    assert len(narrowed) < len(everyone)
    assert {row["agent"] for row in narrowed} == {"demo-weather-agent"}


def test_a_run_made_an_expectation_scores_the_next_identical_run_as_pass(site: Page, tmp_path: Path) -> None:
    page = site.new()
    page.goto(site.url + "?agent=demo-travel-agent")
    page.locator("#rows tr", has_text=RIGHT.prompt).filter(has_not=page.locator(".chip.fail")).first.locator(
        "a"
    ).click()
    page.wait_for_url("**/run/*")
    page.fill("#from-run input[name=name]", "ui.travel.right-booking")
    page.select_option("#from-run select[name=mode]", "strict")
    page.check('#match-attributes input[value="service.name"]')  # the run's resource: matched under `service`
    page.click("#from-run button[type=submit]")
    preview = page.locator("#preview").inner_text()
    assert "service:\n      equals: toolscore-demo" in preview, preview
    assert "name: ui.travel.right-booking" in preview
    assert "search_flights" in preview
    assert "mode: strict" in preview
    page.click("#apply")
    page.wait_for_url("**/expectations**")
    assert "ui.travel.right-booking" in page.locator("main").inner_text()

    before = _stored_runs(site.db)
    (trace,) = _send(site.serve, (RIGHT,))
    _wait_for_runs(site.db, before + 1)
    page.goto(site.url + "?expectation=ui.travel.right-booking")
    rows = page.locator("#rows tr[data-id]")
    rows.first.wait_for()
    assert rows.count() == 1  # the run it was made from was scored before it existed
    chip = rows.first.locator('.chip[title^="ui.travel.right-booking v1 / trajectory"]')
    assert chip.get_attribute("class") == "chip pass", rows.first.inner_html()
    page.goto(site.url + "expectations")
    assert "ui.travel.right-booking" in page.locator("table").inner_text()
    page.screenshot(path=str(tmp_path / "expectations.png"), full_page=True)
    assert trace  # the identical run's trace was exported


HOSTILE_TOOL = '<img src=x onerror="window.__xss=1">'
HOSTILE_ARG = '"><script>window.__xss=2</script>'
HOSTILE_REQUEST = "<b id=bold>bold</b><script>window.__xss=3</script> please"
HOSTILE_AGENT = "agent\"><svg onload='window.__xss=4'>"


def test_hostile_tool_names_arguments_and_requests_render_as_text(site: Page, tmp_path: Path) -> None:
    hostile = DemoRun(
        "hostile", HOSTILE_AGENT, HOSTILE_REQUEST, ((DemoCall(HOSTILE_TOOL, {"q": HOSTILE_ARG, HOSTILE_ARG: 1}),),)
    )
    page = site.new()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(site.url)  # open before the run is sent: the live list shows it without a reload
    assert page.locator("#rows tr[data-id]", has_text="please").count() == 0
    _send(site.serve, (hostile,))
    row = page.locator("#rows tr[data-id]", has_text="please").first
    row.wait_for(timeout=20_000)
    assert "live: updated" in page.locator("#live").inner_text()  # the script ran, under the page's CSP
    assert HOSTILE_REQUEST.split("\n", maxsplit=1)[0] in row.inner_text()
    assert HOSTILE_TOOL in row.inner_text()
    assert HOSTILE_AGENT in row.inner_text()
    row.locator("a").click()
    page.wait_for_url("**/run/*")
    assert page.locator("#request").inner_text() == HOSTILE_REQUEST
    assert HOSTILE_ARG in page.locator("main").inner_text()
    assert page.locator("#bold").count() == 0
    assert page.locator("main img, main svg[onload]").count() == 0
    assert page.evaluate("window.__xss === undefined")
    assert not dialogs
    page.goto(site.url + "?agent=" + HOSTILE_AGENT.replace('"', "%22").replace("'", "%27").replace(">", "%3E"))
    assert page.evaluate("window.__xss === undefined")
    page.screenshot(path=str(tmp_path / "hostile.png"), full_page=True)
