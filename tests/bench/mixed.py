"""Mixed traffic: agent runs among the HTTP and database spans of the same service, as production sends it.

An agent trace is an HTTP server span (`POST /trips/plan`) over bench_extract's GenAI agent run, with the
run's own I/O below it: an HTTP client span (the provider's API) under each `chat` span and a database
query under each `execute_tool` span. A plain trace is an HTTP request of the same service with no agent
in it: a server span, two or three database queries and one outgoing HTTP call. The spans follow the OTel
HTTP and database semantic conventions (`http.request.method`, `url.full`, `http.route`,
`db.system.name`, `db.query.text`, ...), 8-11 attributes each, from the instrumentations' own scopes.

`agent_share` is the share of all spans that are agent spans (those of the GenAI instrumentation): plain
and agent traces are interleaved to hold it, whole traces at a time. Spans end children first, as the
SDK's processors see them.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, set_span_in_context

from tests.bench.bench_extract import EPOCH_NS, MODEL, chat_attributes
from tests.bench.workload import TOOLS, make_args

__all__ = ["AGENT_SCOPE", "Tracers", "generated_spans", "mixed_batches", "play_mixed"]

AGENT_SCOPE = "opentelemetry.instrumentation.openai_agents"
_HTTP_SERVER, _HTTP_CLIENT, _DB = (
    "opentelemetry.instrumentation.fastapi",
    "opentelemetry.instrumentation.httpx",
    "opentelemetry.instrumentation.psycopg",
)
_ROUTES = ("/trips/{trip_id}", "/users/{user_id}/bookings", "/flights/search", "/health/ready")
_TABLES = ("bookings", "users", "flights", "hotels", "payments")


class Tracers:
    """The four tracers of the service: the GenAI instrumentation's, the HTTP server's and client's, the DB's."""

    def __init__(self, provider: TracerProvider) -> None:
        self.agent = provider.get_tracer(AGENT_SCOPE, "0.9.0")
        self.server = provider.get_tracer(_HTTP_SERVER, "0.48b0")
        self.client = provider.get_tracer(_HTTP_CLIENT, "0.48b0")
        self.db = provider.get_tracer(_DB, "0.48b0")


def _server_span(tracers: Tracers, rng: random.Random, t: int, route: str, method: str) -> Span:
    path = route.replace("{trip_id}", str(rng.randint(1, 99999))).replace("{user_id}", f"u-{rng.randint(1000, 9999)}")
    span = tracers.server.start_span(f"{method} {route}", kind=SpanKind.SERVER, start_time=t)
    span.set_attributes(
        {
            "http.request.method": method,
            "http.route": route,
            "url.path": path,
            "url.scheme": "https",
            "server.address": "travel.example.com",
            "server.port": 443,
            "client.address": f"10.0.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
            "user_agent.original": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)",
            "network.protocol.version": "1.1",
            "http.response.status_code": 200,
        }
    )
    return span


def _client_span(tracers: Tracers, rng: random.Random, parent: Span, t: int, url: str, *, method: str = "GET") -> None:
    host = url.split("/")[2]
    span = tracers.client.start_span(method, set_span_in_context(parent), kind=SpanKind.CLIENT, start_time=t)
    span.set_attributes(
        {
            "http.request.method": method,
            "url.full": url,
            "server.address": host,
            "server.port": 443,
            "network.protocol.version": "1.1",
            "http.response.status_code": 200,
            "http.request.body.size": rng.randint(200, 4000),
            "http.response.body.size": rng.randint(200, 40000),
        }
    )
    span.end(end_time=t + 600_000)


def _db_span(tracers: Tracers, rng: random.Random, parent: Span, t: int) -> None:
    table = rng.choice(_TABLES)
    span = tracers.db.start_span(f"SELECT {table}", set_span_in_context(parent), kind=SpanKind.CLIENT, start_time=t)
    span.set_attributes(
        {
            "db.system.name": "postgresql",
            "db.namespace": "travel",
            "db.operation.name": "SELECT",
            "db.collection.name": table,
            "db.query.text": f"SELECT id, status, updated_at FROM {table} WHERE user_id = $1 AND created_at > $2",
            "db.response.returned_rows": rng.randint(0, 50),
            "server.address": "db.internal",
            "server.port": 5432,
            "network.peer.address": "10.1.0.12",
        }
    )
    span.end(end_time=t + 300_000)


def plain_trace(tracers: Tracers, rng: random.Random, t: int) -> int:
    """One HTTP request with no agent in it; returns its span count."""
    root = _server_span(tracers, rng, t, rng.choice(_ROUTES), rng.choice(("GET", "GET", "POST")))
    queries = rng.randint(2, 3)
    for q in range(queries):
        _db_span(tracers, rng, root, t + (q + 1) * 400_000)
    _client_span(tracers, rng, root, t + 2_000_000, f"https://payments.example.net/v1/charges/{rng.randint(1, 9999)}")
    root.end(end_time=t + 3_000_000)
    return queries + 2


def _chat(tracers: Tracers, rng: random.Random, parent: Span, t: int, calls: list[tuple[str, str, str]]) -> None:
    span = tracers.agent.start_span("chat gpt-4.1", set_span_in_context(parent), kind=SpanKind.CLIENT, start_time=t)
    span.set_attributes(chat_attributes(rng, calls, temperature=None))
    _client_span(tracers, rng, span, t + 10_000, "https://api.openai.com/v1/chat/completions", method="POST")
    span.end(end_time=t + 900_000)


def _tool(tracers: Tracers, rng: random.Random, parent: Span, t: int, call: tuple[str, str, str]) -> None:
    call_id, name, args = call
    span = tracers.agent.start_span(f"execute_tool {name}", set_span_in_context(parent), start_time=t)
    fail = rng.random() < 0.05
    span.set_attributes(
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.call.arguments": args,
            "gen_ai.tool.call.result": json.dumps({"ok": not fail, "items": rng.randint(0, 9)}),
            "gen_ai.agent.name": "travel-agent",
            "code.function.name": f"tools.{name}",
        }
    )
    _db_span(tracers, rng, span, t + 10_000)
    if fail:
        span.set_status(Status(StatusCode.ERROR, "upstream timed out"))
        span.set_attribute("error.type", "TimeoutError")
    span.end(end_time=t + 400_000)


def agent_trace(tracers: Tracers, rng: random.Random, t: int) -> tuple[int, int]:
    """An HTTP request that runs the agent; returns (agent spans, plain spans)."""
    root = _server_span(tracers, rng, t, "/trips/plan", "POST")
    run = tracers.agent.start_span("invoke_agent travel-agent", set_span_in_context(root), start_time=t + 100_000)
    run.set_attributes(
        {
            **MODEL,
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "travel-agent",
            "gen_ai.conversation.id": f"conv-{rng.getrandbits(32):x}",
            "gen_ai.usage.input_tokens": rng.randint(1000, 9000),
            "gen_ai.usage.output_tokens": rng.randint(100, 900),
        }
    )
    at = t + 1_000_000
    calls = [(f"call_{i}", rng.choice(TOOLS), json.dumps(make_args(rng))) for i in range(rng.randint(3, 8))]
    chats = 0
    for step in range(0, len(calls), 2):
        _chat(tracers, rng, run, at, calls[step : step + 2])
        chats += 1
        for call in calls[step : step + 2]:
            at += 1_000_000
            _tool(tracers, rng, run, at, call)
    _chat(tracers, rng, run, at + 1_000_000, [])
    chats += 1
    run.end(end_time=at + 2_000_000)
    root.end(end_time=at + 2_100_000)
    agent = 1 + chats + len(calls)
    return agent, 1 + chats + len(calls)


def play_mixed(
    tracers: Tracers, agent_share: float, spans: int, seed: int = 5, between: Callable[[], None] | None = None
) -> tuple[int, int]:
    """Traces until `spans` spans have ended, `agent_share` of them agent spans; returns (agent, total) spans."""
    rng = random.Random(seed)
    agent = total = k = 0
    while total < spans:
        t = EPOCH_NS + k * 10**9
        k += 1
        if agent <= agent_share * total:
            a, p = agent_trace(tracers, rng, t)
            agent, total = agent + a, total + a + p
        else:
            total += plain_trace(tracers, rng, t)
        if between is not None:
            between()
    return agent, total


def generated_spans(agent_share: float, spans: int, seed: int = 5) -> tuple[list[ReadableSpan], int]:
    """The ended spans of `play_mixed` in the order they ended, and how many of them are agent spans."""
    from tests.bench.bench_inprocess import RESOURCE

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=RESOURCE)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracers = Tracers(provider)
    agent, _ = play_mixed(tracers, agent_share, spans, seed)
    ended = list(exporter.get_finished_spans())
    provider.shutdown()
    return ended, agent


def mixed_batches(
    agent_share: float, together: bool, spans: int, per_request: int = 512, seed: int = 5
) -> tuple[list[bytes], int]:
    """`generated_spans` as OTLP requests of `per_request` spans in the order they ended, and their span count.

    `together`: every request holds whatever ended next, agent traces and plain ones alike. Otherwise the
    agent traces (their HTTP and database spans included) and the plain traces go in requests of their own,
    the agent requests spread evenly among the plain ones (two services' exporters, or one batching apart).
    """
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    ended, _ = generated_spans(agent_share, spans, seed)

    def chunks(items: list[ReadableSpan]) -> list[list[ReadableSpan]]:
        return [items[i : i + per_request] for i in range(0, len(items), per_request)]

    if together:
        requests = chunks(ended)
    else:
        agent_traces = {s.context.trace_id for s in ended if s.instrumentation_scope.name == AGENT_SCOPE}  # type: ignore[union-attr]
        agent = chunks([s for s in ended if s.context.trace_id in agent_traces])  # type: ignore[union-attr]
        plain = chunks([s for s in ended if s.context.trace_id not in agent_traces])  # type: ignore[union-attr]
        placed = [((i + 0.5) / len(agent), c) for i, c in enumerate(agent)] + [
            ((i + 0.5) / len(plain), c) for i, c in enumerate(plain)
        ]
        requests = [c for _, c in sorted(placed, key=lambda item: item[0])]
    return [encode_spans(chunk).SerializeToString() for chunk in requests], len(ended)
