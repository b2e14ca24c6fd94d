"""Telemetry providers from config: precedence of arguments over the environment, real exporters."""

from __future__ import annotations

import logging
import re
import urllib.request

import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.otlp_downstream import TelemetryReceiver
from toolscore.collector.telemetry import RunSpanRef
from toolscore.collector.telemetry.setup import TelemetryConfig, otlp_protocol, setup_telemetry
from toolscore.scorers import Score

_VARIABLES = (
    "TOOLSCORE_TELEMETRY_ENABLED",
    "TOOLSCORE_MAX_ATTRIBUTE_VALUES",
    "OTEL_SDK_DISABLED",
    "OTEL_METRICS_EXPORTER",
    "OTEL_LOGS_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL",
    "OTEL_METRIC_EXPORT_INTERVAL",
    "OTEL_EXPORTER_PROMETHEUS_HOST",
    "OTEL_EXPORTER_PROMETHEUS_PORT",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_defaults_export_nothing_of_their_own() -> None:
    config = TelemetryConfig.from_env()
    assert config == TelemetryConfig()
    assert (config.enabled, config.prometheus_enabled, config.otlp_metrics, config.otlp_logs) == (
        True,
        False,
        False,
        False,
    )
    assert (config.prometheus_host, config.prometheus_port, config.max_attribute_values) == ("127.0.0.1", 9464, 100)


def test_standard_otel_variables_turn_exporters_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp, Prometheus")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")
    monkeypatch.setenv("OTEL_EXPORTER_PROMETHEUS_PORT", "9999")
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "5000")
    config = TelemetryConfig.from_env()
    assert (config.prometheus_enabled, config.otlp_metrics, config.otlp_logs) == (True, True, False)
    assert (config.prometheus_port, config.export_interval_ms) == (9999, 5000)


def test_explicit_argument_beats_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLSCORE_MAX_ATTRIBUTE_VALUES", "7")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert TelemetryConfig.from_env().max_attribute_values == 7
    assert TelemetryConfig.from_env().enabled is False
    assert TelemetryConfig.from_env(max_attribute_values=3, enabled=True).model_dump(
        include={"max_attribute_values", "enabled"}
    ) == {"max_attribute_values": 3, "enabled": True}


@pytest.mark.parametrize(
    ("value", "logged"),
    [
        ("abc", "OTEL_EXPORTER_PROMETHEUS_PORT='abc' is not an integer; using the default 9464"),
        (
            "70000",
            "OTEL_EXPORTER_PROMETHEUS_PORT ignored, telemetry.prometheus_port keeps its default: must be <= 65535",
        ),
    ],
)
def test_bad_environment_value_is_logged_and_the_default_used(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, value: str, logged: str
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_PROMETHEUS_PORT", value)
    with caplog.at_level(logging.WARNING):
        config = TelemetryConfig.from_env()
    assert config.prometheus_port == 9464
    assert logged in caplog.text
    assert "validation error" not in caplog.text


def test_bad_explicit_value_raises() -> None:
    with pytest.raises(ValueError, match="prometheus_port"):
        TelemetryConfig.from_env(prometheus_port=70000)


def test_otlp_protocol_prefers_the_signal_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert otlp_protocol("logs") == "grpc"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "grpc")
    assert (otlp_protocol("logs"), otlp_protocol("metrics")) == ("grpc", "http/protobuf")


def test_disabled_setup_builds_nothing() -> None:
    setup = setup_telemetry(TelemetryConfig(enabled=False, prometheus_enabled=True))
    assert (setup.meter_provider, setup.logger_provider, setup.prometheus_address) == (None, None, None)


def test_prometheus_endpoint_serves_the_histograms() -> None:
    setup = setup_telemetry(TelemetryConfig(prometheus_enabled=True, prometheus_port=0))
    try:
        setup.telemetry.score_recorded(Score(name="f1", value=0.75, label="pass"), "book-flight", 1, "planner", None)
        setup.telemetry.score_delay(0.3)
        setup.telemetry.spans_dropped(2, "queue_full")
        assert setup.prometheus_address is not None
        host, port = setup.prometheus_address
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as response:
            body = response.read().decode()
    finally:
        setup.shutdown()
        setup.shutdown()
    assert "# TYPE toolscore_evaluation_score histogram" in body
    assert "# TYPE toolscore_score_delay_seconds histogram" in body
    bucket = re.search(r'^toolscore_evaluation_score_bucket\{[^}]*le="0\.8"[^}]*\} (\S+)$', body, re.MULTILINE)
    assert bucket is not None
    assert float(bucket.group(1)) == 1.0
    assert 'gen_ai_agent_name="planner"' in body
    assert re.search(r'toolscore_spans_total\{[^}]*toolscore_drop_reason="queue_full"[^}]*\} 2\.0', body)


def test_otlp_receives_the_evaluation_event_and_the_metrics(
    monkeypatch: pytest.MonkeyPatch, otlp_collector: tuple[str, TelemetryReceiver]
) -> None:
    endpoint, collector = otlp_collector
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    setup = setup_telemetry()
    assert setup.meter_provider is not None
    assert setup.logger_provider is not None
    run = RunSpanRef("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")
    setup.telemetry.score_recorded(Score(name="f1", value=0.5, label="fail"), "book-flight", 2, None, run)
    setup.shutdown()

    records = collector.log_records()
    assert [(r.event_name, r.trace_id.hex(), r.span_id.hex()) for r in records] == [
        ("gen_ai.evaluation.result", run.trace_id, run.span_id)
    ]
    assert {"toolscore.evaluation.score", "toolscore.evaluations"} <= collector.metric_names()


@pytest.mark.parametrize(("variable", "exemplars"), [(None, 0), ("trace_based", 1)])
def test_exemplars_are_kept_only_when_otel_metrics_exemplar_filter_asks(
    monkeypatch: pytest.MonkeyPatch, otlp_collector: tuple[str, TelemetryReceiver], variable: str | None, exemplars: int
) -> None:
    """toolscore scores on its worker thread, in no span: the SDK's default filter only cost time there."""
    endpoint, collector = otlp_collector
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    if variable is not None:
        monkeypatch.setenv("OTEL_METRICS_EXEMPLAR_FILTER", variable)
    setup = setup_telemetry()
    with TracerProvider().get_tracer("test").start_as_current_span("sampled") as span:
        setup.telemetry.score_recorded(Score(name="f1", value=0.5, label="fail"), "book-flight", 2, None, None)
    setup.shutdown()
    points = [
        point
        for req in collector.metrics
        for rm in req.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == "toolscore.evaluation.score"
        for point in m.histogram.data_points
    ]
    assert [point.count for point in points] == [1]
    trace_id = span.get_span_context().trace_id.to_bytes(16, "big")
    assert [e.trace_id for e in points[0].exemplars] == [trace_id] * exemplars


@pytest.mark.parametrize(("preference", "temporality"), [(None, 2), ("delta", 1), ("lowmemory", 1), ("cumulative", 2)])
def test_otlp_histograms_follow_the_exporters_temporality(
    monkeypatch: pytest.MonkeyPatch,
    otlp_collector: tuple[str, TelemetryReceiver],
    preference: str | None,
    temporality: int,
) -> None:
    """The histograms toolscore sums itself (`_histogram_tally`) go out as the SDK's would: delta for a delta or
    low-memory preference (`OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE`), else cumulative."""
    endpoint, collector = otlp_collector
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    if preference is not None:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", preference)
    setup = setup_telemetry()
    setup.telemetry.score_recorded(Score(name="f1", value=0.5, label="fail"), "book-flight", 2, None, None)
    setup.telemetry.run_finished("scored", None)
    setup.telemetry.score_delay(0.2)
    setup.shutdown()
    found = {
        m.name: (m.histogram.aggregation_temporality, [(p.count, p.sum) for p in m.histogram.data_points])
        for req in collector.metrics
        for rm in req.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.HasField("histogram")
    }
    assert found == {
        "toolscore.evaluation.score": (temporality, [(1, 0.5)]),
        "toolscore.score.delay": (temporality, [(1, 0.2)]),
    }
