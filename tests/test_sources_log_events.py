"""Which OTLP log records are read as GenAI events, and how: protobuf and OTLP/JSON alike, older emitters too."""

from __future__ import annotations

from typing import Any

from google.protobuf.json_format import MessageToJson
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue, KeyValueList

from tests.genai_log_exports import otlp_json
from toolscore.collector.sources import BODY_KEY, LogRefusals
from toolscore.collector.sources.log_events import merge_events
from toolscore.collector.sources.otlp_json_values import json_loads
from toolscore.collector.sources.otlp_logs import events_from_logs_json, events_from_logs_request
from toolscore.collector.spans import SpanEvent, SpanRecord

TRACE_ID, SPAN_ID = bytes.fromhex("5b8efff798038103d269b633813fc60c"), bytes.fromhex("eee19b7ec3c1b174")


def _request(*records: dict[str, Any]) -> ExportLogsServiceRequest:
    request = ExportLogsServiceRequest()
    scope = request.resource_logs.add().scope_logs.add()
    for fields in records:
        record = scope.log_records.add(observed_time_unix_nano=1_700_000_000_000_000_000)
        attributes = fields.pop("attributes", {})
        body = fields.pop("body", None)
        if body is not None:
            record.body.CopyFrom(body)
        for name, value in fields.items():
            setattr(record, name, value)
        for name, value in attributes.items():
            record.attributes.append(KeyValue(key=name, value=AnyValue(string_value=value)))
    return request


def _both(request: ExportLogsServiceRequest) -> list[tuple[list[tuple[str, str, SpanEvent]], dict[str, int]]]:
    """What the protobuf reader and the OTLP/JSON reader make of the same request."""
    out = []
    for read in (
        lambda refusals: events_from_logs_request(request, refusals),
        lambda refusals: events_from_logs_json(json_loads(otlp_json(request)), refusals),
    ):
        refusals = LogRefusals()
        events = read(refusals)
        out.append(([(e.trace_id, e.span_id, e.event) for e in events], refusals.counts))
    return out


def test_a_choice_record_becomes_an_event_of_its_span_with_its_body_decoded() -> None:
    message = KeyValueList(values=[KeyValue(key="role", value=AnyValue(string_value="assistant"))])
    body = AnyValue(kvlist_value=KeyValueList(values=[KeyValue(key="message", value=AnyValue(kvlist_value=message))]))
    request = _request(
        {"event_name": "gen_ai.choice", "trace_id": TRACE_ID, "span_id": SPAN_ID, "time_unix_nano": 5, "body": body}
    )
    for events, refused in _both(request):
        assert events == [
            (
                TRACE_ID.hex(),
                SPAN_ID.hex(),
                SpanEvent("gen_ai.choice", 5, {BODY_KEY: {"message": {"role": "assistant"}}}),
            )
        ]
        assert refused == {}


def test_the_event_name_attribute_of_older_emitters_names_the_event_and_observed_time_stands_in() -> None:
    request = _request({"trace_id": TRACE_ID, "span_id": SPAN_ID, "attributes": {"event.name": "gen_ai.tool.message"}})
    for events, _ in _both(request):
        assert [(event.name, event.time_ns) for _, _, event in events] == [
            ("gen_ai.tool.message", 1_700_000_000_000_000_000)
        ]


def test_records_not_read_are_counted_by_reason() -> None:
    request = _request(
        {"trace_id": TRACE_ID, "span_id": SPAN_ID, "body": AnyValue(string_value="a plain log line")},
        {"event_name": "gen_ai.choice"},  # no span context
        {"event_name": "gen_ai.evaluation.result", "trace_id": TRACE_ID, "span_id": SPAN_ID},
        {"event_name": "gen_ai.user.message", "trace_id": bytes(16), "span_id": SPAN_ID},  # zeros: none either
    )
    for events, refused in _both(request):
        assert events == []
        assert refused == {"not_genai_event": 1, "no_span_context": 2, "evaluation_result": 1}


def test_an_otlp_json_id_that_is_neither_hex_nor_base64_of_its_size_is_invalid() -> None:
    document = json_loads(
        otlp_json(_request({"event_name": "gen_ai.choice", "trace_id": TRACE_ID, "span_id": SPAN_ID}))
    )
    document["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["spanId"] = "7uGbfsPBsX"  # 10 characters
    refusals = LogRefusals()
    assert events_from_logs_json(document, refusals) == []
    assert refusals.counts == {"invalid": 1}
    assert "1 ids that are neither hex (OTLP/JSON) nor base64" in refusals.message


def test_otlp_json_log_ids_in_base64_as_message_to_json_writes_them_are_read() -> None:
    request = _request({"event_name": "gen_ai.choice", "trace_id": TRACE_ID, "span_id": SPAN_ID})
    refusals = LogRefusals()
    (event,) = events_from_logs_json(json_loads(MessageToJson(request)), refusals)
    assert (event.trace_id, event.span_id, refusals.counts) == (TRACE_ID.hex(), SPAN_ID.hex(), {})


def test_merging_keeps_time_order_and_leaves_out_what_the_span_has() -> None:
    span = SpanRecord("t" * 32, "s" * 16, None, "chat", events=(SpanEvent("exception", 20, {}),))
    first, second = SpanEvent("gen_ai.user.message", 10, {}), SpanEvent("gen_ai.choice", 30, {})
    assert merge_events(span, [second, first, second]) == [second, first]
    assert merge_events(span, [first]) == []
    assert [event.time_ns for event in span.events] == [10, 20, 30]
