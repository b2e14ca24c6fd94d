"""OTLP/JSON → ExportTraceServiceRequest conversion, and the receiver configuration's rules."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from pydantic import ValidationError

from tests.serve_receiver_support import TRACE_ID, json_request, json_span
from toolscore.collector.serve.receivers import ReceiverConfig
from toolscore.collector.serve.receivers._config import DEFAULT_MAX_MESSAGE_BYTES, split_endpoint
from toolscore.collector.serve.receivers._http_body import BodyTooLarge, gunzip_bounded, media_format
from toolscore.collector.serve.receivers._otlp_export import BadPayload
from toolscore.collector.serve.receivers._otlp_json_request import request_from_json
from toolscore.collector.sources.errors import MAX_MESSAGE_CHARS


def _decode(document: Any) -> Any:
    return request_from_json(json.dumps(document).encode())


def _spans(result: Any) -> list[Any]:
    return [span for rs in result.request.resource_spans for ss in rs.scope_spans for span in ss.spans]


def test_ids_are_hex_in_any_case_and_links_are_converted() -> None:
    link = {"traceId": TRACE_ID.upper(), "spanId": "00F067AA0BA902B7", "attributes": []}
    result = _decode(json_request(json_span("a", span_id="EEE19B7EC3C1B174", links=[link])))
    (span,) = _spans(result)
    assert (span.trace_id.hex(), span.span_id.hex(), span.parent_span_id) == (TRACE_ID, "eee19b7ec3c1b174", b"")
    assert (span.links[0].trace_id.hex(), span.links[0].span_id.hex()) == (TRACE_ID, "00f067aa0ba902b7")
    assert result.rejected_spans == 0
    assert result.error_message == ""


def test_base64_ids_as_the_protobuf_json_mapping_writes_them_are_read_as_hex_ids_are() -> None:
    """`MessageToJson` writes ids in base64 (24 and 12 characters); OTLP/JSON in hex: the same span either way."""
    link = {"traceId": TRACE_ID, "spanId": "00f067aa0ba902b7"}
    hex_span = json_span("a", span_id="fbff19b7ec3c1b17", parentSpanId="00f067aa0ba902b7", links=[link])
    as_base64 = {key: base64.b64encode(bytes.fromhex(hex_span[key])).decode() for key in ("traceId", "spanId")}
    base64_span = hex_span | as_base64 | {"parentSpanId": "APBnqgupArc", "links": [link | {"spanId": "APBnqgupArc="}]}
    assert as_base64["spanId"] == "+/8Zt+w8Gxc="
    (from_hex,), (from_base64,) = _spans(_decode(json_request(hex_span))), _spans(_decode(json_request(base64_span)))
    assert from_base64 == from_hex
    assert from_base64.parent_span_id.hex() == "00f067aa0ba902b7"


def test_resource_scope_events_status_and_values_are_kept() -> None:
    span = json_span(
        "call",
        status={"code": 2, "message": "failed"},
        events=[{"timeUnixNano": "5", "name": "exception", "attributes": []}],
        attributes=[
            {"key": "n", "value": {"intValue": "42"}},
            {"key": "xs", "value": {"arrayValue": {"values": [{"boolValue": True}, {"doubleValue": 1.5}]}}},
        ],
    )
    result = _decode(json_request(span))
    resource_spans = result.request.resource_spans[0]
    assert resource_spans.resource.attributes[0].value.string_value == "agent"
    assert resource_spans.scope_spans[0].scope.name == "receiver-test"
    (out,) = _spans(result)
    assert (out.status.code, out.status.message, out.events[0].name, out.events[0].time_unix_nano) == (
        2,
        "failed",
        "exception",
        5,
    )
    assert out.attributes[0].value.int_value == 42
    assert [v.WhichOneof("value") for v in out.attributes[1].value.array_value.values] == ["bool_value", "double_value"]


def test_snake_case_names_enum_names_and_unknown_fields_are_accepted() -> None:
    span = {
        "trace_id": TRACE_ID,
        "span_id": "eee19b7ec3c1b174",
        "parent_span_id": "00f067aa0ba902b7",
        "name": "snake",
        "kind": "SPAN_KIND_CLIENT",
        "start_time_unix_nano": 7,
        "someFutureField": {"x": 1},
    }
    document = {"resource_spans": [{"scope_spans": [{"spans": [span]}], "newThing": 1}]}
    (out,) = _spans(_decode(document))
    assert (out.name, out.kind, out.start_time_unix_nano, out.parent_span_id.hex()) == (
        "snake",
        3,
        7,
        "00f067aa0ba902b7",
    )


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"traceId": "abc"}, "traceId 'abc' is not 32 hex digits (OTLP"),
        ({"traceId": "0" * 32}, f"traceId '{'0' * 32}' is all zeros, which is not a valid id"),
        ({"spanId": "W47/bCZ2PQ=="}, "spanId 'W47/bCZ2PQ==' is not 16 hex digits (OTLP/JSON) nor 12 base64"),
        ({"spanId": None}, "spanId None"),
        ({"parentSpanId": "123"}, "parentSpanId '123' is not 16 hex digits"),
        ({"spanId": "ab" * 100_000}, "'… (200000 characters) is not 16 hex digits"),
    ],
)
def test_a_span_with_unusable_ids_is_rejected_and_the_others_kept(change: dict[str, Any], expected: str) -> None:
    result = _decode(json_request(json_span("good"), json_span("bad", **change)))
    assert [span.name for span in _spans(result)] == ["good"]
    assert result.rejected_spans == 1
    assert result.error_message.startswith("1 span(s) rejected: resourceSpans[0].scopeSpans[0].spans[1] 'bad': ")
    assert expected in result.error_message


def test_links_to_an_invalid_span_context_are_kept_as_the_protobuf_path_keeps_them() -> None:
    """The OTel API records links whose span context is invalid (all zeros) when they carry attributes."""
    attributes = [{"key": "reason", "value": {"stringValue": "retry"}}]
    links = [
        {"traceId": "0" * 32, "spanId": "0" * 16, "attributes": attributes},
        {"traceId": "", "spanId": "", "attributes": attributes},
        {"attributes": attributes},
        {"traceId": TRACE_ID, "spanId": "00f067aa0ba902b7"},
    ]
    result = _decode(json_request(json_span("linked", links=links)))
    (span,) = _spans(result)
    assert [(link.trace_id, link.span_id, len(link.attributes)) for link in span.links] == [
        (bytes(16), bytes(8), 1),
        (b"", b"", 1),
        (b"", b"", 1),
        (bytes.fromhex(TRACE_ID), bytes.fromhex("00f067aa0ba902b7"), 0),
    ]
    assert (result.rejected_spans, result.error_message) == (0, "")


def test_a_link_whose_id_is_not_hex_is_dropped_and_its_span_kept() -> None:
    links = [{"traceId": TRACE_ID, "spanId": "W47/bCZ2PQ"}, {"traceId": TRACE_ID, "spanId": "00f067aa0ba902b7"}]
    result = _decode(json_request(json_span("linked", links=links), json_span("bad", span_id="xyz")))
    (span,) = _spans(result)
    assert [link.span_id.hex() for link in span.links] == ["00f067aa0ba902b7"]
    assert (result.rejected_spans, result.dropped_links) == (1, 1)
    assert result.error_message == (
        "1 span(s) rejected: resourceSpans[0].scopeSpans[0].spans[1] 'bad': spanId 'xyz' is not 16 hex digits "
        "(OTLP/JSON) nor 12 base64 characters (the protobuf JSON mapping) of a 8-byte id; 1 link(s) dropped, "
        "their spans kept: resourceSpans[0].scopeSpans[0].spans[0] 'linked': links[0].spanId 'W47/bCZ2PQ' is not "
        "16 hex digits (OTLP/JSON) nor 12 base64 characters (the protobuf JSON mapping) of a 8-byte id"
    )


def test_a_rejected_span_without_a_name_is_named_by_its_place_only() -> None:
    nameless = {key: value for key, value in json_span("x", trace_id="zz").items() if key != "name"}
    result = _decode(json_request(nameless))
    assert result.error_message == (
        "1 span(s) rejected: resourceSpans[0].scopeSpans[0].spans[0]: traceId 'zz' is not 32 hex digits "
        "(OTLP/JSON) nor 24 base64 characters (the protobuf JSON mapping) of a 16-byte id"
    )


def test_many_rejections_keep_three_examples_and_count_the_rest() -> None:
    result = _decode(json_request(*(json_span(f"s{i}", span_id="bad") for i in range(5))))
    assert result.rejected_spans == 5
    assert result.error_message.count("spanId 'bad'") == 3
    assert result.error_message.endswith("; and 2 more")


def test_a_huge_bad_id_and_name_are_quoted_short() -> None:
    huge = "Zm9v" * 750_000  # 3 MB of base64 where hex is expected
    result = _decode(json_request(json_span("good"), json_span("x" * 100_000, trace_id=huge)))
    assert [span.name for span in _spans(result)] == ["good"]
    assert result.rejected_spans == 1
    assert len(result.error_message) < 500, result.error_message[:300]
    assert f"traceId {'Zm9v' * 16!r}… (3000000 characters) is not 32 hex digits" in result.error_message
    assert f"spans[1] {'x' * 64!r}… (100000 characters): " in result.error_message
    big_list = _decode(json_request(json_span("good"), json_span("bad", span_id=list(range(1_000_000)))))
    assert len(big_list.error_message) < 300, big_list.error_message[:300]


def test_a_huge_bad_value_is_not_echoed_whole() -> None:
    bad = {"key": "k", "value": {"doubleValue": "9" * 50_000 + "x"}}
    with pytest.raises(BadPayload) as caught:
        _decode(json_request(json_span("s", attributes=[bad])))
    assert len(str(caught.value)) < MAX_MESSAGE_CHARS + 200
    assert str(caught.value).endswith(" more characters")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"[1, 2]", "(document): expected an object, got list"),
        (b'{"resourceSpans": 3}', "resourceSpans: expected a list, got int"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [7]}]}]}', "resourceSpans[0].scopeSpans[0].spans[0]: expected"),
        (b'{"resourceSpans": [{"resource": {"attributes": 5}}]}', "resourceSpans[0].resource: Failed to parse"),
        (b'{"resourceSpans": [', "byte 19: invalid JSON: Expecting value"),
        (b'{\n"resourceSpans": [', "byte 20: invalid JSON: Expecting value at line 2 column 19"),
        (b'{"a": "\xc3\x28"}', "byte 7: invalid UTF-8 (invalid continuation byte): OTLP/JSON must be UTF-8"),
        (b"[" * 100_000, "nested too deeply"),
    ],
)
def test_malformed_documents_say_what_and_where(body: bytes, expected: str) -> None:
    with pytest.raises(BadPayload) as caught:
        request_from_json(body)
    assert expected in str(caught.value)
    assert str(caught.value).count("byte ") <= 1, "the location once, not repeated in the message"


@pytest.mark.parametrize("value", ["https://x/\ud800", {"url": "https://x"}, 5])
@pytest.mark.parametrize("level", ["resource", "scope"])
def test_a_schema_url_that_is_no_protobuf_string_names_its_field(value: object, level: str) -> None:
    document = json_request(json_span("a"))
    resource_spans = document["resourceSpans"][0]
    (resource_spans if level == "resource" else resource_spans["scopeSpans"][0])["schemaUrl"] = value
    with pytest.raises(BadPayload) as caught:
        _decode(document)
    path = "resourceSpans[0]" if level == "resource" else "resourceSpans[0].scopeSpans[0]"
    assert (caught.value.field, caught.value.message.split(":")[0]) == (path, "Failed to parse schemaUrl field")


def test_schema_urls_are_kept() -> None:
    document = json_request(json_span("a"))
    document["resourceSpans"][0]["schemaUrl"] = "https://opentelemetry.io/schemas/1.26.0"
    document["resourceSpans"][0]["scopeSpans"][0]["schema_url"] = "https://opentelemetry.io/schemas/1.21.0"
    resource_spans = _decode(document).request.resource_spans[0]
    assert (resource_spans.schema_url, resource_spans.scope_spans[0].schema_url) == (
        "https://opentelemetry.io/schemas/1.26.0",
        "https://opentelemetry.io/schemas/1.21.0",
    )


def test_values_nested_past_the_runtime_limit_say_so_once() -> None:
    value: dict[str, Any] = {"stringValue": "leaf"}
    for _ in range(40):
        value = {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
    with pytest.raises(BadPayload) as caught:
        _decode(json_request(json_span("deep", attributes=[{"key": "nested", "value": value}])))
    assert str(caught.value) == (
        "resourceSpans[0].scopeSpans[0].spans[0]: Failed to parse attributes field: "
        "messages nested more than 100 deep, the protobuf runtime's limit"
    )


def test_a_field_of_the_wrong_type_names_its_span() -> None:
    with pytest.raises(BadPayload) as caught:
        _decode(json_request(json_span("ok"), json_span("bad") | {"name": 5}))
    assert caught.value.field == "resourceSpans[0].scopeSpans[0].spans[1]"
    assert "name" in caught.value.message


@pytest.mark.parametrize("body", [b"", b"  \n", b"{}"])
def test_an_empty_document_is_an_empty_request(body: bytes) -> None:
    result = request_from_json(body)
    assert list(result.request.resource_spans) == []


# -- body helpers and configuration ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("application/x-protobuf", "proto"),
        ("Application/JSON; charset=utf-8", "json"),
        ("application/protobuf", None),
        ("text/plain", None),
        (None, None),
    ],
)
def test_media_format(content_type: str | None, expected: str | None) -> None:
    assert media_format(content_type) == expected


def test_gunzip_stops_one_byte_past_the_limit() -> None:
    import gzip

    assert gunzip_bounded(gzip.compress(b"x" * 100), 100) == b"x" * 100
    with pytest.raises(BodyTooLarge, match="more than 99 bytes"):
        gunzip_bounded(gzip.compress(b"x" * 100), 99)


def test_receiver_config_defaults() -> None:
    config = ReceiverConfig()
    assert (config.grpc_endpoint, config.http_endpoint) == ("127.0.0.1:4317", "127.0.0.1:4318")
    assert config.max_message_bytes == DEFAULT_MAX_MESSAGE_BYTES == 4 * 1024 * 1024
    assert config.decompressed_limit == config.max_message_bytes
    assert ReceiverConfig(max_decompressed_bytes=10).decompressed_limit == 10
    assert (config.max_spans_per_request, config.max_concurrent_decodes) == (65_536, 2)
    assert not config.tls
    assert config.bearer_token is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"grpc_endpoint": "4317"}, "must be host:port"),
        ({"http_endpoint": "localhost:http"}, "must be host:port"),
        ({"http_endpoint": "localhost:70000"}, "above 65535"),
        ({"tls_cert_file": "cert.pem"}, "must be set together"),
        ({"bearer_token": "  "}, "must not be blank"),
        ({"max_message_bytes": 0}, "greater than 0"),
        ({"max_spans_per_request": 0}, "greater than 0"),
        ({"max_concurrent_decodes": 0}, "greater than 0"),
        ({"grpc_port": 1}, "Extra inputs are not permitted"),
    ],
)
def test_receiver_config_rejects(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ReceiverConfig.model_validate(fields)


def test_split_endpoint_reads_ipv6() -> None:
    assert split_endpoint("[::1]:4318") == ("::1", 4318)
    assert split_endpoint("0.0.0.0:0") == ("0.0.0.0", 0)


def test_mutated_payloads_only_ever_raise_bad_payload() -> None:
    """Seeded byte mutations of a valid protobuf, JSON and gzip body: a clear error or a request, nothing else."""
    import gzip
    import random

    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from tests.serve_receiver_support import sdk_spans
    from toolscore.collector.serve.receivers._otlp_export import parse_proto_request

    rng = random.Random(6)
    proto = encode_spans(sdk_spans("a", "b")).SerializeToString()
    document = json.dumps(json_request(json_span("a", status={"code": 1}), json_span("b"))).encode()
    decoders = (
        (parse_proto_request, proto),
        (request_from_json, document),
        (lambda d: gunzip_bounded(d, 9999), gzip.compress(proto)),
    )
    outcomes = {"ok": 0, "bad": 0}
    for _ in range(1500):
        for decode, valid in decoders:
            data = bytearray(valid)
            for _ in range(rng.randint(1, 6)):
                at = rng.randrange(len(data))
                if rng.random() < 0.5:
                    data[at] = rng.randrange(256)
                else:
                    del data[at : at + rng.randint(1, 16)]
            try:
                decode(bytes(data))
                outcomes["ok"] += 1
            except (BadPayload, BodyTooLarge):
                outcomes["bad"] += 1
    assert outcomes["bad"] > 1000
    assert outcomes["ok"] > 100
