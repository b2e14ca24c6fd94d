"""Building the providers toolscore's self-telemetry is exported through.

`TelemetryConfig` says where metrics and evaluation events go; `setup_telemetry` builds a
`MeterProvider` (Prometheus ``/metrics`` endpoint and/or OTLP) and a `LoggerProvider` (OTLP) from it,
and the `PipelineTelemetry` on top. A provider that has nowhere to export is not built: telemetry then
falls back to the global provider, which is the application's own (or a no-op).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Literal, Self
from wsgiref.simple_server import WSGIServer

from opentelemetry._logs import NoOpLoggerProvider
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter
from opentelemetry.sdk.environment_variables import OTEL_METRICS_EXEMPLAR_FILTER
from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, ExemplarFilter, MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolscore.collector import env
from toolscore.collector.telemetry._histogram_tally import TalliedMeterProvider, TalliedReader, tally_for
from toolscore.collector.telemetry.base import PipelineTelemetry, create_telemetry
from toolscore.collector.telemetry.direct_logs import DirectLogs, grpc_exporter
from toolscore.collector.telemetry.limits import DEFAULT_MAX_ATTRIBUTE_VALUES
from toolscore.collector.telemetry.versions import DEFAULT_MAX_AGENT_VERSIONS

__all__ = [
    "TelemetryConfig",
    "TelemetrySetup",
    "build_logger_provider",
    "build_meter_provider",
    "otlp_protocol",
    "setup_telemetry",
    "standard_variable",
]

_log = logging.getLogger(__name__)

OtlpProtocol = Literal["grpc", "http/protobuf"]


class TelemetryConfig(BaseModel):
    """Where toolscore's metrics and `gen_ai.evaluation.result` events go."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = Field(
        default=True,
        description="Report metrics and evaluation events at all. Env: TOOLSCORE_TELEMETRY_ENABLED, "
        "OTEL_SDK_DISABLED. Default: true.",
    )
    prometheus_enabled: bool = Field(
        default=False,
        description="Serve the metrics on a Prometheus `/metrics` endpoint. "
        "Env: `prometheus` in OTEL_METRICS_EXPORTER. Default: false.",
    )
    prometheus_host: str = Field(
        default="127.0.0.1",
        description="Address the `/metrics` endpoint listens on. Env: OTEL_EXPORTER_PROMETHEUS_HOST. "
        "Default: 127.0.0.1.",
    )
    prometheus_port: int = Field(
        default=9464,
        ge=0,
        le=65535,
        description="Port of the `/metrics` endpoint (0 picks a free one). Env: OTEL_EXPORTER_PROMETHEUS_PORT. "
        "Default: 9464.",
    )
    otlp_metrics: bool = Field(
        default=False,
        description="Push the metrics over OTLP. Env: on when OTEL_EXPORTER_OTLP_ENDPOINT or "
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is set, unless OTEL_METRICS_EXPORTER leaves out `otlp`. Default: false.",
    )
    otlp_logs: bool = Field(
        default=False,
        description="Send the evaluation events over OTLP. Env: on when OTEL_EXPORTER_OTLP_ENDPOINT or "
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT is set, unless OTEL_LOGS_EXPORTER leaves out `otlp`. Default: false.",
    )
    export_interval_ms: int = Field(
        default=60_000,
        ge=1,
        description="Milliseconds between two OTLP metric exports. Env: OTEL_METRIC_EXPORT_INTERVAL. Default: 60000.",
    )
    max_attribute_values: int = Field(
        default=DEFAULT_MAX_ATTRIBUTE_VALUES,
        ge=1,
        description="Distinct values per name-valued metric attribute (scorer, expectation, agent, error type) "
        "before further ones are reported as `_other`. Env: TOOLSCORE_MAX_ATTRIBUTE_VALUES. Default: 100.",
    )
    max_agent_versions: int = Field(
        default=DEFAULT_MAX_AGENT_VERSIONS,
        ge=1,
        description="Versions per agent with series of their own in `toolscore.expectation.version.runs` (the "
        "most recently seen); an older version's series ends and its later runs count as `_other`. "
        "Env: TOOLSCORE_MAX_AGENT_VERSIONS. Default: 5.",
    )

    @classmethod
    def from_env(cls, **explicit: Any) -> Self:
        """Explicit arguments first, then the environment, then the defaults.

        A bad explicit value raises `ValueError` (pydantic's `ValidationError`); a bad environment value
        is logged and its field keeps the default.
        """
        merged = {**_from_environment(), **explicit}
        try:
            return cls(**merged)
        except ValidationError as exc:
            bad_env = {str(error["loc"][0]) for error in exc.errors() if error["loc"]} - set(explicit)
            if not bad_env:
                raise
            env.log_ignored(exc, cls, "telemetry", bad_env, lambda field: _VARIABLES.get(field, field))
            return cls(**{k: v for k, v in merged.items() if k not in bad_env})


_VARIABLES = {
    "enabled": f"{env.TOOLSCORE_TELEMETRY_ENABLED} / {env.OTEL_SDK_DISABLED}",
    "prometheus_enabled": env.OTEL_METRICS_EXPORTER,
    "prometheus_host": env.OTEL_EXPORTER_PROMETHEUS_HOST,
    "prometheus_port": env.OTEL_EXPORTER_PROMETHEUS_PORT,
    "export_interval_ms": env.OTEL_METRIC_EXPORT_INTERVAL,
    "max_attribute_values": env.TOOLSCORE_MAX_ATTRIBUTE_VALUES,
    "max_agent_versions": env.TOOLSCORE_MAX_AGENT_VERSIONS,
}
"""The variable each field is read from, to name it when its value is refused."""

_READ_FROM = {
    "enabled": (env.TOOLSCORE_TELEMETRY_ENABLED, env.OTEL_SDK_DISABLED),
    "prometheus_enabled": (env.OTEL_METRICS_EXPORTER,),
    "prometheus_host": (env.OTEL_EXPORTER_PROMETHEUS_HOST,),
    "prometheus_port": (env.OTEL_EXPORTER_PROMETHEUS_PORT,),
    "otlp_metrics": (
        env.OTEL_METRICS_EXPORTER,
        env.OTEL_EXPORTER_OTLP_ENDPOINT,
        env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,
    ),
    "otlp_logs": (env.OTEL_LOGS_EXPORTER, env.OTEL_EXPORTER_OTLP_ENDPOINT, env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT),
    "export_interval_ms": (env.OTEL_METRIC_EXPORT_INTERVAL,),
    "max_attribute_values": (env.TOOLSCORE_MAX_ATTRIBUTE_VALUES,),
    "max_agent_versions": (env.TOOLSCORE_MAX_AGENT_VERSIONS,),
}
"""Every variable `from_env` reads each field from."""


def standard_variable(field: str) -> str | None:
    """The variables set in the environment that `from_env` read `field` from (`A, B` for more than one), None
    when none is: said beside the value `toolscore serve --print-config` prints, as where it came from."""
    names = [name for name in _READ_FROM.get(field, ()) if env.env_str(name) is not None]
    return ", ".join(names) or None


def _otlp_wanted(selector: str, signal_endpoint: str) -> bool:
    exporters = env.env_list(selector, ("otlp",))
    endpoint = env.env_str(env.OTEL_EXPORTER_OTLP_ENDPOINT) or env.env_str(signal_endpoint)
    return "otlp" in exporters and endpoint is not None


def _from_environment() -> dict[str, Any]:
    default = TelemetryConfig.model_fields
    enabled = env.env_bool(env.TOOLSCORE_TELEMETRY_ENABLED, True) and not env.env_bool(env.OTEL_SDK_DISABLED, False)
    return {
        "enabled": enabled,
        "prometheus_enabled": "prometheus" in env.env_list(env.OTEL_METRICS_EXPORTER, ("otlp",)),
        "prometheus_host": env.env_str(env.OTEL_EXPORTER_PROMETHEUS_HOST, default["prometheus_host"].default),
        "prometheus_port": env.env_int(env.OTEL_EXPORTER_PROMETHEUS_PORT, default["prometheus_port"].default, 0),
        "otlp_metrics": _otlp_wanted(env.OTEL_METRICS_EXPORTER, env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT),
        "otlp_logs": _otlp_wanted(env.OTEL_LOGS_EXPORTER, env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT),
        "export_interval_ms": env.env_int(env.OTEL_METRIC_EXPORT_INTERVAL, default["export_interval_ms"].default, 1),
        "max_attribute_values": env.env_int(
            env.TOOLSCORE_MAX_ATTRIBUTE_VALUES, default["max_attribute_values"].default, 1
        ),
        "max_agent_versions": env.env_int(env.TOOLSCORE_MAX_AGENT_VERSIONS, default["max_agent_versions"].default, 1),
    }


def otlp_protocol(signal: Literal["traces", "metrics", "logs"]) -> OtlpProtocol:
    """The OTLP protocol for `signal`: its own variable, then OTEL_EXPORTER_OTLP_PROTOCOL, then grpc."""
    name = f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL"
    value = env.env_str(name) or env.env_str(env.OTEL_EXPORTER_OTLP_PROTOCOL) or "grpc"
    if value not in ("grpc", "http/protobuf"):
        _log.warning("OTLP protocol %r for %s is not supported; using grpc", value, signal)
        return "grpc"
    return "http/protobuf" if value == "http/protobuf" else "grpc"


def _otlp_metric_exporter() -> MetricExporter:
    if otlp_protocol("metrics") == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as Grpc

        return Grpc()
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as Http

    return Http()


def _otlp_log_exporter() -> LogRecordExporter:
    if otlp_protocol("logs") == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as Grpc

        return Grpc()
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as Http

    return Http()


@dataclass
class TelemetrySetup:
    """What `setup_telemetry` built; `shutdown()` flushes and stops it (idempotent)."""

    telemetry: PipelineTelemetry
    meter_provider: MeterProvider | None = None
    logger_provider: LoggerProvider | DirectLogs | None = None
    prometheus_server: WSGIServer | None = None
    _closed: bool = field(default=False, repr=False)

    @property
    def prometheus_address(self) -> tuple[str, int] | None:
        """(host, port) the `/metrics` endpoint really listens on (useful with port 0)."""
        if self.prometheus_server is None:
            return None
        host, port = self.prometheus_server.server_address[:2]
        return str(host), int(port)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Export what the providers hold now (the last scores' metrics and events); False past the timeout."""
        ok = True
        if self.meter_provider is not None:
            ok = self.meter_provider.force_flush(timeout_millis) and ok
        if self.logger_provider is not None:
            ok = self.logger_provider.force_flush(timeout_millis) and ok
        return ok

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.meter_provider is not None:
            self.meter_provider.shutdown()
        if self.logger_provider is not None:
            self.logger_provider.shutdown()
        if self.prometheus_server is not None:
            self.prometheus_server.shutdown()
            self.prometheus_server.server_close()


class _TalliedPeriodicReader(TalliedReader, PeriodicExportingMetricReader):
    """The SDK's periodic reader, reading the provider's tallied histograms too (`_histogram_tally`)."""


def _prometheus_reader(config: TelemetryConfig) -> tuple[MetricReader, WSGIServer]:
    """A Prometheus reader on its own registry (never the process-global one) and its HTTP server."""
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import CollectorRegistry, start_http_server

    class TalliedPrometheusReader(TalliedReader, PrometheusMetricReader):
        """The Prometheus reader, reading the provider's tallied histograms too (`_histogram_tally`)."""

    registry = CollectorRegistry(auto_describe=True)
    reader = TalliedPrometheusReader(registry=registry)
    server, _thread = start_http_server(config.prometheus_port, addr=config.prometheus_host, registry=registry)
    return reader, server


def _exemplar_filter() -> ExemplarFilter | None:
    """No exemplars unless `OTEL_METRICS_EXEMPLAR_FILTER` asks (None: the SDK reads it).

    The SDK's default keeps exemplars of measurements made inside a sampled span, and toolscore records
    its metrics on its worker thread, inside none: the default's check found nothing, at a fifth of the
    cost of each histogram measurement (~1.7 of 8 µs, three per scored run).
    """
    return None if env.env_str(OTEL_METRICS_EXEMPLAR_FILTER) else AlwaysOffExemplarFilter()


def build_meter_provider(config: TelemetryConfig, resource: Resource) -> tuple[MeterProvider | None, WSGIServer | None]:
    """The meter provider `config`'s exports need (Prometheus and/or OTLP), and the `/metrics` server;
    (None, None) when it names none."""
    readers: list[MetricReader] = []
    server: WSGIServer | None = None
    if config.prometheus_enabled:
        reader, server = _prometheus_reader(config)
        readers.append(reader)
    if config.otlp_metrics:
        interval = config.export_interval_ms
        readers.append(_TalliedPeriodicReader(_otlp_metric_exporter(), export_interval_millis=interval))
    if not readers:
        return None, None
    exemplars = _exemplar_filter()
    if exemplars is not None:  # no exemplars: the histograms are summed here (`_histogram_tally`)
        from toolscore.collector.telemetry.metrics_table import METRICS
        from toolscore.collector.telemetry.otel import SCOPE_NAME, toolscore_version

        scope = InstrumentationScope(SCOPE_NAME, toolscore_version() or "")
        tally = tally_for(readers, METRICS, scope, resource)
        if tally is not None:
            return TalliedMeterProvider(
                tally, metric_readers=readers, resource=resource, exemplar_filter=exemplars
            ), server
    return MeterProvider(metric_readers=readers, resource=resource, exemplar_filter=exemplars), server


def build_logger_provider(config: TelemetryConfig, resource: Resource) -> LoggerProvider | DirectLogs | None:
    """The logger provider that sends evaluation events over OTLP, when `config` asks for it: over OTLP/gRPC
    records encoded directly (`direct_logs`, ~13 times cheaper), over OTLP/HTTP through the SDK."""
    if not config.otlp_logs:
        return None
    if otlp_protocol("logs") == "grpc":
        return DirectLogs(grpc_exporter(), resource)
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(_otlp_log_exporter()))
    return logger_provider


def setup_telemetry(config: TelemetryConfig | None = None, resource: Resource | None = None) -> TelemetrySetup:
    """Build providers for `config` (from the environment when None) and the telemetry on top.

    Providers are not installed globally: pass them on, or call `metrics.set_meter_provider` yourself.
    """
    config = TelemetryConfig.from_env() if config is None else config
    if not config.enabled:
        return TelemetrySetup(telemetry=create_telemetry(enabled=False))
    resource = Resource.create() if resource is None else resource
    meter_provider, server = build_meter_provider(config, resource)
    logger_provider = build_logger_provider(config, resource)
    telemetry = create_telemetry(
        meter_provider,
        logger_provider or NoOpLoggerProvider(),  # not the global one: this process's events go nowhere else
        enabled=True,
        max_attribute_values=config.max_attribute_values,
        max_agent_versions=config.max_agent_versions,
    )
    return TelemetrySetup(telemetry, meter_provider, logger_provider, server)
