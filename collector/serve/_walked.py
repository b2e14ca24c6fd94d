"""The carriers of a walked request's agent spans: read from the parsed request by position, or from its bytes.

A request the compiled walk has read (`_prefilter.SpanPlan` with each span's offsets, trace and flags) sends
only its agent traces' spans to the engine, each as a `Carrier`: its message, its blocks and its received
bytes. `parsed_carriers` takes them from the request the receiver parsed. `bytes_carriers` needs no parse of
the request (`WirePrefilter.request_plan` validated its bytes, so the runtime would parse them): a span is
carried as its entry alone, with no message (the engine decodes it from those bytes, `decode_carrier`, as it
does every span, and the sink forwards them), and each block that holds one is parsed without its entries (a
`ResourceSpans` without its `scope_spans`, a `ScopeSpans` without its `spans`), which is all a block is read
for (its resource, scope and schema URLs): a few small parses against one of the whole request.
"""

from __future__ import annotations

import bisect
import itertools
from typing import TYPE_CHECKING

from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans

from toolscore.collector.serve._carrier import Carrier, ResourceBlock, ScopeBlock
from toolscore.collector.serve._encode import entries, without_ranges
from toolscore.collector.serve._prefilter import SpanPlan

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

__all__ = ["bytes_carriers", "parsed_carriers"]

_RESOURCE_SPANS = 0x0A
"""`ExportTraceServiceRequest.resource_spans` (field 1), length-delimited."""
_SCOPE_SPANS = 0x12
"""`ResourceSpans.scope_spans` (field 2), length-delimited."""


def parsed_carriers(request: ExportTraceServiceRequest, data: bytes, plan: SpanPlan) -> list[Carrier]:
    """The spans `plan` says are of agent traces, each with its blocks and received bytes, taken from the parsed
    request by position: the others are not read one by one."""
    wanted = list(itertools.compress(range(len(plan.agent)), plan.agent))
    carriers: list[Carrier] = []
    if not wanted:
        return carriers
    assert plan.offsets is not None
    view = memoryview(data)
    k = base = 0
    for resource_spans in request.resource_spans:
        resource: ResourceBlock | None = None
        for scope_spans in resource_spans.scope_spans:
            spans = scope_spans.spans
            end = base + len(spans)
            if k < len(wanted) and wanted[k] < end:
                resource = resource or ResourceBlock(resource_spans)
                block = ScopeBlock(resource, scope_spans)
                while k < len(wanted) and wanted[k] < end:
                    at, stop = plan.offsets[wanted[k]]
                    carriers.append((spans[wanted[k] - base], block, view[at:stop]))
                    k += 1
            base = end
    return carriers


def bytes_carriers(data: bytes, plan: SpanPlan) -> list[Carrier]:
    """`parsed_carriers` of a request not parsed: its agent spans' entries and the blocks holding them, each parsed
    alone (see the module docstring). `data` must be bytes the runtime parses (`checked_table` said so)."""
    wanted = list(itertools.compress(range(len(plan.agent)), plan.agent))
    carriers: list[Carrier] = []
    if not wanted:
        return carriers
    offsets = plan.offsets
    assert offsets is not None
    view = memoryview(data)
    k = first = 0
    for _, resource_start, resource_end in entries(data, 0, len(data), _RESOURCE_SPANS):
        scopes = entries(data, resource_start, resource_end, _SCOPE_SPANS)
        resource: ResourceBlock | None = None
        for _, scope_start, scope_end in scopes:
            last = bisect.bisect_left(offsets, (scope_end,), first)  # the first span after this block
            if k < len(wanted) and wanted[k] < last:
                if resource is None:
                    cuts = [(at, end) for at, _, end in scopes]
                    without = without_ranges(data, resource_start, resource_end, cuts)
                    resource = ResourceBlock(ResourceSpans.FromString(without))
                scope = ScopeSpans.FromString(without_ranges(data, scope_start, scope_end, offsets[first:last]))
                block = ScopeBlock(resource, scope)
                while k < len(wanted) and wanted[k] < last:
                    at, stop = offsets[wanted[k]]
                    carriers.append((None, block, view[at:stop]))  # decoded from its bytes (`decode_carrier`)
                    k += 1
            first = last
    if k != len(wanted):
        raise ValueError(f"span {wanted[k]} of the plan is in no scope block of the request")
    return carriers
