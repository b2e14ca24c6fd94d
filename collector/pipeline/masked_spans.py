"""What the in-process processor passes on under masking: each span's content masked as `serve` forwards it.

`ToolscoreSpanProcessor` sits in front of the application's exporter, so, as `serve` in the trace path, it is
where the application's spans would leave with the arguments, the request and the messages that the privacy
settings mask in the runs. When those settings change anything, `next` is wrapped in `MaskingSpanProcessor`:
every span reaches it as a copy whose attributes, event and link attributes, status description and resource
attributes went through `privacy_text.mask_attributes`, the rule `serve`'s forwarding and a run's own
attributes follow, so a value gets the same marker in the exported spans as in the scores. Without such
settings `next` is used as given, and spans pass untouched.

The cost is on the thread that hands the span on (the application's, for a span of a trace with no agent
marker, which the processor passes on unread): a copy of the span and a look at each string attribute.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import Link, Status

from toolscore.collector.extract.privacy import Masker, PrivacyConfig, masker_for
from toolscore.collector.extract.privacy_text import attribute_text, mask_attributes

__all__ = ["MaskingSpanProcessor", "masked_span", "masking"]


def masking(next_processor: SpanProcessor, privacy: PrivacyConfig) -> SpanProcessor:
    """`next_processor` behind a `MaskingSpanProcessor` when `privacy` masks anything; itself otherwise."""
    return MaskingSpanProcessor(next_processor, privacy) if privacy.active else next_processor


class MaskingSpanProcessor(SpanProcessor):
    """Hands `next` each ended span with its content masked (`masked_span`); everything else as it comes."""

    def __init__(self, next_processor: SpanProcessor, privacy: PrivacyConfig) -> None:
        self.next = next_processor
        self._masker = masker_for(privacy)
        self._resources: tuple[Resource, Resource] | None = None
        """The last resource seen and its masked copy: a provider's spans share one."""

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.next.on_start(span, parent_context=parent_context)

    def _on_ending(self, span: Span) -> None:
        hook = getattr(self.next, "_on_ending", None)  # SDKs < 1.31: none
        if hook is not None:
            hook(span)

    def on_end(self, span: ReadableSpan) -> None:
        self.next.on_end(masked_span(span, self._masker, self._resource(span.resource)))

    def _resource(self, resource: Resource) -> Resource:
        last = self._resources
        if last is not None and last[0] is resource:
            return last[1]
        masked = Resource(mask_attributes(resource.attributes, self._masker), resource.schema_url)
        self._resources = (resource, masked)
        return masked

    def shutdown(self) -> None:
        self.next.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.next.force_flush(timeout_millis)


class _MaskedSpan(ReadableSpan):
    """A span's masked copy, reporting the counts the SDK's limits dropped from the original (as
    `processor._EnrichedSpan` does: a `ReadableSpan` built from plain collections reports 0 for each)."""

    def __init__(self, span: ReadableSpan, masker: Masker, resource: Resource) -> None:
        status = span.status
        if status.description:
            status = Status(status.status_code, attribute_text("status.message", status.description, masker) or "")
        super().__init__(
            name=span.name,
            context=span.context,
            parent=span.parent,
            resource=resource,
            attributes=_masked(span.attributes, masker),
            events=tuple(Event(e.name, _masked(e.attributes, masker), e.timestamp) for e in span.events),
            links=tuple(Link(link.context, _masked(link.attributes, masker)) for link in span.links),
            kind=span.kind,
            status=status,
            start_time=span.start_time,
            end_time=span.end_time,
            instrumentation_scope=span.instrumentation_scope,
        )
        self._dropped = (span.dropped_attributes, span.dropped_events, span.dropped_links)

    @property
    def dropped_attributes(self) -> int:
        return self._dropped[0]

    @property
    def dropped_events(self) -> int:
        return self._dropped[1]

    @property
    def dropped_links(self) -> int:
        return self._dropped[2]


def masked_span(span: ReadableSpan, masker: Masker, resource: Resource | None = None) -> ReadableSpan:
    """A copy of `span` with its content masked (`resource`: its resource masked already, if known)."""
    if resource is None:
        resource = Resource(mask_attributes(span.resource.attributes, masker), span.resource.schema_url)
    return _MaskedSpan(span, masker, resource)


def _masked(attributes: Any, masker: Masker) -> dict[str, Any]:
    return mask_attributes(attributes or {}, masker)
