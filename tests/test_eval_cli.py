"""`toolscore eval` as CI runs it: a real subprocess over captures of real frameworks, exit statuses, reports."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from toolscore.collector.evaluate.inputs import NOT_TRACES_HINT
from toolscore.collector.extract import rebuild_runs
from toolscore.collector.sources import read_trace_file

ROOT = Path(__file__).parent.parent
TRACES = Path("tests/testdata/traces")
EVAL_FRAMEWORKS = ("openai-agents", "pydantic-ai", "vercel-ai")
"""The captures the eval expectations and golden reports were written for: a fixed input, so that a capture added
for extraction's sake changes no report."""
TRACE_ARGS = [arg for framework in EVAL_FRAMEWORKS for arg in ("-t", TRACES / framework)]
EVAL = Path("tests/testdata/eval")
JUNIT_XSD = ROOT / "tests" / "testdata" / "junit" / "junit.xsd"


def run_eval_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolscore.collector.cli", "eval", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "160"},
    )


def test_expectations_every_capture_meets_exit_0() -> None:
    proc = run_eval_cli(*TRACE_ARGS, "--expectations", EVAL / "pass")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS: all 5 expectations met" in proc.stdout
    assert "18 runs" in proc.stdout
    assert "Runs that matched no expectation: 6 (list them with --show-unmatched)" in proc.stdout


def test_a_file_whose_expectations_matched_no_run_fails_naming_the_agents_seen(tmp_path: Path) -> None:
    expectations = tmp_path / "typo.yaml"
    expectations.write_text(
        "expectations:\n"
        "  - {name: a, match: {agent: weather-agnet}, scorers: [{type: tool_selection, expected_tool: x}]}\n"
    )
    proc = run_eval_cli(*TRACE_ARGS, "--expectations", expectations)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "FAIL: nothing checked: no run matched the expectations of 1 file(s) (--allow-empty accepts it)"
    assert lines[-2].startswith(f"NOTHING CHECKED {expectations}: no run matched its expectations; runs seen: agent ")
    assert "agent 'weather_agent' (1)" in lines[-2] or "'weather-agent' (1)" in lines[-2]


def test_no_run_matched_exits_0_with_allow_empty_without_claiming_the_expectations_met(tmp_path: Path) -> None:
    expectations = tmp_path / "nobody.yaml"
    expectations.write_text(
        "expectations:\n"
        "  - {name: a, match: {agent: nobody}, scorers: [{type: tool_selection, expected_tool: x}]}\n"
        "  - {name: b, match: {agent: nobody}, scorers: [{type: tool_selection, expected_tool: x}]}\n"
    )
    proc = run_eval_cli(*TRACE_ARGS, "--expectations", expectations, "--allow-empty")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == (
        "PASS: 0 of 2 expectations had scored runs; none failed (use --require-runs to fail on missing runs)"
    )
    required = run_eval_cli(*TRACE_ARGS, "--expectations", expectations, "--require-runs", "--allow-empty")
    assert required.returncode == 1
    assert required.stdout.splitlines()[-1] == "FAIL: 2 of 2 expectations below threshold"


def test_failing_expectations_exit_1_with_the_call_diff() -> None:
    proc = run_eval_cli(*TRACE_ARGS, "--expectations", EVAL / "fail")
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert "FAIL: 2 of 3 expectations below threshold" in out
    assert "FAIL research.sequence: research_agent" in out
    assert "trajectory mode=exact, by position:" in out
    assert '✗ wrong call  3. search_docs(query="tool call ordering", limit=3)  3. fetch_page(' in out
    assert '✗ missing     5. send_email(to="team@example.com")' in out
    extra = re.search(r"✗ extra +- +(\d\. get_weather.*)", out)
    assert extra is not None
    assert extra.group(1) == '2. get_weather(city="New York")'


def test_shell_glob_after_traces_is_read_as_more_trace_files() -> None:
    files = sorted((ROOT / TRACES / "pydantic-ai").glob("*.pb"))
    proc = run_eval_cli("--expectations", EVAL / "pass", "--traces", *files)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "5 trace file(s)" in proc.stdout


def test_show_unmatched_lists_each_run_with_its_file_and_calls() -> None:
    proc = run_eval_cli("-t", TRACES / "vercel-ai", "-e", EVAL / "pass", "--show-unmatched")
    assert proc.returncode == 0
    assert 'triage-agent "Where is order A-1?" (trace cde65d6f…' in proc.stdout  # named by what was asked
    assert "g_two_runs_one_trace.json: lookup_order" in proc.stdout


def test_invalid_expectation_exits_2_naming_file_line_and_field() -> None:
    proc = run_eval_cli(*TRACE_ARGS, "-e", EVAL / "invalid" / "bad_scorer.yaml")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"toolscore eval: {EVAL / 'invalid' / 'bad_scorer.yaml'}:5: scorers[0].mode: ")
    assert proc.stdout == ""


def test_duplicate_expectation_names_exit_2() -> None:
    proc = run_eval_cli(*TRACE_ARGS, "-e", EVAL / "invalid" / "duplicate.yaml")
    assert proc.returncode == 2
    assert "duplicate name 'same'" in proc.stderr


def test_missing_expectations_path_exits_2() -> None:
    proc = run_eval_cli(*TRACE_ARGS, "-e", "no/such/dir")
    assert proc.returncode == 2
    assert "toolscore eval: no/such/dir: no such file or directory" in proc.stderr


def test_trace_directory_without_trace_files_exits_2_rather_than_passing(tmp_path: Path) -> None:
    """A wrong path, or a test job that recorded nothing, would otherwise pass with no run scored."""
    (tmp_path / "notes.txt").write_text("not a trace")
    proc = run_eval_cli("-t", tmp_path, "-e", EVAL / "pass")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert f"toolscore eval: {tmp_path}: no trace files found (looked for *.json, *.jsonl," in proc.stderr


def test_unreadable_trace_files_exit_2_naming_every_one(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.pb"
    garbage.write_bytes(b"\x0a\xff\xff\xff\xff\x0f")
    proc = run_eval_cli("-t", garbage, "-t", tmp_path / "absent.json", "-e", EVAL / "pass")
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert lines[0].startswith(f"toolscore eval: {garbage}: byte ")
    assert lines[1] == f"toolscore eval: {tmp_path / 'absent.json'}: No such file or directory"


def test_json_that_is_not_a_trace_export_exits_2_named_or_found_in_a_directory(tmp_path: Path) -> None:
    """Refused in a directory too, not skipped: ground truth kept next to the traces is named, with what to do."""
    (tmp_path / "run.json").write_text((ROOT / TRACES / "vercel-ai" / "a_single_tool.json").read_text())
    truth = tmp_path / "run.truth.json"
    truth.write_text('{"runs": []}')
    other = tmp_path / "other.json"
    other.write_text('{"foo": 1}')
    for given in ([tmp_path], [other]):
        proc = run_eval_cli(*(arg for path in given for arg in ("-t", path)), "-e", EVAL / "pass")
        assert proc.returncode == 2
        assert proc.stdout == ""
        lines = proc.stderr.splitlines()
        assert f"toolscore eval: {other}: not an OTLP trace export: a JSON object with the keys 'foo', " in lines[0]
        assert (f"toolscore eval: {truth}: not an OTLP trace export: " in lines[1]) is (given == [tmp_path])
        assert lines[-1] == f"toolscore eval: {NOT_TRACES_HINT}"


def test_an_empty_trace_export_is_read_as_no_runs(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text('{"resourceSpans": []}')
    proc = run_eval_cli("-t", empty, "-t", TRACES / "vercel-ai", "-e", EVAL / "pass")
    assert proc.returncode == 0, proc.stderr
    assert "toolscore eval: 11 trace file(s), " in proc.stdout


def test_collector_file_exporter_json_lines_read_like_the_documents(tmp_path: Path) -> None:
    """The Collector's file exporter writes one ExportTraceServiceRequest per line."""
    documents = sorted((ROOT / TRACES / "pydantic-ai").glob("*.json"))
    lines = [json.dumps(json.loads(p.read_text())) for p in documents]
    export = tmp_path / "traces.jsonl"
    export.write_text("\n".join(lines) + "\n")
    proc = run_eval_cli("-t", export, "-e", EVAL / "fail", "--json", tmp_path / "out.json")
    assert proc.returncode == 1
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["inputs"]["runs"] == 6
    by_name = {exp["name"]: exp for exp in data["expectations"]}
    assert (by_name["weather.single-call"]["passed"], by_name["research.sequence"]["failed"]) == (1, 1)


def test_bad_line_in_json_lines_exits_2_naming_the_line(tmp_path: Path) -> None:
    doc = json.dumps(json.loads((ROOT / TRACES / "pydantic-ai" / "a_single_tool.json").read_text()))
    export = tmp_path / "traces.jsonl"
    export.write_text(doc + "\n{not json\n" + doc + "\n")
    proc = run_eval_cli("-t", export, "-e", EVAL / "pass")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"toolscore eval: {export}: line 2: ")


def _message_to_json(capture: Path, out: Path) -> Path:
    """The capture's protobuf export as protobuf's own JSON mapping writes it (`MessageToJson`: base64 ids)."""
    request = ExportTraceServiceRequest.FromString(capture.read_bytes())
    out.write_text(json_format.MessageToJson(request))
    return out


def test_base64_ids_as_message_to_json_writes_them_are_read_and_said(tmp_path: Path) -> None:
    capture = ROOT / TRACES / "pydantic-ai" / "a_single_tool.pb"
    export = _message_to_json(capture, tmp_path / "message_to_json.json")
    assert '"traceId": "' in export.read_text()
    assert not re.search(r'"traceId": "[0-9a-f]{32}"', export.read_text())

    proc = run_eval_cli("-t", export, "-e", EVAL / "pass", "--allow-empty", "--json", tmp_path / "out.json")

    assert proc.returncode == 0, proc.stdout + proc.stderr
    spans = len(read_trace_file(capture))
    assert proc.stdout.splitlines()[0].startswith(
        f"toolscore eval: 1 trace file(s), {spans} spans ({spans} with base64 ids, protobuf's JSON mapping, read "
        "as hex), 1 runs;"
    )
    data = json.loads((tmp_path / "out.json").read_text())
    assert (data["inputs"]["base64_id_spans"], data["inputs"]["runs"]) == (spans, 1)
    assert rebuild_runs(read_trace_file(export)) == rebuild_runs(read_trace_file(capture))


def test_traces_with_no_usable_span_are_bad_input_naming_why(tmp_path: Path) -> None:
    document = (ROOT / TRACES / "pydantic-ai" / "a_single_tool.json").read_text()
    trace_id = json.loads(document)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    export = tmp_path / "short_ids.json"
    export.write_text(document.replace(trace_id, trace_id[:30]))

    proc = run_eval_cli("-t", export, "-e", EVAL / "pass")

    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith(
        "toolscore eval: nothing to evaluate: no usable span in 1 trace file(s): all 4 spans were unusable"
    )
    lenient = run_eval_cli("-t", export, "-e", EVAL / "pass", "--allow-empty")
    assert lenient.returncode == 0, lenient.stdout + lenient.stderr
    lines = lenient.stdout.splitlines()
    assert lines[0].startswith("toolscore eval: 1 trace file(s), 0 spans (4 unusable, skipped), 0 runs;")
    assert re.fullmatch(
        rf"  skipped {re.escape(str(export))}: bad_trace_id: resourceSpans\[0\].scopeSpans\[0\].spans\[0\] .*: "
        rf"traceId '{re.escape(trace_id[:30])}' is not 32 hex digits \(OTLP/JSON\) nor 24 base64 characters "
        r"\(the protobuf JSON mapping\) of a 16-byte id",
        lines[1],
    )


@pytest.mark.parametrize(
    ("name", "content"),
    [("notes.txt", b"hello world\nthis is not otlp\n"), ("agent.py", b"import os\nprint(os.getcwd())\n")],
)
def test_a_file_that_is_not_otlp_at_all_is_bad_input_saying_so(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)

    proc = run_eval_cli("-t", path, "-e", EVAL / "pass")

    assert proc.returncode == 2
    assert proc.stderr.startswith(f"toolscore eval: {path}: not an OTLP export: text that is not JSON (it starts ")
    assert "expected an OTLP export: protobuf (ExportTraceServiceRequest" in proc.stderr


def test_min_pass_rate_sets_how_many_matched_runs_must_pass() -> None:
    strict = run_eval_cli(*TRACE_ARGS, "-e", EVAL / "partial")
    assert strict.returncode == 1
    assert "chat.rome" in strict.stdout
    assert "50.0%" in strict.stdout
    half = run_eval_cli(*TRACE_ARGS, "-e", EVAL / "partial", "--min-pass-rate", "0.5")
    assert half.returncode == 0, half.stdout


def test_require_runs_fails_an_expectation_no_run_matched() -> None:
    lenient = run_eval_cli(*TRACE_ARGS, "-e", EVAL / "partial", "--min-pass-rate", "0.5")
    assert "billing.refund" in lenient.stdout
    assert "no runs" in lenient.stdout
    assert lenient.returncode == 0
    required = run_eval_cli(*TRACE_ARGS, "-e", EVAL / "partial", "--min-pass-rate", "0.5", "--require-runs")
    assert required.returncode == 1
    assert "FAIL (no runs)" in required.stdout


def test_min_pass_rate_out_of_range_is_a_usage_error() -> None:
    proc = run_eval_cli(*TRACE_ARGS, "-e", EVAL / "pass", "--min-pass-rate", "90")
    assert proc.returncode == 2
    assert "--min-pass-rate" in proc.stderr


@pytest.mark.parametrize(("expectations", "code"), [("pass", 0), ("fail", 1)])
def test_reports_are_written_and_junit_validates_against_the_schema(
    tmp_path: Path, expectations: str, code: int
) -> None:
    junit, markdown, out = tmp_path / "junit.xml", tmp_path / "summary.md", tmp_path / "results.json"
    proc = run_eval_cli(*TRACE_ARGS, "-e", EVAL / expectations, "--junit", junit, "--markdown", markdown, "--json", out)
    assert proc.returncode == code, proc.stderr
    xmlschema.XMLSchema(JUNIT_XSD).validate(junit)
    root = ET.parse(junit).getroot()
    data = json.loads(out.read_text())
    assert data["exit_code"] == code
    failed_runs = sum(exp["failed"] for exp in data["expectations"])
    assert int(root.get("failures", "-1")) == failed_runs
    assert int(root.get("tests", "-1")) == len(data["results"])
    assert markdown.read_text().startswith("### ✅" if code == 0 else "### ❌")


def test_unwritable_report_path_exits_2(tmp_path: Path) -> None:
    proc = run_eval_cli(*TRACE_ARGS, "-e", EVAL / "pass", "--junit", tmp_path / "no" / "dir" / "junit.xml")
    assert proc.returncode == 2
    assert "cannot write" in proc.stderr


def test_toolscore_help_lists_eval_without_loading_the_evaluation() -> None:
    code = (
        "import sys; from click.testing import CliRunner; from toolscore.collector.cli import main;"
        "r = CliRunner().invoke(main, ['--help']); assert 'eval' in r.output, r.output;"
        "assert 'toolscore.collector.evaluate' not in sys.modules; assert 'rich' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
