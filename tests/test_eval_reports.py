"""`run_eval` and its reports: golden summaries, JUnit structure, JSON round trip, LLM judges under the budget.

Golden files are compared whole; regenerate them with `TOOLSCORE_REGEN_GOLDEN=1` after a deliberate change
and review the diff.
"""

from __future__ import annotations

import io
import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import xmlschema
from rich.console import Console

from tests.openai_server import OpenAIServer, Reply
from toolscore.collector.evaluate import EvalResult, run_eval
from toolscore.collector.evaluate.report_json import json_report
from toolscore.collector.evaluate.report_junit import junit_xml
from toolscore.collector.evaluate.report_markdown import markdown_report
from toolscore.collector.evaluate.report_text import print_report
from toolscore.collector.pipeline import JudgeBudgetConfig

ROOT = Path(__file__).parent.parent
TRACES = "tests/testdata/traces"
EVAL_TRACES = [f"{TRACES}/{framework}" for framework in ("openai-agents", "pydantic-ai", "vercel-ai")]
"""The captures the eval expectations and golden reports were written for (see test_eval_cli)."""
EVAL = ROOT / "tests" / "testdata" / "eval"
SCHEMA = xmlschema.XMLSchema(ROOT / "tests" / "testdata" / "junit" / "junit.xsd")


@pytest.fixture
def failing(monkeypatch: pytest.MonkeyPatch) -> EvalResult:
    monkeypatch.chdir(ROOT)  # relative paths, so the reports name files as a CI job would
    return run_eval(EVAL_TRACES, ["tests/testdata/eval/fail"])


def golden(name: str, text: str) -> str:
    path = EVAL / "golden" / name
    if os.environ.get("TOOLSCORE_REGEN_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return path.read_text(encoding="utf-8")


def console_text(result: EvalResult, **options: Any) -> str:
    out = io.StringIO()
    print_report(result, Console(file=out, width=160, color_system=None), **options)
    return out.getvalue()


def test_console_summary_matches_the_golden_file(failing: EvalResult) -> None:
    text = console_text(failing)
    assert text == golden("fail_summary.txt", text)


def test_markdown_summary_matches_the_golden_file(failing: EvalResult) -> None:
    text = markdown_report(failing)
    assert text == golden("fail_summary.md", text)


def test_max_failures_counts_the_rest(failing: EvalResult) -> None:
    text = console_text(failing, max_failures=1)
    assert text.count("\nFAIL research.sequence") == 1
    assert "... and 2 more failing run(s) (see --junit or --json)" in text


def test_junit_has_a_suite_per_expectation_and_the_diff_in_each_failure(failing: EvalResult) -> None:
    document = junit_xml(failing)
    SCHEMA.validate(document)
    root = ET.fromstring(document)
    suites = {suite.get("name"): suite for suite in root.iter("testsuite")}
    assert sorted(suites) == ["research.sequence", "travel.only-flights", "weather.single-call"]
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("6", "3", "0")
    research = suites["research.sequence"]
    props = {p.get("name"): p.get("value") for p in research.iter("property")}
    assert props == {
        "matched": "2",
        "pass_rate": "0.0%",
        "min_pass_rate": "100.0%",
        "mean_score": "0.300",
        "meets_threshold": "false",
        "result": "FAIL",
    }
    case = research.find("testcase")
    assert case is not None
    assert case.get("classname") == "toolscore.research.sequence"
    assert case.get("name") == (
        'research_agent "Research OTel tool spans" trace=5bb584929dafe6bead21914625ee8c4c span=8dee318d2b7087bd'
    )  # what was asked names the case
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("type") == "trajectory"
    assert '✗ wrong call  2. fetch_page(url="https://example.com/a")' in (failure.text or "")
    assert "pydantic-ai/b_sequential.json" in (case.findtext("system-out") or "")
    assert all(c.find("failure") is None for c in suites["weather.single-call"].iter("testcase"))


def test_json_report_round_trips_into_the_result(failing: EvalResult) -> None:
    data = json.loads(json_report(failing))
    assert data.pop("exit_code") == 1
    assert EvalResult.model_validate(data) == failing
    (f1,) = [r for r in data["results"] if r["expectation"] == "travel.only-flights"]
    assert [row["status"] for row in f1["scorers"][0]["diff"]["rows"]] == ["ok", "extra", "extra", "wrong_args"]
    assert f1["scorers"][0]["details"]["summary"].startswith("Accuracy Score: 33.3%")


def test_expectation_with_no_runs_is_a_skipped_test_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = run_eval(EVAL_TRACES, ["tests/testdata/eval/partial"], min_pass_rate=0.5)
    root = ET.fromstring(junit_xml(result))
    (suite,) = [s for s in root.iter("testsuite") if s.get("name") == "billing.refund"]
    assert (suite.get("tests"), suite.get("skipped"), suite.get("failures")) == ("1", "1", "0")
    required = run_eval(EVAL_TRACES, ["tests/testdata/eval/partial"], min_pass_rate=0.5, require_runs=True)
    (suite,) = [s for s in ET.fromstring(junit_xml(required)).iter("testsuite") if s.get("name") == "billing.refund"]
    assert suite.get("failures") == "1"


HINT = "(use --require-runs to fail on missing runs)"


def unmatched_expectations(tmp_path: Path) -> Path:
    docs = [
        {"name": name, "match": {"agent": "nobody"}, "scorers": [{"type": "tool_selection", "expected_tool": "x"}]}
        for name in ("first", "second")
    ]
    path = tmp_path / "unmatched.json"
    path.write_text(json.dumps(docs))
    return path


def test_a_pass_with_no_scored_run_says_so_in_every_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = run_eval(EVAL_TRACES, [unmatched_expectations(tmp_path)], allow_empty=True)
    said = f"0 of 2 expectations had scored runs; none failed {HINT}"
    assert result.exit_code == 0
    assert console_text(result).splitlines()[-1] == f"PASS: {said}"
    assert markdown_report(result).splitlines()[0] == f"### ⚠️ toolscore eval: {said}"
    document = junit_xml(result)
    SCHEMA.validate(document)
    for suite in ET.fromstring(document).iter("testsuite"):
        assert {p.get("name"): p.get("value") for p in suite.iter("property")}["result"] == "no runs"
        skipped = suite.find("testcase/skipped")
        assert skipped is not None
        assert (
            skipped.get("message") == f"no run in the traces matched this expectation; not counted as a failure {HINT}"
        )


@pytest.mark.parametrize(
    ("min_pass_rate", "verdict"),
    [
        (0.5, f"PASS: 1 of 2 expectations had scored runs; none failed {HINT}"),
        (1.0, f"FAIL: 1 of 2 expectations below threshold; 1 had no scored runs {HINT}"),
    ],
)
def test_expectations_without_scored_runs_are_counted_beside_the_others(
    monkeypatch: pytest.MonkeyPatch, min_pass_rate: float, verdict: str
) -> None:
    monkeypatch.chdir(ROOT)
    result = run_eval(EVAL_TRACES, ["tests/testdata/eval/partial"], min_pass_rate=min_pass_rate)
    assert console_text(result).splitlines()[-1] == verdict
    assert markdown_report(result).splitlines()[0].endswith(verdict.split(": ", 1)[1])


def test_every_expectation_met_still_says_all(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = run_eval(EVAL_TRACES, ["tests/testdata/eval/pass"])
    assert console_text(result).splitlines()[-1] == "PASS: all 5 expectations met"
    assert markdown_report(result).startswith("### ✅ toolscore eval: all 5 expectations met\n")


def judge_expectations(tmp_path: Path, server: OpenAIServer) -> Path:
    judge = {
        "type": "llm_judge",
        "model": "openai/judge-test",
        "api_base": server.base_url,
        "api_key": "test",
        "max_retries": 0,
        "timeout_s": 5.0,
        "threshold": 0.5,
    }
    doc = {"name": "weather.judged", "match": {"agent": "weather_agent"}, "scorers": [judge]}
    path = tmp_path / "judged.json"
    path.write_text(json.dumps([doc]))
    return path


def verdict(name: str) -> Reply:
    evaluation = {"call": 1, "tool_called": name, "was_appropriate": True, "reasoning": "asked for"}
    return Reply.json({"evaluations": [evaluation], "missing_tools": [], "no_tool_appropriate": None, "reason": "ok"})


CAPTURE = ROOT / TRACES / "pydantic-ai" / "a_single_tool.json"


def test_markdown_shows_argument_text_as_text_not_html(tmp_path: Path) -> None:
    """Arguments (recorded or expected) are arbitrary text: in a PR comment `</details>` in one closed the
    failure's fold early and `<b>` turned bold; in a code span they must stay as written."""
    city = "</details> <b>Rome</b> & co"
    scorer = {"type": "trajectory", "expected": [{"name": "get_weather", "args": {"city": city}}]}
    path = tmp_path / "html.json"
    path.write_text(json.dumps([{"name": "weather.html", "match": {"agent": "weather_agent"}, "scorers": [scorer]}]))
    text = markdown_report(run_eval([CAPTURE], [path]))
    assert re.sub("`[^`]*`", "", text).count("</details>") == 1  # the fold's own, outside code spans
    assert 'city: expected "&lt;/details&gt; &lt;b&gt;Rome&lt;/b&gt; &amp; co", got "Paris"' in text
    assert f'`1. get_weather(city="{city}")`' in text
    assert f"in <code>{CAPTURE}</code></summary>" in text


def test_llm_judge_is_skipped_without_judge(tmp_path: Path, openai_server: OpenAIServer) -> None:
    result = run_eval([CAPTURE], [judge_expectations(tmp_path, openai_server)])
    (exp,) = result.expectations
    assert (exp.matched, exp.skipped, exp.pass_rate, exp.ok) == (1, 1, None, True)
    assert result.results[0].scorers[0].status == "skipped"
    assert openai_server.requests == []
    case = ET.fromstring(junit_xml(result)).find("testsuite/testcase")
    assert case is not None
    assert case.find("skipped") is not None


def test_llm_judge_runs_with_a_judge_budget(tmp_path: Path, openai_server: OpenAIServer) -> None:
    openai_server.push(verdict("get_weather"))
    result = run_eval([CAPTURE], [judge_expectations(tmp_path, openai_server)], judge=JudgeBudgetConfig())
    (run,) = result.results
    assert (run.status, run.scorers[0].status, run.scorers[0].value) == ("pass", "pass", 1.0)
    assert len(openai_server.requests) == 1
    assert result.ok


def test_llm_judge_over_budget_is_an_error_not_a_score(tmp_path: Path, openai_server: OpenAIServer) -> None:
    budget = JudgeBudgetConfig(calls_per_minute=0)
    result = run_eval([CAPTURE], [judge_expectations(tmp_path, openai_server)], judge=budget)
    (scorer,) = result.results[0].scorers
    assert (scorer.status, scorer.error_type) == ("error", "judge_over_budget")
    assert not result.ok
    assert openai_server.requests == []
    case = ET.fromstring(junit_xml(result)).find("testsuite/testcase")
    assert case is not None
    error = case.find("error")
    assert error is not None
    assert error.get("type") == "judge_over_budget"


class Recorder:
    def __init__(self) -> None:
        self.phases: list[tuple[str, int]] = []
        self.advanced: dict[str, int] = {}

    def phase(self, name: str, total: int) -> None:
        self.phases.append((name, total))
        self.advanced[name] = 0

    def advance(self, n: int = 1) -> None:
        self.advanced[self.phases[-1][0]] += n


def test_progress_is_told_every_file_and_every_run() -> None:
    recorder = Recorder()
    result = run_eval([ROOT / TRACES / "vercel-ai"], [EVAL / "pass"], progress=recorder)
    assert recorder.phases == [("reading traces", 10), ("scoring runs", result.inputs.runs)]
    assert recorder.advanced == {"reading traces": 10, "scoring runs": 6}
