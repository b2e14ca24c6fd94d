"""The pytest plugin's view of the application's global tracer provider: spans an agent makes without being
pointed at `toolscore_runs.tracer_provider`.

Most instrumentations default to the global tracer provider, and an application (or its conftest) that set an
OpenTelemetry SDK `TracerProvider` as the global one before the test would otherwise have its runs go past
the fixture ("runs recorded: none"). So the fixture reads that provider too: the first time, it adds one
`GlobalRelay` span processor to it, which hands each span to the processor of the test under way, and to
nothing between such tests. The provider's own processors and export are untouched (the relay sits beside
them and changes no span), and the SDK offers no way to remove a processor, hence one relay per provider,
retargeted by each test. A global provider that is still the API's proxy when the test starts, or one that is
not the SDK's, cannot be read: `missing_spans_hint` says which, and to pass `toolscore_runs.tracer_provider`.
"""

from __future__ import annotations

import threading
import weakref

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider

__all__ = ["GlobalRelay", "attach_to_global", "detach", "missing_spans_hint"]

_relays: weakref.WeakKeyDictionary[TracerProvider, GlobalRelay] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_USE_FIXTURE = "point the agent's instrumentation at `toolscore_runs.tracer_provider`"


class GlobalRelay(SpanProcessor):
    """Beside the global provider's processors: every span to `target` (the current test's), or to nothing."""

    def __init__(self) -> None:
        self.target: SpanProcessor | None = None

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        target = self.target
        if target is not None:
            target.on_start(span, parent_context=parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        target = self.target
        if target is not None:
            target.on_end(span)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Nothing of its own: the fixture flushes its processor when it reads the spans."""
        return True


def attach_to_global(processor: SpanProcessor, own: TracerProvider) -> GlobalRelay | None:
    """Relay the global SDK tracer provider's spans to `processor` (until `detach`); None when the global one is
    not an SDK provider, or is the fixture's own."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider) or provider is own:
        return None
    with _lock:
        relay = _relays.get(provider)
        if relay is None:
            relay = _relays[provider] = GlobalRelay()
            provider.add_span_processor(relay)
        relay.target = processor
    return relay


def detach(relay: GlobalRelay | None, processor: SpanProcessor) -> None:
    """The test is over: its processor takes no more spans from the global provider."""
    if relay is not None and relay.target is processor:
        relay.target = None


def missing_spans_hint(attached: bool) -> str:
    """What to do when the fixture recorded no span at all, given whether it read the global provider."""
    if attached:
        return f"no span was ended on `toolscore_runs.tracer_provider` or on the global tracer provider: {_USE_FIXTURE}"
    provider = trace.get_tracer_provider()
    if isinstance(provider, TracerProvider):
        return (
            "no span was recorded; the global tracer provider was set during the test, after `toolscore_runs` "
            f"started, so its spans were not read: set it before the test (a fixture or conftest.py), or {_USE_FIXTURE}"
        )
    if isinstance(provider, trace.ProxyTracerProvider):
        return f"no span was recorded, and no global tracer provider is set: {_USE_FIXTURE}"
    return (
        f"no span was recorded; the global tracer provider is a {type(provider).__name__}, not an OpenTelemetry SDK "
        f"TracerProvider, so its spans cannot be read: {_USE_FIXTURE}"
    )
