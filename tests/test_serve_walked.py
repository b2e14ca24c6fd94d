"""A walked request's agent spans read from its bytes alone are the ones read from the parsed request.

`bytes_carriers` carries each agent span as its entry alone, and parses each block that holds one without its
entries; `parsed_carriers` takes them from the request the runtime parsed. The carriers must agree in everything
the engine and the sink read: the span as the engine decodes it, its received bytes, its scope (name, version,
attributes, schema URL) and resource (attributes, schema URL), and which spans share a block. Requests: the mixed
loads (plain and agent traces in the same blocks), random requests of several resources and scopes, every
capture, and blocks whose fields come in unusual orders (the scope after the spans, a schema URL between them,
the scope twice).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.bench.mixed import mixed_batches
from tests.test_wire_accel import _field, _request
from toolscore.collector.pipeline.markers import AgentTraces, convention_markers
from toolscore.collector.serve._carrier import decode_carrier
from toolscore.collector.serve._prefilter import SPAN_ROOT, SpanPlan, WirePrefilter, plain_traces
from toolscore.collector.serve._walked import bytes_carriers, parsed_carriers
from toolscore.collector.sources._accel import checked_table

TESTDATA = Path(__file__).parent / "testdata"

pytestmark = pytest.mark.skipif(checked_table is None, reason="the compiled walks are off (TOOLSCORE_PURE_PYTHON)")


def _view(carrier: Any) -> tuple[Any, ...]:
    """What the engine and the sink read of a carrier: its span decoded, its bytes, its blocks."""
    _, block, entry = carrier
    scope, resource = block.message, block.resource.message
    return (
        repr(decode_carrier(carrier)),  # repr: a NaN equals a NaN
        bytes(entry),
        block.scope_name,
        scope.scope.SerializeToString(deterministic=True),
        scope.schema_url,
        resource.resource.SerializeToString(deterministic=True),
        resource.schema_url,
    )


def _blocks(carriers: list[Any]) -> list[int]:
    """Which spans share a block: each carrier's block numbered in order of first use."""
    seen: dict[int, int] = {}
    return [seen.setdefault(id(block), len(seen)) for _, block, _ in carriers]


def _agree(data: bytes, plan: SpanPlan) -> int:
    carriers = bytes_carriers(data, plan)
    expected = parsed_carriers(ExportTraceServiceRequest.FromString(data), data, plan)
    assert [_view(c) for c in carriers] == [_view(c) for c in expected]
    assert _blocks(carriers) == _blocks(expected)
    # parsed without their entries: a block holds no span, so none keeps the request's others alive; and no span is
    # parsed here: the engine decodes it from its bytes
    assert not any(block.message.spans or block.resource.message.scope_spans for _, block, _ in carriers)
    assert all(span is None for span, _, _ in carriers)
    return len(carriers)


def _plans(data: bytes, rng: random.Random) -> list[SpanPlan]:
    """The pre-filter's own plan of the request, and random choices of its spans."""
    markers = convention_markers()
    assert markers is not None
    keys, scopes = tuple(k.encode() for k in markers.keys), tuple(s.encode() for s in markers.scopes)
    table = checked_table(data, keys, scopes) if checked_table is not None else None
    assert table is not None, "a request the runtime parses"
    offsets, ids, _, flags, _ = table
    plans = [SpanPlan([rng.random() < share for _ in ids], offsets, ids, flags) for share in (0.1, 0.5, 1.0)]
    own = WirePrefilter(markers, 1_000).request_plan(data, 100_000)
    if isinstance(own, SpanPlan):
        plans.append(own)
    return plans


def test_mixed_loads_read_the_same_from_the_bytes() -> None:
    rng = random.Random(3)
    requests, _ = mixed_batches(0.1, together=True, spans=3_000, per_request=200)
    assert sum(_agree(data, plan) for data in requests for plan in _plans(data, rng)) > 1_000


def test_random_requests_of_several_resources_and_scopes_read_the_same() -> None:
    rng = random.Random(5)
    assert sum(_agree(data, plan) for data in (_request(rng) for _ in range(150)) for plan in _plans(data, rng)) > 300


def test_every_capture_reads_the_same() -> None:
    rng = random.Random(7)
    files = [p.read_bytes() for p in sorted(TESTDATA.glob("traces/*/*.pb")) if ".logs." not in p.name]
    assert sum(_agree(data, plan) for data in files for plan in _plans(data, rng)) > 100


_SPAN = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="s").SerializeToString()
_SCOPE = InstrumentationScope(name="pydantic-ai", version="1").SerializeToString()
_ODD = {
    "the scope after its spans": _field(1, _field(2, _field(2, _SPAN) + _field(2, _SPAN) + _field(1, _SCOPE))),
    "a schema URL between the spans": _field(
        1, _field(2, _field(1, _SCOPE) + _field(2, _SPAN) + _field(3, b"u") + _field(2, _SPAN))
    ),
    "the scope twice, merged": _field(
        1, _field(2, _field(1, b"\x0a\x01a") + _field(2, _SPAN) + _field(1, b"\x12\x01v"))
    ),
    "the resource after its scopes": _field(
        1, _field(2, _field(1, _SCOPE) + _field(2, _SPAN)) + _field(1, b"\x0a\x07\x0a\x01k\x12\x02\x0a\x00")
    ),
    "a scope block with no span first": _field(1, _field(2, _field(1, b"\x0a\x01e")) + _field(2, _field(2, _SPAN))),
}


@pytest.mark.parametrize("data", list(_ODD.values()), ids=list(_ODD))
def test_blocks_in_unusual_orders_read_the_same(data: bytes) -> None:
    assert _agree(data, _plans(data, random.Random(11))[2]) >= 1  # every span


def test_a_plan_that_does_not_fit_the_request_is_refused() -> None:
    data = _ODD["the scope after its spans"]
    plan = _plans(data, random.Random(13))[2]
    assert plan.offsets is not None
    beyond = SpanPlan([*plan.agent, True], [*plan.offsets, (len(data), len(data) + 3)], None, None)
    with pytest.raises(ValueError, match="in no scope block"):
        bytes_carriers(data, beyond)


def test_agent_traces_stay_known_across_plans() -> None:
    """The plan of a request marks its markers' traces as agent traces for the requests after it."""
    markers = convention_markers()
    assert markers is not None
    prefilter = WirePrefilter(markers, 1_000)
    assert isinstance(prefilter.traces, AgentTraces)
    agent = _field(1, _field(2, _field(1, _SCOPE) + _field(2, _SPAN)))
    plain = _field(1, _field(2, _field(1, b"\x0a\x05httpx") + _field(2, _SPAN)))
    assert prefilter.request_plan(plain, 100) is not None  # held whole: no trace of it is known
    first = prefilter.request_plan(agent, 100)
    assert isinstance(first, SpanPlan)
    assert first.agent == [True]
    again = prefilter.request_plan(plain, 100)
    assert isinstance(again, SpanPlan)  # its trace is an agent's now: to the engine, read from the bytes
    assert again.agent == [True]


def test_the_plain_spans_traces_and_roots_are_those_of_the_spans_of_no_agent_trace() -> None:
    """What the hold keeps of a request whose spans part ways (`plain_traces`), against a loop over its spans."""
    rng = random.Random(17)
    requests, _ = mixed_batches(0.1, together=True, spans=2_000, per_request=100)
    compared = 0
    for data in requests + [_request(rng) for _ in range(50)]:
        for plan in _plans(data, rng):
            assert plan.ids is not None
            assert plan.flags is not None
            counts: dict[bytes, int] = {}
            root_traces = set()
            for trace_id, of_agent, flag in zip(plan.ids, plan.agent, plan.flags, strict=True):
                if not of_agent:
                    counts[trace_id] = counts.get(trace_id, 0) + 1
                    if flag & SPAN_ROOT:
                        root_traces.add(trace_id)
            assert plain_traces(plan) == (counts, root_traces)
            compared += bool(counts and root_traces)
    assert compared > 50
