"""`instrument(registry)`: score an application's agent runs in-process with one call.

    toolscore.collector.instrument(registry=Registry(config=RegistryConfig(...)))

It puts a `ToolscoreSpanProcessor` in front of the application's span export, so scored run spans
leave with their score attributes and events, and every other span leaves unchanged, once:
- a tracer provider that already has span processors (the application's own `BatchSpanProcessor`,
  `opentelemetry-instrument`'s, a vendor's) keeps them, moved behind toolscore. Adding an exporter
  beside them would send every span twice, and each run span once unscored;
- a provider without any gets the export the standard ``OTEL_*`` variables describe
  (``BatchSpanProcessor(OTLPSpanExporter())`` by default).
The GenAI events an application emits as log records (the GenAI conventions' default form: message
content and tool calls on log records tied to the chat span) reach toolscore through its
`ToolscoreLogProcessor`, added to the application's SDK `LoggerProvider` (the one given, else the global
one): the records' own export is unchanged. Without an SDK logger provider at `instrument()` time, the
instrumentations' events go to the API's no-op and toolscore reads what the spans carry; an application
that sets its provider later adds `processor.log_record_processor()` to it itself.
Self-telemetry goes to the application's global meter and logger providers when it has set SDK ones;
otherwise to providers of toolscore's own built from the ``OTEL_*`` variables, when they name an export
(as `opentelemetry-instrument` would), so metrics and evaluation events are not lost to the API's no-op.
"""

from __future__ import annotations

import logging
import weakref

from opentelemetry import _logs, metrics, trace
from opentelemetry._logs import LoggerProvider, NoOpLoggerProvider
from opentelemetry.metrics import MeterProvider, NoOpMeterProvider
from opentelemetry.sdk._logs import LoggerProvider as SdkLoggerProvider
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import (
    ConcurrentMultiSpanProcessor,
    SpanProcessor,
    SynchronousMultiSpanProcessor,
    TracerProvider,
)
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from toolscore.collector import env
from toolscore.collector.pipeline import Matcher, PipelineConfig, ToolscoreSpanProcessor, pipeline_config_from_env
from toolscore.collector.telemetry import PipelineTelemetry, create_telemetry
from toolscore.collector.telemetry.setup import (
    TelemetryConfig,
    TelemetrySetup,
    build_logger_provider,
    build_meter_provider,
    otlp_protocol,
)
from toolscore.scorers._llm_judge_trace import JUDGE_SCOPE

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


def _telemetry(
    meter_provider: MeterProvider | None, logger_provider: LoggerProvider | None, resource: Resource
) -> tuple[PipelineTelemetry, TelemetrySetup | None]:
    """The telemetry, and the providers built for it (None when it uses the given or global ones).

    A signal gets a provider of toolscore's own only when none was given, the application has not set a
    global one (an SDK provider, or the API's no-op on purpose), and the ``OTEL_*`` variables name an
    export for it: the global is then still the API's proxy, which drops everything until the
    application sets one, and an application that never does would lose every metric and event.
    """
    config = TelemetryConfig.from_env()
    if not config.enabled:
        return create_telemetry(enabled=False), None
    built_meter = built_logger = None
    server = None
    if meter_provider is None and not isinstance(metrics.get_meter_provider(), (SdkMeterProvider, NoOpMeterProvider)):
        built_meter, server = build_meter_provider(config, resource)
    if logger_provider is None and not isinstance(_logs.get_logger_provider(), (SdkLoggerProvider, NoOpLoggerProvider)):
        built_logger = build_logger_provider(config, resource)
    telemetry = create_telemetry(
        meter_provider or built_meter,
        logger_provider or built_logger,
        enabled=True,
        max_attribute_values=config.max_attribute_values,
        max_agent_versions=config.max_agent_versions,
    )
    if built_meter is None and built_logger is None:
        return telemetry, None
    return telemetry, TelemetrySetup(telemetry, built_meter, built_logger, server)


class _Flushes(SpanProcessor):
    """Behind the export: flushes and shuts down the telemetry providers `instrument` built, after the
    spans (the processor's `force_flush` and `shutdown` reach it once the last scores are recorded)."""

    def __init__(self, setup: TelemetrySetup) -> None:
        self.setup = setup

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.setup.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self.setup.shutdown()


def _chain(*processors: SpanProcessor) -> SynchronousMultiSpanProcessor:
    """One processor calling each in turn, as the provider calls its own."""
    chained = SynchronousMultiSpanProcessor()  # type: ignore[no-untyped-call]  # the SDK's __init__ is unannotated
    for processor in processors:
        chained.add_span_processor(processor)
    return chained


def _span_processors(provider: TracerProvider) -> SynchronousMultiSpanProcessor | ConcurrentMultiSpanProcessor | None:
    """The SDK's list of the provider's processors; None when it is not the shape expected.

    The SDK offers no public way to read or reorder a provider's processors. Its `_active_span_processor`
    (a multi-processor holding a tuple, `_span_processors`, swapped under `_lock`) has kept that shape
    since 1.0; checked here rather than assumed, so another shape falls back to adding an export.
    """
    active = getattr(provider, "_active_span_processor", None)
    if isinstance(active, (SynchronousMultiSpanProcessor, ConcurrentMultiSpanProcessor)) and isinstance(
        getattr(active, "_span_processors", None), tuple
    ):
        return active
    return None


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
    - `next_processor`: what scored spans go on to. Default: the span processors the provider already
      has, moved behind toolscore (see the module docstring); a provider without any gets
      ``BatchSpanProcessor(exporter)``, with `exporter` defaulting to `span_exporter_from_env()`
      (``OTEL_TRACES_EXPORTER=none``: spans are scored and then dropped). Passing `exporter` or
      `next_processor` leaves the provider's processors where they are, beside toolscore.
    - `config`: default the `PipelineConfig` defaults overridden by ``TOOLSCORE_PIPELINE__*`` variables
      (the names `toolscore serve` reads; a bad value is logged and that key keeps its default).
    - `telemetry`: default the OTel implementation on `meter_provider`/`logger_provider`; when None,
      the application's global ones if it has set them, else ones built from the ``OTEL_*`` variables
      (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_METRICS_EXPORTER=prometheus``...), flushed and shut
      down with the processor. Off when ``TOOLSCORE_TELEMETRY_ENABLED=false`` or ``OTEL_SDK_DISABLED=true``.

    Called again for a provider it already instrumented, or that has a `ToolscoreSpanProcessor` wired by
    hand (and not shut down), it logs a warning and returns that processor, ignoring the other arguments.
    """
    if next_processor is not None and exporter is not None:
        raise ValueError("pass either exporter= or next_processor=, not both: the exporter would be unused")
    provider = _sdk_tracer_provider(tracer_provider)
    active = _span_processors(provider)
    found = active._span_processors if active is not None else ()
    existing = _instrumented.get(provider) or next((p for p in found if isinstance(p, ToolscoreSpanProcessor)), None)
    if existing is not None and not existing.is_shut_down:
        _log.warning(
            "toolscore.instrument() was called again for the same tracer provider: keeping the first "
            "processor and ignoring this call's arguments (a second would export every span twice)"
        )
        return existing
    behind = None
    if next_processor is None and exporter is None and active is not None and found:
        next_processor = behind = _chain()  # filled with `found` below, when swapped in
    elif next_processor is None:
        exporter = exporter if exporter is not None else span_exporter_from_env()
        next_processor = BatchSpanProcessor(exporter) if exporter is not None else SpanProcessor()
    if telemetry is None:
        telemetry, owned = _telemetry(meter_provider, logger_provider, provider.resource)
        if owned is not None:
            next_processor = _chain(next_processor, _Flushes(owned))
    if config is None:
        config = pipeline_config_from_env()
    judge_tracer = provider.get_tracer(JUDGE_SCOPE)
    processor = ToolscoreSpanProcessor(
        registry, next_processor, config=config, telemetry=telemetry, judge_tracer=judge_tracer
    )
    if active is not None and behind is not None:
        with active._lock:  # one swap: every span ends through the old processors or through toolscore, once
            moved = active._span_processors
            for previous in moved:
                behind.add_span_processor(previous)
            active._span_processors = (processor,)
        _log.info(
            "toolscore.instrument(): the tracer provider's span processors (%s) now receive every span "
            "through toolscore, run spans with their scores; no exporter of toolscore's own was added",
            ", ".join(type(p).__name__ for p in moved),
        )
    else:
        provider.add_span_processor(processor)
    _instrumented[provider] = processor
    _read_log_events(processor, logger_provider)
    return processor


def _read_log_events(processor: ToolscoreSpanProcessor, logger_provider: LoggerProvider | None) -> None:
    """Add the processor's log record processor to the application's SDK logger provider, if it has one."""
    provider = logger_provider if logger_provider is not None else _logs.get_logger_provider()
    if isinstance(provider, SdkLoggerProvider):
        provider.add_log_record_processor(processor.log_record_processor())
        return
    _log.info(
        "toolscore.instrument(): no SDK LoggerProvider (global or given), so GenAI events emitted as log records "
        "are not read; add processor.log_record_processor() to the LoggerProvider the application sets"
    )
