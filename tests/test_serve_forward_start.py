"""`toolscore serve` reads its downstream from the standard `OTEL_EXPORTER_OTLP_*` variables as the OTLP exporter
specification defines them, and refuses to start on a downstream it could not use, rather than serve and drop
every span."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.otlp_downstream import HttpDownstream, spans_of
from tests.serve_harness import ServeProcess, serve_config

pytestmark = pytest.mark.integration  # every test here starts a process

_TRACE_ID = bytes.fromhex("5b8efff798038103d269b633813fc60c")
_SPAN_ID = bytes.fromhex("eee19b7ec3c1b174")


def _serve(config: Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLSCORE_"))}
    return subprocess.run(
        [sys.executable, "-m", "toolscore.collector.cli", "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
        env={**clean, **env},
    )


def _one_span() -> bytes:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = _TRACE_ID, _SPAN_ID, "GET /"
    span.start_time_unix_nano, span.end_time_unix_nano = 1_700_000_000_000_000_000, 1_700_000_000_100_000_000
    return request.SerializeToString()


@pytest.fixture
def downstream() -> Iterator[HttpDownstream]:
    server = HttpDownstream()
    yield server
    server.stop()


def test_an_otlp_http_url_with_the_default_grpc_protocol_stops_the_start_saying_what_to_set(
    tmp_path: Path, downstream: HttpDownstream
) -> None:
    """The Phoenix / Collector `/v1/traces` URL with the protocol left at grpc: before, one log line, then a
    collector with no downstream that discarded every span."""
    config = serve_config(tmp_path, [], None)
    result = _serve(config, tmp_path, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": downstream.endpoint})
    assert result.returncode == 2, result.stderr
    assert (
        "  environment variable OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: forward.endpoint: "
        f"endpoint {downstream.endpoint!r} has a path (/v1/traces), but the protocol is grpc" in result.stderr
    )
    assert "set OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf" in result.stderr
    assert "ready" not in result.stderr


def test_http_json_is_refused_naming_the_variable_and_the_protocol_to_use(tmp_path: Path) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
    result = _serve(serve_config(tmp_path, [], None), tmp_path, env)
    assert result.returncode == 2, result.stderr
    assert "environment variable OTEL_EXPORTER_OTLP_PROTOCOL: forward.protocol: http/json is not supported" in (
        result.stderr
    )
    assert "use http/protobuf" in result.stderr


def test_a_bad_otlp_variable_stops_the_start_instead_of_being_ignored(tmp_path: Path) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_TRACES_INSECURE": "maybe"}
    result = _serve(serve_config(tmp_path, [], None), tmp_path, env)
    assert result.returncode == 2, result.stderr
    assert "environment variable OTEL_EXPORTER_OTLP_TRACES_INSECURE: forward.insecure: expected true or false" in (
        result.stderr
    )


@pytest.mark.parametrize(
    "variables",
    [
        {
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "{url}/v1/traces",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
        },
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "{url}", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "{url}/", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"},
    ],
    ids=["traces-endpoint-as-is", "base-endpoint-gets-v1-traces", "base-endpoint-trailing-slash"],
)
def test_the_standard_variables_forward_every_span_over_otlp_http(
    tmp_path: Path, downstream: HttpDownstream, variables: dict[str, str]
) -> None:
    url = f"http://127.0.0.1:{downstream.port}"
    env = {name: value.format(url=url) for name, value in variables.items()}
    with ServeProcess(serve_config(tmp_path, [], None), tmp_path, env) as process:
        process.wait_ready()
        post = urllib.request.Request(
            process.http_url + "/v1/traces", _one_span(), {"Content-Type": "application/x-protobuf"}
        )
        with urllib.request.urlopen(post, timeout=10) as response:
            assert response.status == 200
        deadline = time.monotonic() + 20
        while not downstream.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.terminate() == 0
    assert f"forwarding to {url}/v1/traces (http/protobuf)" in process.log()
    assert [(span.trace_id, span.span_id) for _, _, span in spans_of(downstream.requests)] == [(_TRACE_ID, _SPAN_ID)]


def test_the_base_endpoint_follows_the_protocol_the_file_chooses(tmp_path: Path) -> None:
    """`OTEL_EXPORTER_OTLP_ENDPOINT` is a base: OTLP/HTTP appends `v1/traces`, whichever source chose the protocol."""
    config = serve_config(tmp_path, [], None, forward={"protocol": "http/protobuf"})
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLSCORE_"))}
    result = subprocess.run(
        [sys.executable, "-m", "toolscore.collector.cli", "serve", "--config", str(config), "--print-config"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=tmp_path,
        env={**clean, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
    )
    set_by = "  # set by environment variable OTEL_EXPORTER_OTLP_ENDPOINT"
    assert f"  endpoint: 'http://collector:4318/v1/traces'{set_by}\n" in result.stdout


def test_an_otlp_http_url_without_a_path_is_used_as_given_and_the_start_says_so(
    tmp_path: Path, downstream: HttpDownstream
) -> None:
    """The signal's own variable is used as it is (the specification): sent to `/`, which receivers answer 404."""
    url = f"http://127.0.0.1:{downstream.port}"
    env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}
    with ServeProcess(serve_config(tmp_path, [], None), tmp_path, env) as process:
        process.wait_ready()
        status = process.terminate()
        assert status == 0, process.log()
    assert f"forwarding to {url} (http/protobuf)" in process.log()
    assert (
        f"WARNING toolscore.serve.forward: forward.endpoint {url!r} has no path, and OTLP/HTTP sends to the URL as "
        "given: most receivers take traces at /v1/traces" in process.log()
    )
