"""`instrument(registry)`: score an application's agent runs in-process with one call.

    toolscore.collector.instrument(registry=Registry(config=RegistryConfig(...)))

It puts a `ToolscoreSpanProcessor` in front of the span export the standard ``OTEL_*`` variables
describe (``BatchSpanProcessor(OTLPSpanExporter())`` by default) and adds it to the application's
tracer provider, so scored run spans leave with their score attributes and events, and every other
span leaves unchanged. Self-telemetry goes to the global meter and logger providers unless told
otherwise; `toolscore.collector.telemetry.setup.setup_telemetry` builds dedicated ones.
"""

from __future__ import annotations

import logging
import weakref

from opentelemetry import trace
from opentelemetry._logs import LoggerProvider
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from toolscore.collector import env
from toolscore.collector.pipeline import Matcher, PipelineConfig, ToolscoreSpanProcessor, pipeline_config_from_env
from toolscore.collector.telemetry import PipelineTelemetry, create_telemetry
from toolscore.collector.telemetry.setup import TelemetryConfig, otlp_protocol

__all__ = ["instrument", "span_exporter_from_env"]

_log = logging.getLogger(__name__)

_instrumented: weakref.WeakKeyDictionary[TracerProvider, ToolscoreSpanProcessor] = weakref.WeakKeyDictionary()
"""The processor `instrument` added to each provider: called twice (a re-imported module, a re-run
notebook cell), it would put a second processor, and a second export of every span, behind the first."""


def span_exporter_from_env() -> SpanExporter | None:
    """The span exporter ``OTEL_TRACES_EXPORTER`` names (``otlp`` by default); None for ``none``.

    The OTLP exporter reads its endpoint, headers and TLS settings from the ``OTEL_EXPORTER_OTLP_*``
    variables itself; ``OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`` picks gRPC or HTTP.
    """
    chosen = env.env_list(env.OTEL_TRACES_EXPORTER, ("otlp",))
    if "otlp" in chosen:
        if otlp_protocol("traces") == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as Grpc

            return Grpc()
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as Http

        return Http()
    if "console" in chosen:
        return ConsoleSpanExporter()
    if chosen and chosen != ("none",):
        _log.warning("OTEL_TRACES_EXPORTER=%s: none of otlp, console, none; exporting nothing", ",".join(chosen))
    return None


def _sdk_tracer_provider(tracer_provider: TracerProvider | None) -> TracerProvider:
    """The given provider, else the global SDK one, else a new SDK provider installed as the global."""
    if tracer_provider is not None:
        return tracer_provider
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        return current
    if not isinstance(current, trace.ProxyTracerProvider):
        raise TypeError(
            f"the global tracer provider is a {type(current).__name__}, not an SDK TracerProvider: "
            "pass tracer_provider= to instrument()"
        )
    provider = TracerProvider(resource=Resource.create())
    trace.set_tracer_provider(provider)
    return provider


def _telemetry(meter_provider: MeterProvider | None, logger_provider: LoggerProvider | None) -> PipelineTelemetry:
    config = TelemetryConfig.from_env()
    return create_telemetry(
        meter_provider, logger_provider, enabled=config.enabled, max_attribute_values=config.max_attribute_values
    )


def instrument(
    registry: Matcher,
    *,
    tracer_provider: TracerProvider | None = None,
    exporter: SpanExporter | None = None,
    next_processor: SpanProcessor | None = None,
    config: PipelineConfig | None = None,
    telemetry: PipelineTelemetry | None = None,
    meter_provider: MeterProvider | None = None,
    logger_provider: LoggerProvider | None = None,
) -> ToolscoreSpanProcessor:
    """Score agent runs as their spans end; returns the processor (its `shutdown` flushes everything).

    - `registry`: the expectations (`toolscore.collector.registry.Registry`, or anything with `match`).
    - `tracer_provider`: where to add the processor; default the global one (a new SDK provider is
      installed when the global is still the API's proxy).
    - `next_processor`: what scored spans go on to; default ``BatchSpanProcessor(exporter)``, with
      `exporter` defaulting to `span_exporter_from_env()`. With ``OTEL_TRACES_EXPORTER=none`` spans
      are scored and then dropped.
    - `config`: default the `PipelineConfig` defaults overridden by ``TOOLSCORE_PIPELINE__*`` variables
      (the names `toolscore serve` reads; a bad value is logged and that key keeps its default).
    - `telemetry`: default the OTel implementation on `meter_provider`/`logger_provider` (global
      ones when None), off when ``TOOLSCORE_TELEMETRY_ENABLED=false`` or ``OTEL_SDK_DISABLED=true``.

    Called again for a provider it already instrumented (and not shut down), it logs a warning and
    returns the first processor, ignoring the other arguments.
    """
    if next_processor is not None and exporter is not None:
        raise ValueError("pass either exporter= or next_processor=, not both: the exporter would be unused")
    provider = _sdk_tracer_provider(tracer_provider)
    existing = _instrumented.get(provider)
    if existing is not None and not existing.is_shut_down:
        _log.warning(
            "toolscore.instrument() was called again for the same tracer provider: keeping the first "
            "processor and ignoring this call's arguments (a second would export every span twice)"
        )
        return existing
    if next_processor is None:
        exporter = exporter if exporter is not None else span_exporter_from_env()
        next_processor = BatchSpanProcessor(exporter) if exporter is not None else SpanProcessor()
    if telemetry is None:
        telemetry = _telemetry(meter_provider, logger_provider)
    if config is None:
        config = pipeline_config_from_env()
    processor = ToolscoreSpanProcessor(registry, next_processor, config=config, telemetry=telemetry)
    provider.add_span_processor(processor)
    _instrumented[provider] = processor
    return processor
