"""The compiled span decoder (`sources/_wire.c`) gives exactly the pure-Python path's records, or gives up.

The pure-Python path (protobuf runtime parse, then `spans_from_request`) is the reference: on every trace
file of tests/testdata, on random well-formed requests built with the protobuf runtime (every value kind,
nesting, duplicate keys, unknown fields, fields in any order, merged messages), and on their byte-level
mutations, the compiled decoder's answer is either None (the pure path decides) or equal to it.
"""

from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from tests.bench.mixed import mixed_batches
from toolscore.collector.sources import spans_from_proto_bytes
from toolscore.collector.sources._accel import load
from toolscore.collector.sources.errors import DecodeStats, SpanDecodeError
from toolscore.collector.sources.otlp_proto import parse_trace_export, spans_from_request
from toolscore.collector.spans import SpanRecord
from toolscore.scorers._accel import PURE_PYTHON_ENV

TESTDATA = Path(__file__).parent / "testdata"
_compiled = load({})


def _decode() -> Any:
    assert _compiled is not None, "the install did not build collector/sources/_wire.c (see setup.py)"
    return _compiled.decode_spans


def _pure(data: bytes) -> list[SpanRecord] | str:
    try:
        return spans_from_request(parse_trace_export(data))
    except SpanDecodeError:
        return "refused"


def _same_or_gave_up(data: bytes) -> bool:
    """Whether the compiled decoder answered (True) or gave up (False); fails on any difference."""
    fast = _decode()(data)
    if fast is None:
        return False
    assert repr(fast) == repr(_pure(data))  # repr: a NaN equals a NaN, and -0.0 differs from 0.0
    return True


def test_the_test_install_builds_the_compiled_decoder() -> None:
    assert _compiled is not None


def test_the_environment_variable_turns_it_off() -> None:
    assert load({PURE_PYTHON_ENV: "1"}) is None
    assert load({PURE_PYTHON_ENV: "0"}) is not None


def test_every_trace_file_decodes_the_same() -> None:
    files = sorted(p for p in TESTDATA.rglob("*.pb") if ".logs." not in p.name)
    assert len(files) >= 150
    answered = [f for f in files if _same_or_gave_up(f.read_bytes())]
    assert answered == files  # every real trace export is a plain one: none left to the slow path


def test_other_exports_and_bad_bytes_are_left_to_the_pure_path() -> None:
    logs = next(TESTDATA.rglob("*.logs.pb")).read_bytes()
    for data in (b"", logs, b"\x0a\xff\xff\xff\xff\x0f", b"\x0a\x02\x12\x00", b"\x0b\x0c", b"\x08"):
        assert _decode()(data) is None


def test_the_compiled_path_counts_its_spans() -> None:
    data = next(TESTDATA.rglob("traces/*/a_single_tool.pb")).read_bytes()
    stats = DecodeStats()
    spans = spans_from_proto_bytes(data, stats)
    assert stats.spans == len(spans) > 0


# Random well-formed requests: the protobuf runtime writes them, so every field order and value kind the
# encoders produce is covered, and the wire-level joins below cover what they may also send.

_TEXT = string.ascii_letters + "éß中😀\u2028\x00 "


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_TEXT) for _ in range(rng.randint(0, 12)))


def _value(rng: random.Random, depth: int) -> AnyValue:
    kind = rng.randrange(9 if depth < 4 else 5)
    value = AnyValue()
    if kind == 0:
        value.string_value = _text(rng)
    elif kind == 1:
        value.int_value = rng.choice([0, 1, -1, 2**63 - 1, -(2**63), rng.randint(-1000, 10**12)])
    elif kind == 2:
        value.bool_value = rng.random() < 0.5
    elif kind == 3:
        value.double_value = rng.choice([0.0, -0.0, 1.5, float("inf"), 1e-300, rng.random()])
    elif kind == 4:
        value.bytes_value = bytes(rng.randrange(256) for _ in range(rng.randint(0, 6)))
    elif kind in (5, 6):
        value.array_value.values.extend(_value(rng, depth + 1) for _ in range(rng.randint(0, 3)))
    elif kind == 7:
        value.kvlist_value.values.extend(_kvs(rng, depth + 1, rng.randint(0, 3)))
    # kind 8: an AnyValue with nothing set
    return value


def _kvs(rng: random.Random, depth: int, n: int) -> list[KeyValue]:
    keys = ["a", "b", "gen_ai.tool.name", "input.value", _text(rng)]
    out = []
    for _ in range(n):
        kv = KeyValue(key=rng.choice(keys))  # duplicate keys: the later value wins, in the first's place
        if rng.random() < 0.95:
            kv.value.CopyFrom(_value(rng, depth))
        out.append(kv)
    return out


def _span(rng: random.Random, trace_ids: list[bytes]) -> Span:
    span = Span(
        trace_id=rng.choice(trace_ids),
        span_id=rng.randbytes(7) + b"\x01",
        name=_text(rng),
        kind=rng.choice([0, 1, 3, 5, 7, -1, 2**31 - 1]),
        start_time_unix_nano=rng.choice([0, rng.randrange(2**64)]),
        end_time_unix_nano=rng.randrange(2**64),
        trace_state=_text(rng),
        flags=rng.randrange(2**32),
        dropped_attributes_count=rng.randrange(3),
    )
    if rng.random() < 0.6:
        span.parent_span_id = rng.choice([bytes(8), rng.randbytes(7) + b"\x02"])
    span.attributes.extend(_kvs(rng, 0, rng.randint(0, 8)))
    if rng.random() < 0.5:
        span.status.CopyFrom(Status(code=rng.choice([0, 1, 2, 9]), message=_text(rng)))
    for _ in range(rng.choice([0, 0, 1, 3])):
        event = span.events.add(time_unix_nano=rng.randrange(2**64), name=_text(rng))
        event.attributes.extend(_kvs(rng, 0, rng.randint(0, 3)))
    for _ in range(rng.choice([0, 0, 2])):
        link = span.links.add(trace_id=rng.randbytes(16), span_id=rng.randbytes(8), trace_state=_text(rng))
        link.attributes.extend(_kvs(rng, 0, 2))
    return span


def _request(rng: random.Random) -> bytes:
    trace_ids = [rng.randbytes(15) + b"\x01" for _ in range(rng.randint(1, 3))]
    request = ExportTraceServiceRequest()
    for _ in range(rng.randint(1, 3)):
        block = request.resource_spans.add(schema_url=_text(rng))
        block.resource.attributes.extend(_kvs(rng, 0, rng.randint(0, 4)))
        for _ in range(rng.randint(1, 3)):
            scope = block.scope_spans.add(schema_url=_text(rng))
            scope.scope.name, scope.scope.version = _text(rng), _text(rng)
            scope.scope.attributes.extend(_kvs(rng, 0, rng.randint(0, 2)))
            scope.spans.extend(_span(rng, trace_ids) for _ in range(rng.randint(1, 5)))
    return request.SerializeToString()


def test_random_requests_decode_the_same() -> None:
    rng = random.Random(2026)
    answered = sum(_same_or_gave_up(_request(rng)) for _ in range(400))
    assert answered == 400  # well-formed and with usable ids: the compiled decoder answers every one


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (numbers under 16, lengths under 128: one byte each)."""
    assert number < 16
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def _wrap(span: bytes, resource: bytes = b"", scope: bytes = b"") -> bytes:
    scope_spans = scope + _field(2, span)
    return _field(1, resource + _field(2, scope_spans))


_IDS = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8).SerializeToString()


@pytest.mark.parametrize(
    ("what", "data"),
    [
        # the resource after its spans, and the scope after its spans: read first all the same
        ("resource last", _field(1, _field(2, _field(2, _IDS)) + _field(1, KeyValue(key="k").SerializeToString()))),
        ("scope last", _field(1, _field(2, _field(2, _IDS) + _field(1, b"\x0a\x01s")))),
        # a message field twice is merged: two statuses, two resources, two scopes
        (
            "status twice",
            _wrap(_IDS + _field(15, Status(code=2).SerializeToString()) + _field(15, b"\x12\x01m")),
        ),
        (
            "resource twice",
            _field(
                1,
                _field(1, b"\x0a" + bytes([len(kv := KeyValue(key="a").SerializeToString())]) + kv)
                + _field(2, _field(2, _IDS))
                + _field(1, b"\x10\x05"),
            ),
        ),
        # a key after its value; unknown fields of every wire type anywhere
        ("key after value", _wrap(_IDS + _field(9, b"\x12\x03\x0a\x01v\x0a\x01k"))),
        ("unknown fields", _wrap(_IDS + b"\xf8\x01\x05\x81\x02" + b"\x00" * 8 + b"\x8d\x02\x00\x00\x00\x00")),
        ("varint over ten bytes", _wrap(_IDS + b"\x30" + b"\xff" * 10 + b"\x01")),
        ("kind of ten bytes", _wrap(_IDS + b"\x30" + b"\xff" * 9 + b"\x01")),
    ],
)
def test_wire_shapes_decode_the_same(what: str, data: bytes) -> None:
    _same_or_gave_up(data)


_LEFT_TO_THE_PURE_PATH = [
    ("value twice", _wrap(_IDS + _field(9, b"\x0a\x01k\x12\x02\x08\x01\x12\x02\x18\x02"))),
    ("two oneof fields", _wrap(_IDS + _field(9, b"\x0a\x01k\x12\x05\x0a\x01x\x18\x01"))),
    ("a newer AnyValue field", _wrap(_IDS + _field(9, b"\x0a\x01k\x12\x02\x40\x01"))),
    ("a group", _wrap(_IDS + b"\x8b\x02\x8c\x02")),
    ("trace_state not UTF-8", _wrap(_IDS + _field(3, b"\xff"))),
    ("link attribute not UTF-8", _wrap(_IDS + _field(13, _field(4, _field(1, b"\xc0\x80"))))),
    ("schema URL not UTF-8", _field(1, _field(3, b"\xed\xa0\x80") + _field(2, _field(2, _IDS)))),
    ("span id of 7 bytes", _wrap(Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 7).SerializeToString())),
    ("zero trace id", _wrap(Span(trace_id=bytes(16), span_id=b"\x02" * 8).SerializeToString())),
    ("span id as a varint", _wrap(_IDS + b"\x10\x01")),
]


@pytest.mark.parametrize(("what", "data"), _LEFT_TO_THE_PURE_PATH)
def test_what_the_compiled_decoder_leaves_to_the_pure_path(what: str, data: bytes) -> None:
    assert _decode()(data) is None
    expected = _pure(data)  # and the public function gives what that path gives
    if expected == "refused":
        with pytest.raises(SpanDecodeError):
            spans_from_proto_bytes(data)
    else:
        assert spans_from_proto_bytes(data) == expected


def test_nesting_past_its_depth_is_left_to_the_pure_path() -> None:
    value = AnyValue(string_value="leaf")
    for _ in range(40):
        value = AnyValue(array_value={"values": [value]})
    span = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, attributes=[KeyValue(key="deep", value=value)])
    data = ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[span])])]
    ).SerializeToString()
    assert _decode()(data) is None
    shallow = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(scope_spans=[ScopeSpans(spans=[Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8)])])
        ]
    ).SerializeToString()
    assert _same_or_gave_up(shallow)


def _mutants(rng: random.Random, seeds: list[bytes], n: int) -> list[bytes]:
    out = []
    for _ in range(n):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 3)):
            if not data:
                break
            at, op = rng.randrange(len(data)), rng.random()
            if op < 0.5:
                data[at] = rng.randrange(256)
            elif op < 0.7:
                del data[at : at + rng.randint(1, 4)]
            elif op < 0.9:
                data[at:at] = rng.randbytes(rng.randint(1, 3))
            else:
                del data[at:]
        out.append(bytes(data))
    return out


def test_mutated_requests_decode_the_same_or_are_left_to_the_pure_path() -> None:
    rng = random.Random(7)
    seeds = [_request(rng) for _ in range(20)] + [p.read_bytes() for p in sorted(TESTDATA.glob("traces/*/a_*.pb"))]
    answered = sum(_same_or_gave_up(data) for data in _mutants(rng, seeds, 3000))
    assert answered > 50  # some mutants stay well-formed: the comparison above ran on those


def test_each_span_entry_decodes_as_its_message() -> None:
    """`serve`'s carriers keep each span's framed entry; the compiled decoder reads it as `span_record` reads
    the parsed span, with the block's resource and scope."""
    from toolscore.collector.serve._encode import span_entries
    from toolscore.collector.sources.otlp_proto import resource_attributes, span_record

    assert _compiled is not None
    rng = random.Random(5)
    requests = [p.read_bytes() for p in sorted(TESTDATA.glob("traces/*/*.pb")) if ".logs." not in p.name]
    compared = 0
    for data in requests + [_request(rng) for _ in range(100)]:
        request = parse_trace_export(data)
        entries = iter(span_entries(data) or [])
        for block in request.resource_spans:
            resource = resource_attributes(block.resource)
            for scope in block.scope_spans:
                for span in scope.spans:
                    record = _compiled.decode_span_entry(next(entries), resource, scope.scope.name)
                    assert repr(record) == repr(span_record(span, resource, scope.scope.name))
                    assert record.resource is resource
                    compared += 1
    assert compared > 1000


@pytest.mark.parametrize(
    "entry",
    [b"", _IDS, b"\x12\x05" + _IDS[:5], b"\x12" + bytes([len(_IDS)]) + _IDS + b"\x00", b"\x1a\x00"],
    ids=["empty", "unframed", "short", "trailing", "another field"],
)
def test_a_span_entry_it_cannot_read_is_left_to_the_message(entry: bytes) -> None:
    assert _compiled is not None
    assert _compiled.decode_span_entry(entry, {}, "") is None


def _traces_or_gave_up(data: bytes) -> bool:
    """Whether `plain_index` answered (True) or gave up (False); fails on any difference from the parsed
    request's, and when it answers on bytes the runtime refuses."""
    from toolscore.collector.serve._prefilter import PlainRequest, parsed_traces

    assert _compiled is not None
    fast = _compiled.plain_index(data)
    if fast is None:
        return False
    assert PlainRequest(*fast) == parsed_traces(parse_trace_export(data))  # raises on bytes it refuses
    return True


def test_plain_index_reads_every_request_as_the_parsed_request_reads_it() -> None:
    """`serve` holds a plain request by its spans per trace and its roots' traces, read from the bytes: the
    same as from the parsed request, on every trace file, random requests (roots and not, several traces),
    and the framing's odd shapes."""
    rng = random.Random(11)
    files = [p.read_bytes() for p in sorted(TESTDATA.glob("traces/*/*.pb")) if ".logs." not in p.name]
    assert all(_traces_or_gave_up(data) for data in files + [_request(rng) for _ in range(400)])
    ids = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8).SerializeToString()
    shapes = [
        _wrap(ids + _field(1, b"\x03" * 16)),  # trace_id twice: the last one counts
        _wrap(ids + _field(4, b"\x04" * 8) + _field(4, b"")),  # parent twice, the last one empty: a root
        _wrap(Span(span_id=b"\x02" * 8).SerializeToString()),  # no trace id at all
        _wrap(ids + b"\xf8\x01\x05\x81\x02" + b"\x00" * 8),  # unknown fields
        _field(1, _field(3, b"https://schema") + _field(2, _field(2, ids) + _field(2, ids))),
        b"",
    ]
    assert all(_traces_or_gave_up(data) for data in shapes)
    assert _compiled.plain_index(_field(1, b"\x10\x01")) is None  # scope_spans as a varint: left to the parse


@pytest.mark.parametrize(
    "what",
    [
        "value twice",
        "two oneof fields",
        "a newer AnyValue field",
        "a group",
        "trace_state not UTF-8",
        "link attribute not UTF-8",
        "schema URL not UTF-8",
    ],
)
def test_what_plain_index_leaves_to_the_parse(what: str) -> None:
    (data,) = [data for name, data in _LEFT_TO_THE_PURE_PATH if name == what]
    assert _compiled is not None
    assert _compiled.plain_index(data) is None


def test_plain_index_refuses_what_the_runtime_refuses() -> None:
    """Bytes it answers for are bytes the runtime parses: no request the receiver would refuse is held."""
    assert _compiled is not None
    bad = [
        _wrap(_IDS + _field(5, b"\xff")),  # a span name that is not UTF-8
        _wrap(_IDS + _field(11, _field(2, b"\xc0\x80"))),  # an event name that is not UTF-8
        _wrap(_IDS + _field(15, _field(2, b"\xed\xa0\x80"))),  # a status message that is not UTF-8
        _field(1, _field(2, _field(1, _field(1, b"\xff")) + _field(2, _IDS))),  # a scope name that is not UTF-8
        _field(1, _field(1, _field(1, _field(1, b"\xff"))) + _field(2, _field(2, _IDS))),  # a resource key
        _wrap(_IDS)[:-1],  # cut short
        _field(5, b"x" * 40),  # unknown fields alone: no resource_spans (found by the `wire_accel` fuzz target)
    ]
    for data in bad:
        with pytest.raises(SpanDecodeError):
            parse_trace_export(data)
        assert _compiled.plain_index(data) is None


def test_plain_index_of_mutated_requests_is_the_same_or_left_to_the_parse() -> None:
    """Every mutant it answers for parses, and reads the same; those it cannot say about go the parse's way."""
    rng = random.Random(13)
    seeds = [_request(rng) for _ in range(20)] + [p.read_bytes() for p in sorted(TESTDATA.glob("traces/*/a_*.pb"))]
    answered = sum(_traces_or_gave_up(data) for data in _mutants(rng, seeds, 3000))
    assert answered > 200  # the mutants it reads: compared above


def _marked_or_answered(data: bytes, keys: frozenset[str], scopes: frozenset[str]) -> bool:
    """Whether `request_index` answered `plain_index`'s answer (no span shows a marker); fails unless it answers
    exactly where `plain_index` does, with `plain_index`'s answer where no span of the parsed request has an
    attribute key or a scope name among the markers, and with `checked_table`'s where one has."""
    assert _compiled is not None
    plain = _compiled.plain_index(data)
    marker_keys, marker_scopes = tuple(k.encode() for k in keys), tuple(s.encode() for s in scopes)
    index = _compiled.request_index(data, marker_keys, marker_scopes)
    if plain is None:
        assert index is None
        return False
    assert index is not None
    request = ExportTraceServiceRequest.FromString(data)
    shows = any(
        (ss.scope.name in scopes and ss.spans) or any(kv.key in keys for span in ss.spans for kv in span.attributes)
        for rs in request.resource_spans
        for ss in rs.scope_spans
    )
    marked, answer = index
    assert marked == shows
    assert answer == (_compiled.checked_table(data, marker_keys, marker_scopes) if marked else plain)
    return not marked


def test_request_index_reads_a_request_as_plain_exactly_where_no_span_shows_a_marker() -> None:
    """The marker keys count on a span's own attributes only, and scope names on the scope's spans: the same text
    in a value, an event's, a link's, a resource's or a scope's attributes makes no plain request an agent's."""
    from toolscore.collector.pipeline.markers import convention_markers

    markers = convention_markers()
    assert markers is not None
    rng = random.Random(17)
    files = [p.read_bytes() for p in sorted(TESTDATA.glob("traces/*/*.pb")) if ".logs." not in p.name]
    assert not any(_marked_or_answered(data, markers.keys, markers.scopes) for data in files)  # agents' traces
    randoms = [_request(rng) for _ in range(400)]  # "gen_ai.tool.name", a marker, is among their keys everywhere
    assert sum(_marked_or_answered(data, markers.keys, markers.scopes) for data in randoms) > 5
    requests, _ = mixed_batches(0.1, together=False, spans=3_000, per_request=100)  # HTTP, database, agent traces
    answered = sum(_marked_or_answered(data, markers.keys, markers.scopes) for data in requests)
    assert 0 < answered < len(requests)
    elsewhere = [
        _wrap(_IDS + _field(11, _field(2, b"e") + _field(3, _field(1, b"gen_ai.system")))),  # an event's key
        _wrap(_IDS + _field(9, _field(1, b"http.route") + _field(2, _field(1, b"gen_ai.tool.name")))),  # a value
        _field(1, _field(1, _field(1, _field(1, b"gen_ai.system"))) + _field(2, _field(2, _IDS))),  # a resource key
        _wrap(_IDS, scope=_field(1, _field(1, b"opentelemetry.instrumentation.httpx"))),
        _field(1, _field(2, _field(1, _field(1, b"gen_ai")))),  # a marker scope with no span: nothing to read
    ]
    assert all(_marked_or_answered(data, markers.keys, markers.scopes) for data in elsewhere)
    shown = [
        _wrap(_IDS + _field(9, _field(1, b"gen_ai.system"))),
        _wrap(_IDS, scope=_field(1, _field(1, b"pydantic-ai"))),
        _wrap(_IDS + _field(9, _field(1, b"x") + _field(1, b"gen_ai.system"))),  # a key field twice
    ]
    assert not any(_marked_or_answered(data, markers.keys, markers.scopes) for data in shown)
    mutants = _mutants(rng, randoms[:10] + requests[:10], 2000)
    assert sum(_marked_or_answered(data, markers.keys, markers.scopes) for data in mutants) > 50


def _table_with_markers_or_none(data: bytes, keys: frozenset[str], scopes: frozenset[str], exact: bool = True) -> bool:
    """Whether `span_table` with the markers answered bytes the runtime parses; fails unless its offsets and ids are
    those without them, its marked spans those that show a marker key or scope name (a superset of them where
    a span repeats a key's field or a block its scope, which the runtime merges: not `exact`), and its flags each
    span's root and ids."""
    from toolscore.collector.serve._prefilter import SPAN_IDS_OK, SPAN_ROOT
    from toolscore.collector.sources.otlp_proto import ids_ok

    assert _compiled is not None
    table = _compiled.span_table(data, tuple(k.encode() for k in keys), tuple(s.encode() for s in scopes))
    if table is None:
        assert _compiled.span_table(data) is None
        return False
    offsets, ids, marked, flags = table
    assert (offsets, ids) == _compiled.span_table(data)
    try:
        request = parse_trace_export(data)
    except SpanDecodeError:
        return False
    spans = [(ss.scope.name, span) for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]
    shows = [
        i for i, (scope, span) in enumerate(spans) if scope in scopes or any(kv.key in keys for kv in span.attributes)
    ]
    assert marked == shows if exact else set(shows) <= set(marked)
    expected = [
        (SPAN_ROOT if not span.parent_span_id else 0) | (SPAN_IDS_OK if ids_ok(span) else 0) for _, span in spans
    ]
    assert list(flags) == expected
    return True


def test_span_table_with_the_markers_reads_the_marked_spans_roots_and_ids_as_the_parsed_request() -> None:
    from toolscore.collector.pipeline.markers import convention_markers

    markers = convention_markers()
    assert markers is not None
    rng = random.Random(19)
    files = [p.read_bytes() for p in sorted(TESTDATA.glob("traces/*/*.pb")) if ".logs." not in p.name]
    requests, _ = mixed_batches(0.1, together=True, spans=2_000, per_request=100)
    odd = [
        _wrap(Span(trace_id=bytes(16), span_id=b"\x02" * 8).SerializeToString()),  # a zero trace id
        _wrap(Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 7).SerializeToString()),  # a short span id
        _wrap(_IDS + _field(4, b"\x04" * 3)),  # a parent id of 3 bytes
        _wrap(_IDS + _field(4, b"\x04" * 8) + _field(4, b"")),  # the last parent empty: a root
        _wrap(_IDS + _field(9, _field(1, b"x") + _field(1, b"gen_ai.system"))),  # a key field twice
    ]
    seeds = files + requests + [_request(rng) for _ in range(300)] + odd
    assert all(_table_with_markers_or_none(data, markers.keys, markers.scopes) for data in seeds)
    answered = sum(
        _table_with_markers_or_none(data, markers.keys, markers.scopes) for data in _mutants(rng, seeds, 1500)
    )
    assert answered > 100


def test_the_walks_refuse_markers_that_are_not_bytes() -> None:
    assert _compiled is not None
    with pytest.raises(TypeError, match="tuples of bytes"):
        _compiled.request_index(_wrap(_IDS), ("gen_ai.system",), ())
    with pytest.raises(TypeError, match="request_index"):
        _compiled.request_index(_wrap(_IDS), ())
    with pytest.raises(TypeError, match=r"plain_index\(data\)"):
        _compiled.plain_index(_wrap(_IDS), (), ())


def test_span_table_reads_each_entry_and_trace_as_the_parsed_request_does() -> None:
    """The pre-filter's offsets and trace ids of a request with markers: the framed entries `span_offsets` finds
    and the parsed spans' trace ids, on every trace file, random requests and mutants the runtime parses."""
    from toolscore.collector.serve._prefilter import span_offsets

    assert _compiled is not None
    rng = random.Random(17)
    files = [p.read_bytes() for p in sorted(TESTDATA.glob("traces/*/*.pb")) if ".logs." not in p.name]
    requests = files + [_request(rng) for _ in range(200)]
    compared = 0
    for data in requests + _mutants(rng, requests[:40], 2000):
        try:
            request = parse_trace_export(data)
        except SpanDecodeError:
            continue
        table = _compiled.span_table(data)
        offsets = span_offsets(data)
        if table is None:
            assert offsets is None  # the Python walk cannot read them either
            continue
        ids = [span.trace_id for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]
        assert table == (offsets, ids)
        compared += 1
    assert compared > len(requests)


def _checked_or_none(data: bytes, keys: tuple[bytes, ...], scopes: tuple[bytes, ...]) -> bool:
    """Whether `checked_table` answered; fails unless it answers exactly where `plain_index` without markers does
    (its validation: the bytes the runtime parses) and its answer is `span_table`'s with the markers, and the
    resource and scope blocks `plain_index` counts."""
    assert _compiled is not None
    checked = _compiled.checked_table(data, keys, scopes)
    plain = _compiled.plain_index(data)
    assert (checked is None) == (plain is None)
    if checked is None:
        return False
    *table, blocks = checked
    assert tuple(table) == _compiled.span_table(data, keys, scopes)
    assert blocks == plain[3]
    return True


def test_checked_table_validates_as_plain_index_and_reads_as_span_table() -> None:
    """`serve` reads a request with an agent's spans from its bytes alone when `checked_table` answers: it must
    answer only for bytes the runtime parses (those `plain_index` answers for, tested against the runtime above),
    on every trace file, random requests, mixed loads, odd shapes, bytes the runtime refuses, and mutants, and
    its table is the one `span_table` gives a parsed request."""
    from toolscore.collector.pipeline.markers import convention_markers

    markers = convention_markers()
    assert markers is not None
    keys, scopes = tuple(k.encode() for k in markers.keys), tuple(s.encode() for s in markers.scopes)
    rng = random.Random(29)
    files = [p.read_bytes() for p in sorted(TESTDATA.glob("traces/*/*.pb")) if ".logs." not in p.name]
    requests, _ = mixed_batches(0.1, together=True, spans=2_000, per_request=100)
    shapes = [data for _, data in _LEFT_TO_THE_PURE_PATH] + [
        _wrap(_IDS + _field(9, _field(1, b"gen_ai.system"))),  # a marker key
        _wrap(_IDS + _field(9, _field(1, b"gen_ai.system") + _field(2, b"\x0a\x01\xff"))),  # ... its value not UTF-8
        _wrap(_IDS + b"\x08\x01"),  # a trace id as a varint
        _wrap(_IDS + b"\x20\x01"),  # a parent id as a varint
        _wrap(_IDS + _field(11, _field(2, b"\xc0\x80"))),  # an event name that is not UTF-8
        _field(1, _field(2, _field(1, _field(1, b"\xff")) + _field(2, _IDS))),  # a scope name that is not UTF-8
        _field(1, b"\x10\x01"),  # scope_spans as a varint
        _field(5, b"x" * 40),  # unknown fields alone
        b"",
    ]
    seeds = files + requests + [_request(rng) for _ in range(300)] + shapes
    answered = sum(_checked_or_none(data, keys, scopes) for data in seeds)
    assert answered > len(files) + len(requests)
    # Some mutants stay well-formed, so the comparison ran on them. How many depends on the seeds, every trace file
    # among them: a bound with room, not one that a new capture folder can push under.
    assert sum(_checked_or_none(data, keys, scopes) for data in _mutants(rng, seeds, 3000)) > 150
    with pytest.raises(TypeError, match="checked_table"):
        _compiled.checked_table(_wrap(_IDS))


def test_request_index_gives_up_past_its_limit_of_spans_or_blocks() -> None:
    """A request a receiver refuses for its size is not walked to its end, nor kept a row per span."""
    assert _compiled is not None
    keys, scopes = (b"gen_ai.system",), (b"pydantic-ai",)
    three_spans = _field(1, _field(2, _field(2, _IDS) + _field(2, _IDS) + _field(2, _IDS)))  # two blocks
    assert _compiled.request_index(three_spans, keys, scopes) == (False, _compiled.plain_index(three_spans))
    assert _compiled.request_index(three_spans, keys, scopes, 3) == (False, _compiled.plain_index(three_spans))
    assert _compiled.request_index(three_spans, keys, scopes, 2) is None  # three spans
    blocks = _field(1, _field(2, _field(2, _IDS))) * 2  # four blocks, two spans
    assert _compiled.request_index(blocks, keys, scopes, 3) is None
    assert _compiled.request_index(blocks, keys, scopes, 4) is not None
    with pytest.raises(TypeError):
        _compiled.request_index(blocks, keys, scopes, "4")
