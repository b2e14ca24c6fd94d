"""Live scoring and offline extraction give the same runs for the same complete trace, whatever the order.

Every framework capture in testdata/traces, the MCP capture in testdata/mcp, and synthetic shapes the captures
lack (runs inferred under a tool span, under another inferred run or at an unrecognised root, nested agents,
parallel tools, MCP client and server spans in two services), goes to one live engine in several
orders (as recorded, parents first, children first, shuffled with fixed seeds, re-delivered), each order
under a trace id of its own. The runs the engine hands to matching, which settle as they would in
service, must be `rebuild_runs` of the same spans field by field (calls, agent name, attributes,
incomplete flag), and so select the same expectations (`match.attributes` among them).
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline_builders import (
    EPOCH_NS,
    NotingRegistry,
    Recording,
    registry_with,
    run_attrs,
    tool_attrs,
    wait_until,
)
from toolscore.collector.extract import rebuild_runs
from toolscore.collector.pipeline import Engine, ListSink, PipelineConfig
from toolscore.collector.registry import Expectation, Registry
from toolscore.collector.sources import read_trace_file
from toolscore.collector.spans import SpanEvent, SpanRecord
from toolscore.scorers import AgentRun

AGENT_SERVICE, MCP_SERVICE = "travel-agent", "flights-mcp"
SERVER, CLIENT = 2, 3
"""OTLP span kinds."""
TESTDATA = Path(__file__).parent / "testdata"
CAPTURES = sorted(p for p in (TESTDATA / "traces").glob("*/*.pb") if not p.name.endswith(".logs.pb")) + sorted(
    (TESTDATA / "mcp").glob("*.pb")
)
WORKFLOW = {"gen_ai.operation.name": "invoke_workflow"}
BY_TEST_CASE = {
    "name": "by-test-case",
    "match": {"attributes": {"test_case.id": "book-001"}},
    "scorers": [{"type": "tool_selection", "expected_tool": "book_flight"}],
}
EVERY_AGENT = {
    "name": "every-agent",
    "match": {"agent": {"regex": "."}},
    "scorers": [{"type": "tool_selection", "expected_tool": "book_flight"}],
}
IN_MCP_SERVICE = {
    "name": "in-mcp-service",
    "match": {"service": MCP_SERVICE},
    "scorers": [{"type": "tool_selection", "expected_tool": "book_flight"}],
}


def span(
    span_id: int,
    parent: int | None,
    name: str,
    attributes: dict[str, Any],
    start: int = 0,
    *,
    kind: int = 1,
    service: str = AGENT_SERVICE,
) -> SpanRecord:
    """A span of a synthetic trace (its id a small number), starting at `start` ms, with one event."""
    start_ns = EPOCH_NS + (start or span_id) * 1_000_000
    return SpanRecord(
        "0" * 32, f"{span_id:016x}", None if parent is None else f"{parent:016x}", name, kind, start_ns,
        start_ns + 500, attributes=attributes, events=(SpanEvent("log", start_ns, {"message": "x" * 64}),),
        resource={"service.name": service}, scope="test",
    )  # fmt: skip


def tools(parent: int, first: int, *names: str, start: int = 0, service: str = AGENT_SERVICE) -> list[SpanRecord]:
    return [
        span(first + i, parent, f"execute_tool {name}", tool_attrs(name, f"c{first + i}"), start, service=service)
        for i, name in enumerate(names)
    ]


def chat_attrs(*calls: tuple[str, str]) -> dict[str, Any]:
    """A model response listing `(call_id, name)` tool calls, in this order."""
    parts = [{"type": "tool_call", "id": call_id, "name": name, "arguments": {}} for call_id, name in calls]
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
    }


def unrecognised(
    span_id: int, parent: int | None, name: str, test_case: str, service: str = AGENT_SERVICE
) -> SpanRecord:
    return span(span_id, parent, name, {"test_case.id": test_case, "http.route": "/chat"}, service=service)


def through_mcp(parent: int, client: int, name: str) -> list[SpanRecord]:
    """An MCP `tools/call` of `name` under `parent`: the client span, and the server's span under it in the MCP
    server's service, with the attributes the MCP semantic conventions give them (the server's span id is
    `client + 1`)."""
    attributes = {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "jsonrpc.request.id": str(client),
        "mcp.session.id": "8267461134f24305af708e66b8eda71a",
        "network.transport": "tcp",
    }
    return [
        span(client, parent, f"tools/call {name}", attributes, kind=CLIENT),
        span(client + 1, client, f"tools/call {name}", attributes, kind=SERVER, service=MCP_SERVICE),
    ]


SYNTHETIC: dict[str, list[SpanRecord]] = {
    # a run span > a tool > an uninstrumented sub-agent: the run is inferred at the tool's unrecognised child
    "inferred-under-tool": [
        span(1, None, "invoke_agent travel", run_attrs("travel", **{"test_case.id": "book-000"})),
        *tools(1, 2, "delegate"),
        unrecognised(3, 2, "sub_agent", "book-001"),
        *tools(3, 4, "search_flights", "book_flight"),
    ],
    # an unrecognised root owns the tool under it; the tool's unrecognised child owns the calls under that
    "inferred-under-unrecognised-root": [
        unrecognised(1, None, "handle_request", "book-000"),
        unrecognised(2, 1, "middleware", "book-002"),
        *tools(2, 3, "delegate"),
        unrecognised(4, 3, "worker", "book-001"),
        unrecognised(5, 4, "step", "book-003"),
        *tools(5, 6, "search_flights", "book_flight"),
    ],
    # an unrecognised span between a tool and a graph: the run is inferred at the unrecognised span
    "wrapper-over-graph-under-tool": [
        span(1, None, "invoke_agent travel", run_attrs("travel")),
        *tools(1, 2, "plan"),
        unrecognised(3, 2, "wrapper", "book-001"),
        span(4, 3, "graph", {**WORKFLOW, "test_case.id": "book-004"}),
        *tools(4, 5, "search_flights", "book_flight"),
    ],
    # a graph under an application's root: the run is inferred at the graph, the topmost recognised span
    "graph-under-unrecognised-root": [
        unrecognised(1, None, "POST /chat", "book-000"),
        span(2, 1, "travel", {**WORKFLOW, "test_case.id": "book-001"}),
        span(3, 2, "agent", WORKFLOW),
        *tools(3, 4, "search_flights", "book_flight"),
    ],
    "nested-agents": [
        span(1, None, "invoke_agent travel", run_attrs("travel", **{"test_case.id": "book-001"})),
        *tools(1, 2, "ask_helper"),
        span(3, 2, "invoke_agent helper", run_attrs("helper")),
        *tools(3, 4, "search_flights"),
        *tools(1, 5, "book_flight"),
        span(6, 3, "invoke_agent leaf", run_attrs("leaf")),
        *tools(6, 7, "book_flight"),
    ],
    # an uninstrumented sub-agent that calls a tool and an instrumented agent; a tool that calls a tool
    "sub-agent-beside-an-agent": [
        span(1, None, "invoke_agent travel", run_attrs("travel")),
        *tools(1, 2, "delegate"),
        unrecognised(3, 2, "worker", "book-001"),
        *tools(3, 4, "search_flights"),
        span(5, 3, "invoke_agent helper", run_attrs("helper")),
        *tools(5, 6, "book_flight"),
        *tools(6, 7, "retry_booking"),
    ],
    # a tool that calls a tool that calls a tool, names all different (not layers of one call): each tool with a call
    # right under it stands for a run inferred under the one above it, the innermost two links below the run span
    "inferred-under-inferred": [
        span(1, None, "invoke_agent travel", run_attrs("travel")),
        *tools(1, 2, "delegate"),
        span(3, 2, "execute_tool lookup", {**tool_attrs("lookup", "c3"), "test_case.id": "book-001"}),
        *tools(3, 4, "fetch"),
    ],
    # calls started in the same millisecond: the order falls to call ids
    # a framework's tool span > the MCP client's > the MCP server's (another service): one call, one run
    "mcp-under-a-framework-tool": [
        span(1, None, "invoke_agent travel", run_attrs("travel", **{"test_case.id": "book-001"})),
        *tools(1, 2, "search_flights"),
        *through_mcp(2, 3, "search_flights"),
        *tools(1, 5, "book_flight"),
        *through_mcp(5, 6, "book_flight"),
    ],
    # the agent calls MCP tools it does not trace itself: the client spans are the calls
    "mcp-under-the-agent": [
        span(1, None, "invoke_agent travel", run_attrs("travel", **{"test_case.id": "book-001"})),
        *through_mcp(1, 2, "search_flights"),
        *through_mcp(1, 4, "book_flight"),
    ],
    # an MCP tool runs an agent and an uninstrumented worker: both are linked to the agent that called the tool
    "mcp-server-runs-agents": [
        span(1, None, "invoke_agent travel", run_attrs("travel", **{"test_case.id": "book-001"})),
        *through_mcp(1, 2, "ask_helper"),
        span(4, 3, "invoke_agent helper", run_attrs("helper"), service=MCP_SERVICE),
        *tools(4, 5, "search_flights", service=MCP_SERVICE),
        unrecognised(6, 3, "worker", "book-006", service=MCP_SERVICE),
        *tools(6, 7, "book_flight", service=MCP_SERVICE),
    ],
    # calls only the model's output lists (no tool span), beside traced ones, in the caller and in a nested agent
    "calls-only-in-the-model-output": [
        span(1, None, "invoke_agent travel", run_attrs("travel", **{"test_case.id": "book-001"})),
        span(2, 1, "chat", chat_attrs(("c8", "search_flights"), ("c9", "ask_helper"), ("c3", "book_flight"))),
        *tools(1, 3, "book_flight", start=10),
        span(4, 1, "invoke_agent helper", run_attrs("helper"), start=11),
        span(5, 4, "chat", chat_attrs(("c7", "search_hotels")), start=12),
    ],
    "parallel-tools": [
        span(1, None, "invoke_agent travel", run_attrs("travel")),
        *tools(1, 2, "search_flights", "search_hotels", "search_cars", "delegate", start=9),
        unrecognised(6, 5, "sub_agent", "book-001"),
        *tools(6, 7, "search_flights", "book_flight", start=9),
    ],
}


def _depth(spans: list[SpanRecord]) -> Callable[[SpanRecord], int]:
    parents = {s.span_id: s.parent_id for s in spans}

    def depth(record: SpanRecord) -> int:
        current, n = record.parent_id, 0
        while current is not None and current in parents:
            current, n = parents[current], n + 1
        return n

    return depth


def _shuffled(seed: int) -> Callable[[list[SpanRecord]], list[SpanRecord]]:
    def order(spans: list[SpanRecord]) -> list[SpanRecord]:
        out = list(spans)
        random.Random(seed).shuffle(out)
        return out

    return order


ORDERS: dict[str, Callable[[list[SpanRecord]], list[SpanRecord]]] = {
    "recorded": list,
    "parents-first": lambda spans: sorted(spans, key=_depth(spans)),
    "children-first": lambda spans: sorted(spans, key=_depth(spans), reverse=True),
    "shuffled-1": _shuffled(1),
    "shuffled-2": _shuffled(2),
    "shuffled-3": _shuffled(3),
    "re-delivered": lambda spans: _shuffled(4)(spans + spans[::2]),
}


def _cases() -> dict[str, list[SpanRecord]]:
    cases = {f"{p.parent.name}/{p.stem}": read_trace_file(p) for p in CAPTURES}
    return {**cases, **SYNTHETIC}


CASES = _cases()


def _trace_id(case: int, order: int, original: str) -> str:
    return f"{case:03x}{order:02x}{original[5:]}"


@dataclasses.dataclass
class Fed:
    """What the engine scored and what offline extraction gives, by (case, order), and what each run matched."""

    live: dict[tuple[str, str], list[AgentRun]]
    offline: dict[tuple[str, str], list[AgentRun]]
    matched_live: dict[str, list[str]]
    registry: Registry


@pytest.fixture(scope="module")
def fed() -> Iterator[Fed]:
    sent: dict[str, tuple[str, str]] = {}
    offered: dict[tuple[str, str], list[SpanRecord]] = {}
    for c, (case, spans) in enumerate(CASES.items()):
        for o, (name, order) in enumerate(ORDERS.items()):
            renamed = [dataclasses.replace(s, trace_id=_trace_id(c, o, s.trace_id)) for s in spans]
            offered[(case, name)] = order(renamed)
            sent.update(dict.fromkeys((s.trace_id for s in renamed), (case, name)))
    # idle 1 s: a trace whose root ends before its work (OpenLLMetry's LlamaIndex workflows) finishes when idle
    config = PipelineConfig(
        settle_ms=300, trace_idle_timeout_s=1.0, max_hold_ms=60_000, queue_size=sum(map(len, offered.values()))
    )
    with registry_with(BY_TEST_CASE, EVERY_AGENT, IN_MCP_SERVICE) as registry:
        noting = NotingRegistry(registry)
        pipeline: Engine[SpanRecord] = Engine(noting, ListSink(), lambda r: r, config, Recording())
        pipeline.start()
        try:
            for spans in offered.values():
                for record in spans:
                    assert pipeline.offer(record)
            assert wait_until(lambda: len(pipeline.store) == 0 and not pipeline.backlog(), timeout_s=60.0)
            assert pipeline.flush(5.0)
        finally:
            pipeline.shutdown(5.0)
        live: dict[tuple[str, str], list[AgentRun]] = {key: [] for key in offered}
        for run in noting.runs:
            live[sent[run.trace_id]].append(run)
        yield Fed(live, {key: rebuild_runs(spans) for key, spans in offered.items()}, noting.matched, registry)


def _dump(runs: list[AgentRun]) -> list[dict[str, Any]]:
    return [run.model_dump() for run in sorted(runs, key=lambda r: (r.trace_id, r.start_ns or 0, r.span_id))]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("case", CASES)
def test_live_runs_are_the_offline_runs(fed: Fed, case: str, order: str) -> None:
    live, offline = fed.live[(case, order)], fed.offline[(case, order)]
    assert offline, "every case has runs"
    assert _dump(live) == _dump(offline)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("case", SYNTHETIC)
def test_match_attributes_select_the_same_run_live(fed: Fed, case: str, order: str) -> None:
    """Each synthetic shape has one run carrying `test_case.id: book-001`; the engine selects it as offline runs do."""
    live = {r.span_id for r in fed.live[(case, order)] if "by-test-case" in fed.matched_live[r.run_id]}
    offline = {r.span_id for r in fed.offline[(case, order)] if "by-test-case" in _names(fed.registry.match(r))}
    assert len(offline) == 1
    assert live == offline


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("case", ["mcp-under-a-framework-tool", "mcp-under-the-agent"])
def test_calls_through_mcp_are_calls_of_the_agent_live(fed: Fed, case: str, order: str) -> None:
    """The MCP client and server spans are layers of the agent's calls: no run of their own, none in the server's
    service for an expectation selecting it to match."""
    (run,) = fed.live[(case, order)]
    assert (run.agent_name, run.inferred, [c.name for c in run.calls]) == (
        "travel",
        False,
        ["search_flights", "book_flight"],
    )
    assert fed.matched_live[run.run_id] == ["by-test-case", "every-agent"]


def _names(expectations: list[Expectation]) -> list[str]:
    return [e.name for e in expectations]


@pytest.mark.parametrize("order", ORDERS)
def test_calls_only_in_the_model_output_are_scored_live(fed: Fed, order: str) -> None:
    """A run whose calls are all model-only (the openai-v2 capture), and one mixing both, are scored live."""
    (captured,) = fed.live[("openai-v2-latest/c_parallel", order)]
    travel, helper = sorted(fed.live[("calls-only-in-the-model-output", order)], key=lambda r: r.start_ns or 0)
    assert [(c.name, c.model_only) for c in captured.calls] == [
        ("get_weather", True),
        ("get_time", True),
        ("get_stock_price", True),
    ]
    assert [(c.name, c.model_only) for c in travel.calls] == [
        ("search_flights", True),
        ("ask_helper", True),
        ("book_flight", False),
    ]
    assert [(c.name, c.model_only) for c in helper.calls] == [("search_hotels", True)]
    assert fed.matched_live[travel.run_id] == ["by-test-case", "every-agent"]
