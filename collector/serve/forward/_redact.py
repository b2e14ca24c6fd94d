"""What `serve` forwards when masking is on: the spans' content attributes masked as the runs are.

Masking the runs toolscore rebuilds is not enough when `serve` sits in the trace path: the application's own
spans, forwarded downstream, still carry the arguments, the request and the messages. So, only when the privacy
settings change anything, each request is rewritten before it is handed to the forwarder (`redacting` wraps its
`submit`), as the Collector's `redaction` processor would: every string attribute of every span and span event
(and the status message) goes through the run's `Masker`, so a value gets the same marker in the forwarded
spans as in the scores. Without such settings the received bytes pass through untouched.

The rule for a string's text is `privacy_text.attribute_text`, the one a run's own attributes are kept by:
JSON text masked inside with the key rules at any depth, other text masked whole on a pattern match; under
`names_only`, content attributes (`gen_ai.tool.call.arguments`, `input.value`, ...) keep their JSON's keys only
or are dropped, other strings (names, ids, models) and numbers are kept. Resource and link attributes go
through it too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from toolscore.collector.extract.privacy import Masker, PrivacyConfig, masker_for
from toolscore.collector.extract.privacy_text import attribute_text, names_content

__all__ = ["redact_request", "redacting"]

Send = Callable[[bytes, int], Any]


def redacting(send: Send, privacy: PrivacyConfig) -> Send:
    """`send` with each request masked first; `send` itself when the settings change nothing."""
    if not privacy.active:
        return send
    masker = masker_for(privacy)

    def send_masked(request: bytes, spans: int) -> Any:
        return send(redact_request(request, masker), spans)

    return send_masked


def redact_request(data: bytes, masker: Masker) -> bytes:
    """A serialized `ExportTraceServiceRequest` with its spans' content masked (see the module docstring)."""
    request = ExportTraceServiceRequest.FromString(data)
    for resource_spans in request.resource_spans:
        _redact_attributes(resource_spans.resource.attributes, masker)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                _redact_attributes(span.attributes, masker)
                for event in span.events:
                    _redact_attributes(event.attributes, masker)
                for link in span.links:
                    _redact_attributes(link.attributes, masker)
                if span.status.message:
                    span.status.message = attribute_text("status.message", span.status.message, masker) or ""
    out: bytes = request.SerializeToString()
    return out


def _redact_attributes(attributes: Any, masker: Masker) -> None:
    dropped = []
    for index, kv in enumerate(attributes):
        if not _redact_value(kv.key, kv.value, masker):
            dropped.append(index)
    for index in reversed(dropped):
        del attributes[index]


def _redact_value(key: str, value: Any, masker: Masker) -> bool:
    """Mask an `AnyValue` in place; False when it is to be dropped."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        text = attribute_text(key, value.string_value, masker)
        if text is None:
            return False
        value.string_value = text
    elif kind == "array_value":
        items = value.array_value.values
        dropped = [i for i, item in enumerate(items) if not _redact_value(key, item, masker)]
        for index in reversed(dropped):
            del items[index]
    elif kind == "kvlist_value":
        _redact_attributes(value.kvlist_value.values, masker)
    elif kind == "bytes_value" and masker.names_only and names_content(key):
        return False
    return True
