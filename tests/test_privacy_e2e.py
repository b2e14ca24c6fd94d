"""Issue #33's evidence: with masking on, no secret of a run leaves toolscore, and equality rules score the same.

A real `toolscore serve` (subprocess) forwards to a real downstream OTLP receiver, sends its evaluation log
records to a real OTLP logs receiver, writes its score store, and asks a scripted OpenAI-compatible judge on
127.0.0.1; `toolscore eval` writes JUnit, Markdown and JSON. Every output is searched byte for byte. The same
runs without masking are the control: the secrets are there, so the search can fail, and the scores are the
ones masking must keep. The page (`ui`) is searched too: the runs list, each run's view and the YAML preview
of the expectation made from it; and the Prometheus exposition of serve's metrics (never content).
"""

from __future__ import annotations

import json
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.openai_server import OpenAIServer, Reply
from tests.otlp_downstream import TelemetryReceiver
from tests.privacy_runs import MASKING, SECRETS, VALUES, expectation_file, privacy_runs, trace_file
from tests.serve_harness import Downstream, ServeProcess, serve_config
from toolscore.collector.cli import main
from toolscore.collector.serve.scores._query import query_runs

pytestmark = pytest.mark.integration

VERDICT = Reply.json(
    {
        "evaluations": [{"call": 1, "tool_called": "charge", "was_appropriate": True, "reasoning": "asked for"}],
        "missing_tools": [],
        "no_tool_appropriate": None,
        "reason": "ok",
    }
)
SCORES = 6
"""Two runs, three scorers each."""


@dataclass
class Outputs:
    """Every place toolscore wrote to, as bytes, and the scores by (trace id, scorer)."""

    places: dict[str, bytes] = field(default_factory=dict)
    scores: dict[tuple[str, str], float | None] = field(default_factory=dict)
    errors: dict[tuple[str, str], str] = field(default_factory=dict)

    def holding(self, values: tuple[str, ...]) -> dict[str, list[str]]:
        """The places that hold any of `values`, with the ones they hold."""
        found = {place: [v for v in values if v.encode() in data] for place, data in self.places.items()}
        return {place: held for place, held in found.items() if held}


def _serve(tmp_path: Path, privacy: dict[str, Any] | None, judge: OpenAIServer, spans: list[ReadableSpan]) -> Outputs:
    tmp_path.mkdir()
    logs, downstream = TelemetryReceiver(), Downstream()
    env = {"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": logs.endpoint, "OTEL_BLRP_SCHEDULE_DELAY": "50"}
    pipeline: dict[str, Any] = {"settle_ms": 100, "judge": {"timeout_s": 90}}
    if privacy:
        pipeline["extract"] = {"privacy": privacy}
    one_of = (privacy or {}).get("content") != "names_only"
    expectations = [expectation_file(tmp_path, judge.base_url, one_of=one_of)]
    config = serve_config(tmp_path, expectations, downstream, pipeline=pipeline)
    store = tmp_path / "scores.db"
    try:
        with ServeProcess(config, tmp_path, env=env) as process:
            process.wait_ready()
            exporter = OTLPSpanExporter(endpoint=process.grpc_endpoint, insecure=True, timeout=10)
            assert exporter.export(spans) is SpanExportResult.SUCCESS
            exporter.shutdown()
            keys = {(format(s.context.trace_id, "032x"), format(s.context.span_id, "016x")) for s in spans}
            downstream.wait_for(keys)
            deadline = time.monotonic() + 120  # the judge's scores come last
            while time.monotonic() < deadline and (len(logs.log_records()) < SCORES or not store.exists()):
                time.sleep(0.1)
            page = _page(process)
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{process.metrics_port}/metrics", timeout=10).read()
            assert process.terminate() == 0, process.log()
    finally:
        logs.stop()
        downstream.stop()
    out = Outputs()
    out.places["forwarded spans"] = b"".join(r.SerializeToString() for r in downstream.requests)
    out.places["evaluation log records"] = b"".join(r.SerializeToString() for r in logs.log_records())
    out.places["score store"] = b"".join(p.read_bytes() for p in sorted(tmp_path.glob("scores.db*")))
    out.places["serve log"] = (tmp_path / "serve.log").read_bytes()
    out.places["page"] = page
    out.places["metrics"] = metrics
    for run in query_runs(store, limit=10):
        for score in run.scores:
            out.scores[run.trace_id, score.scorer] = score.value
            out.errors[run.trace_id, score.scorer] = f"{score.error_type}: {score.explanation}"
    assert len(out.scores) == SCORES, (out.scores, process.log())
    assert len(logs.log_records()) == SCORES
    return out


def _page(process: ServeProcess) -> bytes:
    """The runs list, every run's view and its "make this run an expectation" preview, as served."""
    base = f"http://{process.config['ui']['endpoint']}"
    pages = [urllib.request.urlopen(f"{base}/", timeout=10).read()]
    for run_id in (1, 2):
        for path in (f"/run/{run_id}", f"/run/{run_id}/expect"):
            with urllib.request.urlopen(base + path, timeout=10) as response:
                assert response.status == 200
                pages.append(response.read())
    return b"".join(pages)


def _eval(
    tmp_path: Path, privacy: dict[str, Any] | None, judge: OpenAIServer, spans: list[ReadableSpan]
) -> tuple[Outputs, int]:
    tmp_path.mkdir()
    traces = trace_file(tmp_path, spans)
    reports = {name: tmp_path / name for name in ("report.xml", "report.md", "report.json")}
    one_of = (privacy or {}).get("content") != "names_only"
    args = ["eval", "-t", str(traces), "-e", str(expectation_file(tmp_path, judge.base_url, one_of=one_of)), "--judge"]
    args += ["--junit", str(reports["report.xml"]), "--markdown", str(reports["report.md"])]
    args += ["--json", str(reports["report.json"]), "--max-failures", "5", "--judge-timeout-s", "90"]
    if privacy is not None:
        settings = tmp_path / "serve.yaml"
        settings.write_text(yaml.safe_dump({"pipeline": {"extract": {"privacy": privacy}}}))
        args += ["--privacy-config", str(settings)]
    result = CliRunner().invoke(main, args)
    out = Outputs({name: path.read_bytes() for name, path in reports.items()})
    out.places["eval summary"] = result.output.encode()
    for run in json.loads(reports["report.json"].read_text())["results"]:
        for scorer in run["scorers"]:
            out.scores[run["run"]["trace_id"], scorer["name"]] = scorer["value"]
    return out, result.exit_code


def _judge_requests(judge: OpenAIServer, since: int) -> bytes:
    return json.dumps(judge.requests[since:], ensure_ascii=False).encode()


def test_masking_keeps_every_secret_out_of_serves_outputs_and_scores_as_without_it(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    openai_server.default = VERDICT
    spans = privacy_runs()
    plain = _serve(tmp_path / "plain", None, openai_server, spans)
    plain.places["judge requests"] = _judge_requests(openai_server, 0)
    asked = len(openai_server.requests)
    masked = _serve(tmp_path / "masked", MASKING, openai_server, spans)
    masked.places["judge requests"] = _judge_requests(openai_server, asked)

    assert set(plain.holding(SECRETS)) >= {"forwarded spans", "score store", "judge requests", "page"}, "the control"
    assert "metrics" not in plain.holding(SECRETS), "metrics never hold content, masked or not"
    assert b'gen_ai_agent_name="payer"' in plain.places["metrics"]  # the scores' series are there
    assert masked.holding(SECRETS) == {}
    assert masked.scores == plain.scores, (masked.errors, plain.errors)
    assert None not in masked.scores.values(), masked.errors
    assert sorted(masked.scores.values()) == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]  # the other card fails equality
    assert b"\xc2\xabmasked:" in masked.places["forwarded spans"]
    assert b"\xc2\xabmasked:" in masked.places["score store"]
    prompts = openai_server.prompts()[asked:]
    assert prompts
    assert all("Masked values:" in prompt and "call 1 argument auth.token" in prompt for prompt in prompts)


def test_masking_keeps_every_secret_out_of_evals_reports_and_scores_as_without_it(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    openai_server.default = VERDICT
    spans = privacy_runs()
    plain, plain_exit = _eval(tmp_path / "plain", None, openai_server, spans)
    plain.places["judge requests"] = _judge_requests(openai_server, 0)
    asked = len(openai_server.requests)
    masked, masked_exit = _eval(tmp_path / "masked", MASKING, openai_server, spans)
    masked.places["judge requests"] = _judge_requests(openai_server, asked)

    assert set(plain.holding(SECRETS)) >= {"report.xml", "report.md", "report.json", "judge requests"}, "the control"
    assert masked.holding(SECRETS) == {}
    assert masked.scores == plain.scores
    assert masked_exit == plain_exit == 1  # the second run fails its expectation either way
    assert len(openai_server.requests) == asked + 2


def test_names_only_leaves_no_argument_value_or_request_text_in_any_output(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    openai_server.default = VERDICT
    names_only = {"content": "names_only", "hash_key": "privacy-test-key"}
    spans = privacy_runs()
    served = _serve(tmp_path / "serve", names_only, openai_server, spans)
    evaluated, _ = _eval(tmp_path / "eval", names_only, openai_server, spans)
    runner = CliRunner()
    extracted = runner.invoke(main, ["extract", str(trace_file(tmp_path, spans)), "--names-only"])
    listed = runner.invoke(main, ["runs", "--db", str(tmp_path / "serve" / "scores.db"), "-o", "json"])
    places = {**served.places, **evaluated.places, "extract": extracted.output.encode(), "runs": listed.output.encode()}

    assert Outputs(places).holding(VALUES) == {}
    assert openai_server.requests == []  # the judge needs the request: it is not asked
    assert '"charge"' in extracted.output
    assert '"holder": null' in extracted.output
    judged = {key: value for key, value in served.scores.items() if key[1] == "llm_judge"}
    assert set(judged.values()) == {None}  # a values_not_kept failure, not a score
    assert b"values_not_kept" in served.places["score store"]
    assert b"arguments compared by keys only" in evaluated.places["report.json"]
