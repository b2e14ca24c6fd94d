"""Where `serve` sends the `chat` spans of its LLM-judge requests: downstream, with the spans it forwards.

A judge request is debugged from the trace backend the agent's spans go to (see
`toolscore.scorers._llm_judge_trace`), so `serve` hands each judge span to its forwarder as an OTLP request of
its own, under the resource `service.name=toolscore` (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES add to
it). Judge requests are few (the judge budget bounds them per minute), so each span is encoded as it ends, on
the judge's thread, with no batching thread; a full forward queue drops it as it drops any request, counted.
Without a downstream there is nowhere to send them, and no tracer is built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Tracer

from toolscore.scorers._llm_judge_trace import JUDGE_SCOPE

__all__ = ["ForwardedSpanExporter", "judge_tracer"]


class ForwardedSpanExporter(SpanExporter):
    """Encodes finished spans as one OTLP request and submits it to the forwarder (`submit(request, spans)`)."""

    def __init__(self, submit: Callable[[bytes, int], bool]) -> None:
        self._submit = submit

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not spans:
            return SpanExportResult.SUCCESS
        request = encode_spans(spans).SerializeToString()
        return SpanExportResult.SUCCESS if self._submit(request, len(spans)) else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        """Nothing to release: the forwarder is shut down by its owner."""


def judge_tracer(submit: Callable[[bytes, int], bool]) -> tuple[Tracer, TracerProvider]:
    """The tracer judge requests are traced with, and its provider (to shut down with the pipeline)."""
    provider = TracerProvider(resource=Resource.create({"service.name": "toolscore"}))
    provider.add_span_processor(SimpleSpanProcessor(ForwardedSpanExporter(submit)))
    return provider.get_tracer(JUDGE_SCOPE), provider
