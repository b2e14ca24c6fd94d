"""What `serve` forwards under masking: content attributes masked as the runs are, everything else as received."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue

from tests.privacy_runs import ARGS, MASKING
from toolscore.collector.extract.privacy import PrivacyConfig, mask_run, masker_for
from toolscore.collector.serve.forward._redact import redact_request, redacting
from toolscore.scorers import AgentRun, ToolCall

PRIVACY = PrivacyConfig.model_validate(MASKING)
OPENAI_CALL = {"tool_calls": [{"function": {"name": "charge", "arguments": json.dumps(ARGS)}}]}


def _kv(key: str, value: Any) -> KeyValue:
    if isinstance(value, tuple):
        return KeyValue(key=key, value=AnyValue(array_value=ArrayValue(values=[_kv(key, v).value for v in value])))
    any_value = AnyValue(string_value=value) if isinstance(value, str) else AnyValue(int_value=value)
    return KeyValue(key=key, value=any_value)


def _request() -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.append(_kv("team.owner", "ada.lovelace@example.com"))
    span = resource_spans.scope_spans.add().spans.add()
    span.name = "execute_tool charge"
    span.attributes.extend(
        [
            _kv("gen_ai.tool.name", "charge"),
            _kv("gen_ai.tool.call.arguments", json.dumps(ARGS)),
            _kv("llm.output_messages.0.message", json.dumps(OPENAI_CALL)),
            _kv("input.value", "Charge my card and mail ada.lovelace@example.com"),
            _kv("gen_ai.usage.input_tokens", 42),
            _kv("toolscore.tool_calls", ("charge",)),  # what toolscore adds to a run span it scored
        ]
    )
    span.links.add().attributes.append(_kv("note", "from ada.lovelace@example.com"))
    event = span.events.add()
    event.name = "gen_ai.user.message"
    event.attributes.append(_kv("content", "mail ada.lovelace@example.com"))
    return request


def _attributes(data: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    span = ExportTraceServiceRequest.FromString(data).resource_spans[0].scope_spans[0].spans[0]
    values = {kv.key: _plain(kv.value) for kv in span.attributes}
    event = {kv.key: kv.value.string_value for kv in span.events[0].attributes}
    return values, event


def _plain(value: AnyValue) -> Any:
    if value.WhichOneof("value") == "array_value":
        return tuple(_plain(v) for v in value.array_value.values)
    return getattr(value, value.WhichOneof("value"))


def test_forwarded_content_is_masked_with_the_markers_the_run_gets() -> None:
    data = redact_request(_request().SerializeToString(), masker_for(PRIVACY))
    for secret in (b"ada.lovelace", b"sk-live", b"4111 1111"):
        assert secret not in data
    span, event = _attributes(data)
    run = mask_run(AgentRun(calls=(ToolCall(name="charge", args=ARGS, args_state="value"),)), PRIVACY)
    assert json.loads(span["gen_ai.tool.call.arguments"]) == run.calls[0].args  # the same markers
    nested = json.loads(json.loads(span["llm.output_messages.0.message"])["tool_calls"][0]["function"]["arguments"])
    assert nested == run.calls[0].args  # JSON text inside JSON: the arguments of an OpenAI tool call
    assert span["gen_ai.tool.name"] == "charge"
    assert span["gen_ai.usage.input_tokens"] == 42
    assert span["input.value"].startswith("«masked:")
    assert event["content"].startswith("«masked:")


def test_names_only_keeps_keys_drops_text_and_leaves_names_and_numbers() -> None:
    masker = masker_for(PrivacyConfig(content="names_only", hash_key="k"))
    span, event = _attributes(redact_request(_request().SerializeToString(), masker))
    assert json.loads(span["gen_ai.tool.call.arguments"])["card"] == {"number": None, "holder": None}
    assert "input.value" not in span
    assert "content" not in event
    assert span["toolscore.tool_calls"] == ("charge",)  # toolscore's own attributes, written from masked runs
    assert span["gen_ai.tool.name"] == "charge"
    assert span["gen_ai.usage.input_tokens"] == 42


def test_without_masking_the_forwarder_gets_the_received_bytes_untouched() -> None:
    def send(request: bytes, spans: int) -> bool:
        return True

    assert redacting(send, PrivacyConfig()) is send
    assert redacting(send, PRIVACY) is not send
