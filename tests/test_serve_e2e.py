"""`toolscore serve` end to end: a subprocess between the real OTel SDK exporters and a downstream OTLP receiver."""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.capture_replay import CAPTURES, capture_requests, captures_expectations, check_capture_scores
from tests.postgres import PostgresServer
from tests.serve_demo_checks import DEMO_EXPECTATIONS, attrs, check_run_span, demo_verdicts, key, sdk_key
from tests.serve_harness import Downstream, ServeProcess, free_port, serve_config
from toolscore.collector.cli.demo_runs import make_demo_spans

pytestmark = pytest.mark.integration

INVALID = Path(__file__).parent / "testdata" / "serve" / "invalid"


_EXPECTED: set[str] = set()
"""The expectations the captures got (`captures_expectations`), filled by the `collector` fixture."""


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, Downstream]]:
    tmp = tmp_path_factory.mktemp("serve")
    _EXPECTED.update(captures_expectations(tmp / "captures.yaml"))
    downstream = Downstream()
    # a settle of 1 s: spans of one capture are sent together, but a loaded machine can hold them apart past 100 ms
    config = serve_config(tmp, [DEMO_EXPECTATIONS, tmp / "captures.yaml"], downstream, pipeline={"settle_ms": 1000})
    process = ServeProcess(config, tmp)
    try:
        process.wait_ready()
        yield process, downstream
    finally:
        status = process.terminate()
        downstream.stop()
    assert status == 0, process.log()


def _otlp_json(spans: list[ReadableSpan]) -> bytes:
    """OTLP/JSON as an `http/json` exporter sends it: hex ids (not protobuf JSON's base64), integer enums."""
    document = json_format.MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for name in ("traceId", "spanId", "parentSpanId"):
                    if name in span:
                        span[name] = base64.b64decode(span[name]).hex()
    return json.dumps(document).encode()


def _post_chunked(process: ServeProcess, body: bytes, headers: dict[str, str]) -> None:
    """POST with `Transfer-Encoding: chunked` in three chunks, as OpenTelemetry Java sends gzip and JSON."""
    host, port = process.config["receiver"]["http_endpoint"].rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        third = len(body) // 3 + 1
        chunks = iter([body[:third], body[third : 2 * third], body[2 * third :]])
        connection.request("POST", "/v1/traces", chunks, headers, encode_chunked=True)
        response = connection.getresponse()
        assert (response.status, response.read()) == (200, b"{}" if "json" in headers["Content-Type"] else b"")
    finally:
        connection.close()


def _send_every_way(process: ServeProcess) -> list[list[ReadableSpan]]:
    """Demo traces over OTLP/gRPC, OTLP/HTTP protobuf and JSON, and chunked OTLP/HTTP gzip protobuf and JSON:
    each way gets every demo run."""
    sent: list[list[ReadableSpan]] = []
    grpc_traces, http_traces, json_traces = make_demo_spans(), make_demo_spans(), make_demo_spans()
    chunked_gzip_traces, chunked_json_traces = make_demo_spans(), make_demo_spans()
    grpc_exporter = GrpcExporter(endpoint=process.grpc_endpoint, insecure=True, timeout=10)
    http_exporter = HttpExporter(endpoint=process.http_url + "/v1/traces", timeout=10)
    for traces, exporter in ((grpc_traces, grpc_exporter), (http_traces, http_exporter)):
        for spans in traces:
            assert exporter.export(spans) is SpanExportResult.SUCCESS
        exporter.shutdown()
    for spans in json_traces:
        request = urllib.request.Request(
            process.http_url + "/v1/traces", _otlp_json(spans), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
    for spans in chunked_gzip_traces:
        body = gzip.compress(encode_spans(spans).SerializeToString())
        _post_chunked(process, body, {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"})
    for spans in chunked_json_traces:
        _post_chunked(process, _otlp_json(spans), {"Content-Type": "application/json"})
    for traces in (grpc_traces, http_traces, json_traces, chunked_gzip_traces, chunked_json_traces):
        sent.extend(traces)
    return sent


def test_sdk_exporters_over_grpc_http_json_and_chunked_http_get_scored_and_every_span_forwarded_once(
    collector: tuple[ServeProcess, Downstream],
) -> None:
    process, downstream = collector
    traces = _send_every_way(process)
    sent = {sdk_key(s): s for spans in traces for s in spans}
    encoded = encode_spans(list(sent.values()))
    expected_spans = {key(s): s for rs in encoded.resource_spans for ss in rs.scope_spans for s in ss.spans}
    received = downstream.wait_for(set(sent))
    counts = Counter(key(span) for span in received)
    assert set(counts) == set(sent), process.log()
    assert set(counts.values()) == {1}, "every span arrives exactly once"
    by_key = {key(span): span for span in received}
    for i, spans in enumerate(traces):
        for readable in spans:
            got, original = by_key[sdk_key(readable)], expected_spans[sdk_key(readable)]
            if readable.attributes.get("gen_ai.operation.name") != "invoke_agent":
                assert got == original, "a span that is no run span is forwarded unchanged"
                continue
            check_run_span(got, original, demo_verdicts(i, readable))


def test_captures_replayed_shuffled_and_split_are_scored_and_forwarded_once(
    collector: tuple[ServeProcess, Downstream],
) -> None:
    process, downstream = collector
    requests, keys = capture_requests(seed=7)
    with grpc.insecure_channel(process.grpc_endpoint) as channel:
        export_logs = logs_service_pb2_grpc.LogsServiceStub(channel).Export
        for path in sorted(CAPTURES.glob("*/*.logs.pb")):  # GenAI events first: they wait for their spans
            logs = logs_service_pb2.ExportLogsServiceRequest.FromString(path.read_bytes())
            assert not export_logs(logs, timeout=10).HasField("partial_success"), path
        export = trace_service_pb2_grpc.TraceServiceStub(channel).Export
        for request in requests:
            assert not export(request, timeout=10).HasField("partial_success")
    received = downstream.wait_for(keys)
    counts = Counter(key(span) for span in received)
    assert set(counts) == keys, process.log()
    assert set(counts.values()) == {1}, "every span arrives exactly once"
    checked = check_capture_scores({key(span): span for span in received}, _EXPECTED)
    assert checked >= 100, f"only {checked} runs had an expectation of their own"


def test_demo_prints_the_scores_of_its_runs(collector: tuple[ServeProcess, Downstream]) -> None:
    process, _ = collector
    db = process.config["score_store"]["path"]
    result = subprocess.run(
        [sys.executable, "-m", "toolscore.collector.cli", "demo", "--endpoint", process.grpc_endpoint, "--db", db],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "sent 7 agent runs" in result.stderr
    for text in ("right: search, then book", "nested: booking delegated", "0.667 fail", "demo.planner.delegates"):
        assert text in result.stdout
    assert result.stdout.count(" pass ") == 8, result.stdout
    assert result.stdout.count(" fail ") == 5, result.stdout


def test_demo_reading_the_wrong_store_says_so_rather_than_printing_an_empty_table(
    collector: tuple[ServeProcess, Downstream], tmp_path: Path
) -> None:
    db = tmp_path / "elsewhere" / "scores.db"
    demo = ["demo", "--endpoint", collector[0].grpc_endpoint, "--db", str(db), "--timeout", "1"]
    result = subprocess.run(
        [sys.executable, "-m", "toolscore.collector.cli", *demo],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert f"no score store at {db} after 1 s: pass the collector's `score_store.path` as --db" in result.stderr


def test_demo_without_a_server_says_how_to_start_one(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "toolscore.collector.cli", "demo", "--endpoint", f"127.0.0.1:{free_port()}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 1
    assert "is `toolscore serve` running there?" in result.stderr


def test_sigterm_with_runs_pending_scores_and_forwards_them_before_exit(tmp_path: Path) -> None:
    downstream = Downstream()
    held = {"settle_ms": 20_000, "max_hold_ms": 60_000, "trace_idle_timeout_s": 120}
    process = ServeProcess(serve_config(tmp_path, [DEMO_EXPECTATIONS], downstream, pipeline=held), tmp_path)
    with process:
        process.wait_ready()
        sent = _export_demo(process)
        runs = {key for key, span in sent.items() if span.attributes.get("gen_ai.operation.name") == "invoke_agent"}
        passed_on = {key(span) for span in downstream.wait_for(set(sent) - runs)}
        assert passed_on == set(sent) - runs, "other spans go on at once"
        assert not {key(span) for _, span in downstream.spans()} & runs, "run spans wait to settle"
        assert process.terminate(timeout_s=15) == 0, process.log()
    received = downstream.wait_for(set(sent), timeout_s=0.5)
    downstream.stop()
    assert Counter(key(span) for span in received) == Counter(set(sent)), "everything forwarded once, before exit"
    for span in received:
        if key(span) in runs:
            assert "toolscore.expectations" in attrs(span), "pending runs were scored at shutdown"
    assert "toolscore serve stopped" in process.log()


def test_environment_override_moves_the_running_receiver(tmp_path: Path) -> None:
    port = free_port()
    config = serve_config(tmp_path, [DEMO_EXPECTATIONS], None)
    process = ServeProcess(config, tmp_path, env={"TOOLSCORE_RECEIVER__GRPC_ENDPOINT": f"127.0.0.1:{port}"})
    with process:
        process.wait_ready()
        assert f"OTLP/gRPC on port {port}," in process.log()
        exporter = GrpcExporter(endpoint=f"127.0.0.1:{port}", insecure=True, timeout=10)
        assert exporter.export(make_demo_spans()[0]) is SpanExportResult.SUCCESS
        exporter.shutdown()
        assert process.terminate() == 0


def _health(process: ServeProcess, path: str) -> tuple[int, dict[str, Any]] | None:
    """(status, JSON body) of a health endpoint; None while the receiver does not answer yet."""
    try:
        with urllib.request.urlopen(process.http_url + path, timeout=2) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
    except OSError:
        return None


def _scores(span: Span) -> list[str]:
    return [name for name in attrs(span) if name.startswith("toolscore.evaluation.")]


def _export_demo(process: ServeProcess) -> dict[tuple[str, str], ReadableSpan]:
    """Send the demo traces over OTLP/gRPC; the spans sent, by (trace id, span id) in hex."""
    traces = make_demo_spans()
    exporter = GrpcExporter(endpoint=process.grpc_endpoint, insecure=True, timeout=10)
    for spans in traces:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    exporter.shutdown()
    return {sdk_key(s): s for spans in traces for s in spans}


def _send_demo(process: ServeProcess, downstream: Downstream) -> list[Span]:
    """The demo traces over OTLP/gRPC; returns their run spans as forwarded downstream."""
    sent = _export_demo(process)
    received = downstream.wait_for(set(sent))
    assert {key(span) for span in received} == set(sent), process.log()
    return [span for span in received if sent[key(span)].attributes.get("gen_ai.operation.name") == "invoke_agent"]


def test_a_postgres_registry_down_at_start_is_waited_for_while_spans_are_forwarded(
    own_postgres: PostgresServer, tmp_path: Path
) -> None:
    """Kubernetes: the pod starts and forwards, is not ready (a rollout with a bad DSN stalls, old pods
    keep serving), and needs no restart once the database is back."""
    own_postgres.stop()
    downstream = Downstream()
    store = {"type": "postgres", "dsn": own_postgres.dsn, "connect_timeout_s": 1}
    config = serve_config(tmp_path, [DEMO_EXPECTATIONS], downstream, registry={"store": store, "poll_interval_s": 0.2})
    with ServeProcess(config, tmp_path) as process:
        deadline = time.monotonic() + 30
        while (readiness := _health(process, "/readyz")) is None and time.monotonic() < deadline:
            assert process.proc.poll() is None, process.log()
            time.sleep(0.05)
        assert readiness is not None, process.log()
        assert readiness[0] == 503
        assert readiness[1]["reason"].startswith("waiting for the registry store: OperationalError")
        assert _health(process, "/healthz") == (200, {"status": "live"})
        unscored = _send_demo(process, downstream)
        assert not [span for span in unscored if _scores(span)], "nothing to match yet"
        own_postgres.start()
        process.wait_ready()
        scored = _send_demo(process, downstream)
        assert all(_scores(span) for span in scored), "the files were applied"
        assert process.terminate() == 0, process.log()
    downstream.stop()
    log = process.log()
    assert "toolscore serve started, not ready (waiting for the registry store" in log
    assert log.count("registry store unreachable") == 1
    assert "Traceback" not in log
