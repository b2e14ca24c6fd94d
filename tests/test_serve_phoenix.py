"""Scores as Phoenix span annotations, checked through a real Arize Phoenix's REST API.

`toolscore serve` forwards the agent's spans to Phoenix over OTLP/gRPC and posts each score as an annotation
on the run span; the sink itself is also driven directly, against the same Phoenix, for what is hard to
arrange through a whole service (a span that never arrives, a score given twice, Phoenix down).
"""

from __future__ import annotations

import http.server
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult

from tests.openai_server import OpenAIServer
from tests.otelcol import Otelcol, compose_config, compose_env
from tests.phoenix import Phoenix
from tests.pipeline_builders import TRAVEL
from tests.serve_demo_checks import DEMO_EXPECTATIONS, sdk_key
from tests.serve_harness import ServeProcess, free_port, serve_config
from tests.test_pipeline_judge import end_run, judged, verdict
from toolscore.collector.cli.demo_runs import make_demo_spans
from toolscore.collector.pipeline.emit import attribute_key
from toolscore.collector.registry import Expectation
from toolscore.collector.serve import PhoenixAnnotations, PhoenixConfig
from toolscore.scorers import AgentRun, Score, ScoreFailure, ToolCall


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    with Phoenix(tmp_path_factory.mktemp("phoenix")) as server:
        server.wait_ready()
        yield server
        server.terminate(15)


class Outcomes:
    """The sink's telemetry, as `toolscore.phoenix.annotations` would count it."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def annotations(self, n: int, outcome: str) -> None:
        with self._lock:
            self.counts[outcome] += n


def sent_span(phoenix: Phoenix, name: str) -> str:
    """A span sent to Phoenix with the real SDK and exporter; its id, once Phoenix has stored it."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(GrpcExporter(endpoint=phoenix.grpc_endpoint, insecure=True)))
    with provider.get_tracer("app").start_as_current_span(name) as span:
        span_id = format(span.get_span_context().span_id, "016x")
    provider.shutdown()
    deadline = time.monotonic() + 20
    while span_id not in phoenix.span_ids() and time.monotonic() < deadline:
        time.sleep(0.1)
    return span_id


def run_on(span_id: str) -> AgentRun:
    return AgentRun(trace_id=os.urandom(16).hex(), span_id=span_id, agent_name="travel", calls=(ToolCall(name="x"),))


EXPECTATION = Expectation.model_validate(TRAVEL)


def score(value: float) -> Score:
    return Score(name="tool_selection", value=value, label="pass" if value >= 0.5 else "fail", explanation=f"v={value}")


def test_serve_writes_each_score_as_an_annotation_on_the_run_span(
    phoenix: Phoenix, openai_server: OpenAIServer, tmp_path: Path
) -> None:
    openai_server.push(verdict("search_flights", "book_flight"))
    expectations = tmp_path / "travel.yaml"
    # timeouts for a loaded machine: the serve process imports litellm on its first judge
    expectations.write_text(yaml.safe_dump({"expectations": [judged(openai_server, timeout_s=60.0)]}))
    config = serve_config(
        tmp_path,
        [expectations],
        None,
        forward={"endpoint": phoenix.grpc_endpoint, "batch_timeout_ms": 20},
        phoenix={"enabled": True, "endpoint": phoenix.url},
        pipeline={"settle_ms": 100, "judge": {"timeout_s": 90.0}},
    )
    with ServeProcess(config, tmp_path) as serve:
        serve.wait_ready()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(GrpcExporter(endpoint=serve.grpc_endpoint, insecure=True)))
        tracer = provider.get_tracer("app")
        with tracer.start_as_current_span("request") as root:
            end_run(tracer)
        provider.shutdown()
        trace_id = format(root.get_span_context().trace_id, "032x")
        deadline = time.monotonic() + 120  # the serve process imports litellm on the first judge: seconds
        names: set[str] = set()
        run_span = ""
        while time.monotonic() < deadline and len(names) < 3:
            spans = phoenix.get("/v1/projects/default/spans", limit=1000)["data"] if phoenix.span_ids() else []
            runs = [s for s in spans if s["name"] == "invoke_agent travel" and s["context"]["trace_id"] == trace_id]
            if runs:
                run_span = runs[0]["context"]["span_id"]
                names = {a["name"] for a in phoenix.annotations([run_span])}
            time.sleep(0.2)
        assert serve.terminate() == 0, serve.log()

    annotations = {a["name"]: a for a in phoenix.annotations([run_span])}
    found = f"run span {run_span or 'not in Phoenix'}, annotations {sorted(annotations)}:\n{serve.log()}"
    assert set(annotations) == {"travel.tool_selection", "travel.trajectory", "travel.llm_judge"}, found
    (run,) = [
        s for s in phoenix.get("/v1/projects/default/spans", limit=1000)["data"] if s["context"]["span_id"] == run_span
    ]
    for scorer in ("tool_selection", "trajectory"):
        annotation = annotations[f"travel.{scorer}"]
        # the annotation says what the forwarded run span's attributes say
        assert annotation["result"]["score"] == run["attributes"][f"toolscore.evaluation.travel.{scorer}.score"]
        assert annotation["result"]["label"] == run["attributes"][f"toolscore.evaluation.travel.{scorer}.label"]
        assert annotation["annotator_kind"] == "CODE"
        assert annotation["metadata"]["toolscore.expectation.name"] == "travel"
    # the judge's verdict can come after the run span went on (litellm loads on first use): it is annotated all the same
    judge = annotations["travel.llm_judge"]
    assert judge["metadata"].get("error.type") is None, judge
    assert (judge["annotator_kind"], judge["result"]["score"], judge["result"]["label"]) == ("LLM", 1.0, "pass")
    assert annotations["travel.tool_selection"]["result"]["label"] == "pass"


def test_an_annotation_whose_span_never_arrives_is_dropped_counted_and_holds_up_no_other(phoenix: Phoenix) -> None:
    arrived = sent_span(phoenix, "invoke_agent travel")
    never = os.urandom(8).hex()
    outcomes = Outcomes()
    sink = PhoenixAnnotations(PhoenixConfig(enabled=True, endpoint=phoenix.url, retry_for_s=1.5), outcomes)
    try:
        sink.record(run_on(never), EXPECTATION, score(1.0))  # first in the batch that Phoenix refuses whole
        sink.record(run_on(arrived), EXPECTATION, score(0.25))
        deadline = time.monotonic() + 1.0  # well inside retry_for_s: not held up by the span that never comes
        while not phoenix.annotations([arrived]) and time.monotonic() < deadline:
            time.sleep(0.05)
        (annotation,) = phoenix.annotations([arrived])
        assert sink.flush(5.0)
    finally:
        sink.close(1.0)
    assert annotation["result"] == {"score": 0.25, "label": "fail", "explanation": "v=0.25"}
    assert annotation["name"] == "travel.tool_selection"
    assert phoenix.annotations([never]) == []
    assert outcomes.counts == {"sent": 1, "span_not_found": 1}


def test_a_run_scored_again_updates_its_annotation_rather_than_adding_one(phoenix: Phoenix) -> None:
    span_id = sent_span(phoenix, "invoke_agent travel")
    outcomes = Outcomes()
    sink = PhoenixAnnotations(PhoenixConfig(enabled=True, endpoint=phoenix.url), outcomes)
    try:
        sink.record(run_on(span_id), EXPECTATION, score(0.0))
        assert sink.flush(10.0)
        sink.record(run_on(span_id), EXPECTATION, score(1.0))
        failed = ScoreFailure(name="trajectory", error_type="scorer_error", message="boom")
        sink.record(run_on(span_id), EXPECTATION, failed)
        assert sink.flush(10.0)
    finally:
        sink.close(1.0)
    annotations = {a["name"]: a for a in phoenix.annotations([span_id])}
    assert len(annotations) == 2
    assert outcomes.counts == {"sent": 3}
    assert annotations["travel.tool_selection"]["result"]["score"] == 1.0
    assert annotations["travel.trajectory"]["result"]["label"] == "error"
    assert annotations["travel.trajectory"]["metadata"]["error.type"] == "scorer_error"


def test_phoenix_down_costs_the_pipeline_nothing_and_close_is_bounded() -> None:
    outcomes = Outcomes()
    config = PhoenixConfig(enabled=True, endpoint=f"http://127.0.0.1:{free_port()}", retry_for_s=60, queue_size=3)
    sink = PhoenixAnnotations(config, outcomes)
    started = time.monotonic()
    for _ in range(5):
        sink.record(run_on(os.urandom(8).hex()), EXPECTATION, score(1.0))  # never blocks the engine's thread
    recorded = time.monotonic() - started
    started = time.monotonic()
    closed = sink.close(1.0)
    assert recorded < 0.1
    assert time.monotonic() - started < 3.0
    assert not closed
    assert outcomes.counts["queue_full"] == 2
    assert outcomes.counts["shutdown"] + outcomes.counts["unreachable"] == 3


def test_config_refuses_an_endpoint_that_is_not_a_url() -> None:
    with pytest.raises(ValueError, match="endpoint"):
        PhoenixConfig(enabled=True, endpoint="127.0.0.1:6006")


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[str | None]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.seen.append(self.headers.get("Authorization"))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'{"data": []}')

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize(
    ("configured", "env", "expected"),
    [(None, None, None), (None, "k1", "Bearer k1"), ("k2", "k1", "Bearer k2")],
)
def test_the_api_key_is_the_configured_one_else_phoenix_api_key(
    monkeypatch: pytest.MonkeyPatch, configured: str | None, env: str | None, expected: str | None
) -> None:
    if env is None:
        monkeypatch.delenv("PHOENIX_API_KEY", raising=False)
    else:
        monkeypatch.setenv("PHOENIX_API_KEY", env)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Recorder.seen = []
    try:
        config = PhoenixConfig(enabled=True, endpoint=f"http://127.0.0.1:{server.server_port}", api_key=configured)
        sink = PhoenixAnnotations(config)
        sink.record(run_on(os.urandom(8).hex()), EXPECTATION, score(1.0))
        assert sink.flush(5.0)
        sink.close(1.0)
    finally:
        server.shutdown()
        server.server_close()
    assert _Recorder.seen == [expected]


def test_through_the_compose_collector_phoenix_holds_the_scored_runs_and_their_annotations(
    phoenix: Phoenix, tmp_path: Path
) -> None:
    """The compose path with Phoenix as its trace backend: agents → Collector (the compose stack's config) →
    `toolscore serve` → Collector → Phoenix; each run span arrives with its scores as attributes, and the same
    scores as Phoenix annotations on it."""
    config = serve_config(tmp_path, [DEMO_EXPECTATIONS], None, phoenix={"enabled": True, "endpoint": phoenix.url})
    grpc_endpoint = yaml.safe_load(config.read_text())["receiver"]["grpc_endpoint"]
    collector, listeners = compose_config(grpc_endpoint, backend=f"127.0.0.1:{phoenix.grpc_port}")
    with (
        ServeProcess(config, tmp_path, env=compose_env(listeners["0.0.0.0:4319"])) as serve,
        Otelcol(tmp_path, collector) as otelcol,
    ):
        serve.wait_ready()
        otelcol.wait_ready()
        demo = make_demo_spans()
        runs = {sdk_key(s)[1] for spans in demo for s in spans if s.name.startswith("invoke_agent")}
        exporter = HttpExporter(endpoint=f"http://{listeners['0.0.0.0:4318']}/v1/traces", timeout=10)
        for spans in demo:
            assert exporter.export(spans) is SpanExportResult.SUCCESS
        exporter.shutdown()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len({a["span_id"] for a in phoenix.annotations(sorted(runs))}) < len(
            runs
        ):
            time.sleep(0.2)
        assert serve.terminate() == 0, serve.log()

    spans = {s["context"]["span_id"]: s for s in phoenix.get("/v1/projects/default/spans", limit=1000)["data"]}
    annotations = phoenix.annotations(sorted(runs))
    scored = {span_id for span_id in runs if attributes_scores(spans.get(span_id, {}).get("attributes", {}))}
    assert scored == runs, {span_id: spans.get(span_id, {}).get("name") for span_id in runs - scored}
    assert {a["span_id"] for a in annotations} == runs
    for annotation in annotations:
        expectation = annotation["metadata"]["toolscore.expectation.name"]
        scorer = annotation["metadata"]["gen_ai.evaluation.name"]
        assert annotation["name"] == f"{expectation}.{scorer}"
        attributes = spans[annotation["span_id"]]["attributes"]
        key = f"toolscore.evaluation.{attribute_key(expectation)}.{attribute_key(scorer)}.score"
        assert annotation["result"]["score"] == attributes[key], (annotation, sorted(attributes))
    assert Counter(a["span_id"] for a in annotations) == Counter(  # one per expectation and scorer, none doubled
        {span_id: len(attributes_scores(spans[span_id]["attributes"])) for span_id in runs}
    )


def attributes_scores(attributes: dict[str, object]) -> list[str]:
    return [key for key in attributes if key.startswith("toolscore.evaluation.") and key.endswith(".score")]
