"""Spans per second through `toolscore serve` over OTLP/gRPC, beside a pass-through receiver, same run, same load.

    load generator (process) ─OTLP/gRPC─→ toolscore serve (process: score + forward) ─OTLP/gRPC─→ sink (this process)
                             └─OTLP/gRPC─→ pass-through (process: parse + re-export)  ─OTLP/gRPC─→ sink

Five loads, one after the other. The all-agent load is bench_extract's GenAI agent traces (~430 spans,
~330 kB per request). The mixed loads (`mixed`) hold 10% and 1% agent spans among the same service's HTTP
and database spans, ~512 spans per request, the agent traces either in the same requests as the plain
ones (`_same`) or in requests of their own (`_separate`); on them a second `serve`, with its pre-filter
off (`pipeline.prefilter: false`), takes its turn too, so the pre-filter's effect is measured in the same
run. Requests are pre-encoded by the generator before timing (one load's rounds at a time), with fresh
trace ids in every round so each round's runs are new to the collector. A round is timed from the
generator's first send to the sink holding every span of the round, so the collector's settle delay for
run spans is in the figure; the `cpu_spans_per_s` figures divide by the receiving process's CPU time
instead. With two or more CPUs
the collector (and the pass-through) is pinned to CPU 0 and the generator and sink to the others:
the target is for one core. `serve` pushes back with RESOURCE_EXHAUSTED when its queues are full;
the generator then retries the request after a few milliseconds, as an OTLP exporter would.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import sqlite3
import tempfile
import threading
import time
from concurrent import futures
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import grpc
import yaml
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

from tests.bench.harness import Bench
from tests.bench.mixed import mixed_batches
from tests.serve_harness import ServeProcess, free_port

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
COPIES_PER_ROUND = 6
"""bench_extract's 10 requests, six times with different trace ids: ~25,600 spans per round."""
PAIRS = 7
MIXED_SPANS_PER_ROUND = 25_600
"""A mixed load's round: as many spans as the all-agent load's, in requests of ~512 spans."""
LOADS = {
    "mixed10_same": (0.10, True),
    "mixed10_separate": (0.10, False),
    "mixed1_same": (0.01, True),
    "mixed1_separate": (0.01, False),
}
"""(share of agent spans, whether they share requests with the plain traces) per mixed load."""
TARGETS = {"all_agent": 0.12, "mixed10_same": 0.5, "mixed10_separate": 0.5, "mixed1_same": 0.9, "mixed1_separate": 0.9}
"""Issue #29's floor for each load's ratio to the pass-through receiver."""
IN_FLIGHT = 8
RETRY_S = 0.005
EXPECTATION = {
    "name": "travel",
    "match": {"agent": "travel-agent"},
    "scorers": [
        {"type": "tool_selection", "expected_tool": "search_flights"},
        {"type": "trajectory", "mode": "unordered", "expected": [{"name": "search_flights"}, {"name": "get_weather"}]},
    ],
}


def _renumbered(data: bytes, tag: int) -> bytes:
    """The request with `tag` written into the first four bytes of every trace id."""
    request = ExportTraceServiceRequest.FromString(data)
    prefix = tag.to_bytes(4, "big")
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                span.trace_id = prefix + span.trace_id[4:]
    return request.SerializeToString()


def _send_round(stub: Any, requests: list[bytes]) -> int:
    """Every request, `IN_FLIGHT` at a time; RESOURCE_EXHAUSTED ones are sent again. Returns the retries."""
    pending = list(reversed(requests))
    done: queue.SimpleQueue[tuple[Any, bytes]] = queue.SimpleQueue()
    in_flight = retries = 0
    while pending or in_flight:
        while pending and in_flight < IN_FLIGHT:
            data = pending.pop()
            call = stub.future(data, timeout=30)
            call.add_done_callback(lambda call, data=data: done.put((call, data)))
            in_flight += 1
        call, data = done.get(timeout=60)
        in_flight -= 1
        error = call.exception()
        if error is None:
            continue
        if error.code() is not grpc.StatusCode.RESOURCE_EXHAUSTED:
            raise RuntimeError(f"export failed: {error.code()} {error.details()}")
        retries += 1
        time.sleep(RETRY_S)
        pending.append(data)
    return retries


def _generator(conn: Connection, rounds: int, quick: bool, copies: int | None = None) -> None:
    """The load generator process: prepare the all-agent load's rounds (`copies` of its batches each, by default
    `COPIES_PER_ROUND`); on `("load", name, index)` prepare that load's rounds instead (untimed), then send one
    round per `(endpoint, round)` command; None ends it."""
    prepared = _prepare("all_agent", 0, rounds, quick, copies)
    conn.send("ready")
    stubs: dict[str, Any] = {}
    while (command := conn.recv()) is not None:
        if command[0] == "load":
            prepared = []  # the previous load's rounds go first: one load's rounds in memory at a time
            prepared = _prepare(command[1], command[2], rounds, quick)
            conn.send(sum(1 for _ in prepared))
            continue
        endpoint, r = command
        if endpoint not in stubs:
            channel = grpc.insecure_channel(endpoint, options=[("grpc.max_send_message_length", 64 << 20)])
            stubs[endpoint] = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
        conn.send(_send_round(stubs[endpoint], prepared[r]))


def _prepare(name: str, index: int, rounds: int, quick: bool, copies: int | None = None) -> list[list[bytes]]:
    """Every round of load `name` (the `index`-th load), each with trace ids of its own."""
    batches, _ = _load_batches(name, quick)
    copies = copies or (1 if quick or name != "all_agent" else COPIES_PER_ROUND)
    base = index * 10_000
    return [
        [_renumbered(data, base + r * copies + c + 1) for c in range(copies) for data in batches] for r in range(rounds)
    ]


def _load_batches(name: str, quick: bool) -> tuple[list[bytes], int]:
    """The requests of one copy of load `name` and their span count (a round sends `COPIES_PER_ROUND` copies of
    the all-agent load's, one of a mixed load's)."""
    if name == "all_agent":
        return _batches(quick)
    share, together = LOADS[name]
    return mixed_batches(share, together, spans=2_000 if quick else MIXED_SPANS_PER_ROUND)


def _passthrough(port: int, sink: str) -> None:
    """The baseline process: an OTLP/gRPC receiver that parses each request and exports it on, nothing else."""
    stub = TraceServiceStub(grpc.insecure_channel(sink))

    def export(request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:
        stub.Export(request, timeout=30)
        return ExportTraceServiceResponse()

    handler = grpc.unary_unary_rpc_method_handler(
        export,
        request_deserializer=ExportTraceServiceRequest.FromString,
        response_serializer=ExportTraceServiceResponse.SerializeToString,
    )
    service = grpc.method_handlers_generic_handler(
        "opentelemetry.proto.collector.trace.v1.TraceService", {"Export": handler}
    )
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8), options=[("grpc.max_receive_message_length", 64 << 20)]
    )
    server.add_generic_rpc_handlers((service,))
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    server.wait_for_termination()


class _Sink:
    """The downstream both targets export to: counts the spans it receives."""

    def __init__(self) -> None:
        self.spans = 0
        self._cond = threading.Condition()
        handler = grpc.unary_unary_rpc_method_handler(self._export, request_deserializer=None, response_serializer=None)
        service = grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.trace.v1.TraceService", {"Export": handler}
        )
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=8), options=[("grpc.max_receive_message_length", 64 << 20)]
        )
        self.server.add_generic_rpc_handlers((service,))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def _export(self, data: bytes, context: Any) -> bytes:
        request = ExportTraceServiceRequest.FromString(data)
        n = sum(len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans)
        with self._cond:
            self.spans += n
            self._cond.notify_all()
        return b""

    def wait_for(self, total: int, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self.spans < total:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"the sink has {self.spans} of {total} spans after {timeout_s} s")
                self._cond.wait(left)


def _pin(pid: int, cpus: set[int]) -> None:
    if len(os.sched_getaffinity(0)) >= 2:
        os.sched_setaffinity(pid, cpus)


def _serve_config(root: Path, sink_port: int, *, prefilter: bool = True) -> Path:
    (root / "expectations.yaml").write_text(yaml.safe_dump(EXPECTATION))
    config = {
        "receiver": {"grpc_endpoint": f"127.0.0.1:{free_port()}", "http_endpoint": f"127.0.0.1:{free_port()}"},
        "pipeline": {"settle_ms": 100, "prefilter": prefilter},
        "registry": {"store": {"type": "memory"}, "files": [str(root / "expectations.yaml")], "watch_files": False},
        "forward": {"endpoint": f"http://127.0.0.1:{sink_port}"},
        "score_store": {"path": str(root / "scores.db")},
        "telemetry": {"prometheus_port": free_port()},
        "ui": {"enabled": False},  # two collectors run side by side here
    }
    path = root / "serve.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


class _Rounds:
    """Hands out round numbers and times a round: generator sends, sink counts."""

    def __init__(self, conn: Connection, sink: _Sink, spans_per_round: int) -> None:
        self.conn, self.sink, self.spans_per_round = conn, sink, spans_per_round
        self.next = 0
        """Rounds are handed out in order; a load prepares `3 * (pairs + 1)` of them (three endpoints at most)."""
        self.retries: dict[str, int] = {}

    def run(self, endpoint: str) -> None:
        target = self.sink.spans + self.spans_per_round
        self.conn.send((endpoint, self.next))
        self.next += 1
        if not self.conn.poll(60):
            raise AssertionError("the load generator did not finish a round within 60 s")
        self.retries[endpoint] = self.retries.get(endpoint, 0) + self.conn.recv()
        self.sink.wait_for(target)


def _batches(quick: bool) -> tuple[list[bytes], int]:
    from tests.bench.bench_extract import make_batches

    return make_batches(batches=1, runs_per_batch=5) if quick else make_batches()


def bench(b: Bench, *, quick: bool = False) -> None:
    """`quick`: one round of each load each way, small, for the smoke test."""
    pairs = 1 if quick else PAIRS
    context = multiprocessing.get_context("spawn")  # grpc must not be forked
    sink = _Sink()
    ours, theirs = context.Pipe()
    generator = context.Process(target=_generator, args=(theirs, 3 * (pairs + 1), quick), daemon=True)
    passthrough_port = free_port()
    passthrough = context.Process(target=_passthrough, args=(passthrough_port, f"127.0.0.1:{sink.port}"), daemon=True)
    with tempfile.TemporaryDirectory(prefix="toolscore-bench-") as tmp:
        root, unfiltered_root = Path(tmp) / "serve", Path(tmp) / "unfiltered"
        root.mkdir()
        unfiltered_root.mkdir()
        serve = ServeProcess(_serve_config(root, sink.port), root)
        unfiltered = ServeProcess(_serve_config(unfiltered_root, sink.port, prefilter=False), unfiltered_root)
        try:
            generator.start()
            passthrough.start()
            for pid in (serve.proc.pid, unfiltered.proc.pid, passthrough.pid or 0):
                _pin(pid, {0})
            _pin(generator.pid or 0, set(range(1, os.cpu_count() or 2)))
            _pin(0, set(range(1, os.cpu_count() or 2)))
            serve.wait_ready()
            unfiltered.wait_ready()
            assert ours.poll(60), "the load generator starts within 60 s"
            assert ours.recv() == "ready"
            base = f"127.0.0.1:{passthrough_port}"
            for index, name in enumerate(("all_agent", *LOADS)):
                ours.send(("load", name, index))
                assert ours.poll(600), f"the load generator prepares the {name} load within 600 s"
                ours.recv()
                _, spans = _load_batches(name, quick)
                rounds = _Rounds(ours, sink, spans * (COPIES_PER_ROUND if name == "all_agent" and not quick else 1))
                endpoints = {
                    "baseline": (base, passthrough.pid or 0),
                    "toolscore": (serve.grpc_endpoint, serve.proc.pid),
                }
                if name != "all_agent":
                    endpoints["no_prefilter"] = (unfiltered.grpc_endpoint, unfiltered.proc.pid)
                _measure(b, name, rounds, endpoints, pairs)
                print(
                    f"collector.ingest.{name}: {rounds.spans_per_round:,} spans per round; requests retried after"
                    f" RESOURCE_EXHAUSTED: {rounds.retries}",
                    flush=True,
                )
            serve.terminate()
            with sqlite3.connect(root / "scores.db") as db:
                (stored,) = db.execute("SELECT count(*) FROM runs").fetchone()
            assert stored >= (5 if quick else 2400), "the collector scored (at least a round of) the runs it forwarded"
            print(f"collector.ingest: {stored:,} scored runs kept", flush=True)
        finally:
            ours.send(None)
            generator.join(5)
            passthrough.terminate()
            passthrough.join(5)
            serve.terminate()
            unfiltered.terminate()
            sink.server.stop(0)


def _cpu_s(pid: int) -> float:
    """CPU time (user + system, every thread) the process has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure(b: Bench, name: str, rounds: _Rounds, endpoints: dict[str, tuple[str, int]], pairs: int) -> None:
    """Spans per second through each endpoint, rounds alternating (a warm-up first), ratios against the baseline.

    Two figures per endpoint: spans per second of wall time, a round timed from the first send to the sink
    holding every span (so the settle delay of the round's last runs is in it: with 1% of agent spans that
    delay is most of a round), and spans per second of the receiving process's CPU time (every thread),
    which is what a saturated core would sustain.
    """
    wall: dict[str, list[float]] = {which: [] for which in endpoints}
    cpu: dict[str, list[float]] = {which: [] for which in endpoints}
    for i in range(pairs + 1):
        for which, (endpoint, pid) in endpoints.items():
            start, used = time.perf_counter(), _cpu_s(pid)
            rounds.run(endpoint)
            if i:
                wall[which].append(rounds.spans_per_round / (time.perf_counter() - start))
                cpu[which].append(rounds.spans_per_round / max(_cpu_s(pid) - used, 0.01))
    prefix = "collector.ingest" if name == "all_agent" else f"collector.ingest.{name}"
    for samples, figure in ((wall, "spans_per_s"), (cpu, "cpu_spans_per_s")):
        baseline = f"{prefix}.baseline.{figure}"
        if "no_prefilter" in samples:
            b.paired(
                f"{prefix}.no_prefilter.{figure}",
                samples["no_prefilter"],
                baseline,
                samples["baseline"],
                unit="spans/s",
            )
        b.paired(f"{prefix}.{figure}", samples["toolscore"], baseline, samples["baseline"], unit="spans/s")
        b.target(f"{prefix}.{figure}", ">=", TARGETS[name])
