"""Scale-out by trace id on loopback: `toolscore serve` replicas behind the gateway Collector's `loadbalancing`
exporter, and agent load whose traces arrive in several batches over seconds.

    AgentLoad (copies of the captures, fresh trace ids) ─OTLP/gRPC─▶ gateway otelcol ─loadbalancing─▶ Replica 1..n
                                                                                      each ─forward─▶ its Downstream

Each replica forwards to a downstream of its own, so a test sees which replica got every span of a trace,
and keeps its scores in a score store of its own, so a test sees where each run was scored (`runs`).
Replicas can listen on addresses of their own in 127.0.0.0/8 with one port, as pods behind a headless
Service do, for the `dns` resolver over a name the test controls (`HostsFile`).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import yaml
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from tests.capture_replay import CAPTURES, TRUTH
from tests.serve_harness import Downstream, ServeProcess, free_port, serve_config
from toolscore.collector.extract import rebuild_runs
from toolscore.collector.sources import read_trace_file
from toolscore.collector.spans import SpanRecord

__all__ = ["AgentLoad", "HostsFile", "Replica", "RunRow", "every_run_expectation", "forwarded", "start_replica"]

RunRow = tuple[str, str, bool, int]
"""A run a replica scored: (trace id, run span id, flagged incomplete, calls)."""


@dataclass
class Replica:
    """One `toolscore serve` and the downstream it forwards to."""

    name: str
    process: ServeProcess
    downstream: Downstream
    address: str

    def runs(self) -> list[RunRow]:
        """Every run this replica scored, from its score store."""
        path = self.process.config["score_store"]["path"]
        if not Path(path).exists():
            return []
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            rows = db.execute("SELECT trace_id, span_id, incomplete, calls_total FROM runs").fetchall()
        return [(trace, span, bool(incomplete), calls) for trace, span, incomplete, calls in rows]

    def stop(self) -> int:
        status = self.process.terminate()
        return status


def every_run_expectation(path: Path) -> Path:
    """An expectation that matches every run (the score store keeps only runs an expectation matched), at `path`."""
    expectation = {
        "name": "scaleout.every-run",
        "match": {"service": {"regex": ""}},
        "scorers": [{"type": "tool_selection", "expected_tool": "any"}],
    }
    path.write_text(yaml.safe_dump({"expectations": [expectation]}))
    return path


def start_replica(
    root: Path, name: str, expectations: list[Path], host: str = "127.0.0.1", port: int = 0, **pipeline: Any
) -> Replica:
    """A replica on `host:port` (a free port when 0), scoring with `expectations`, in `root/name`."""
    folder = root / name
    folder.mkdir(parents=True)
    downstream = Downstream()
    address = f"{host}:{port or free_port()}"
    config = serve_config(
        folder,
        expectations,
        downstream,
        receiver={"grpc_endpoint": address, "http_endpoint": f"{host}:{free_port()}"},
        pipeline={"settle_ms": 500, "trace_idle_timeout_s": 5, "flag_runs_begun_before_start": True, **pipeline},
        shutdown_grace_s=20,
    )
    return Replica(name, ServeProcess(config, folder), downstream, address)


def _retrace(trace_id: bytes, copy: int) -> bytes:
    return copy.to_bytes(4, "big") + trace_id[4:]


@dataclass
class AgentLoad:
    """`copies` copies of every capture (tests/testdata/traces), each with its own trace ids, as agents would
    send them: a trace's spans in the order they ended (its run span, which mostly ends last, in the last batch),
    split into `parts` batches `gap_s` apart; a new trace every 1/`traces_per_s` seconds."""

    copies: int
    events: bool = True
    """With the captures whose calls are in GenAI log events (and those events); False: without both."""
    parts: int = 3
    gap_s: float = 1.0
    traces_per_s: float = 400.0
    spans: dict[bytes, list[tuple[Any, Any, Any]]] = field(default_factory=dict)
    logs: dict[bytes, list[tuple[Any, Any, Any]]] = field(default_factory=dict)
    """GenAI log events by trace id: sent with their trace's first batch, as the agent emits them alongside."""
    truth: dict[tuple[str, str], int] = field(default_factory=dict)
    """(trace id, run span id) hex of every run: how many calls it made."""
    inferred: set[tuple[str, str]] = field(default_factory=set)
    """The runs of `truth` with no run span of their own (inferred at a span, as `rebuild_runs` tells them)."""
    ends_early: set[tuple[str, str]] = field(default_factory=set)
    """The runs of `truth` whose run span ended before some of its own spans (LlamaIndex's workflow `run.task` under
    OpenLLMetry closes when the run starts its steps), or whose outer layer (`layers`), where a collector settles the
    run, ended before the run span under it: sent in an earlier batch than those spans, such a run settles before
    they arrive, and may be scored flagged incomplete, as a live collector must when it cannot tell what it lacks
    (a run span with nothing recognised under it yet: `runs._TraceRuns._blind`)."""
    incomplete: set[tuple[str, str]] = field(default_factory=set)
    """The runs of `truth` that cannot be read whole from their spans (their truth says `incomplete`: content
    capture off, say): flagged incomplete wherever they are scored."""
    origin: dict[str, Path] = field(default_factory=dict)
    """The capture each trace (hex id) is a copy of (`rebuilt`)."""
    layers: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    """The outer layer of each layered run of `truth` (*One run, several layers*) that ends before the run span
    (autogen-core's `invoke_agent` around OpenInference's AGENT span), mapped to that run: it arrives first, so a
    collector settles the run at it, with the same calls under it, and folds the later span in."""

    def __post_init__(self) -> None:
        for copy in range(1, self.copies + 1):
            for path in sorted(CAPTURES.glob("*/*.pb")):
                if not self.events and (path.name.endswith(".logs.pb") or path.with_suffix(".logs.pb").exists()):
                    continue
                if path.name.endswith(".logs.pb"):
                    logs = logs_service_pb2.ExportLogsServiceRequest.FromString(path.read_bytes())
                    for resource_logs in logs.resource_logs:
                        for scope_logs in resource_logs.scope_logs:
                            for record in scope_logs.log_records:
                                record.trace_id = _retrace(record.trace_id, copy)
                                self.logs.setdefault(record.trace_id, []).append(
                                    (resource_logs.resource, scope_logs.scope, record)
                                )
                    continue
                request = trace_service_pb2.ExportTraceServiceRequest.FromString(path.read_bytes())
                for resource_spans in request.resource_spans:
                    for scope_spans in resource_spans.scope_spans:
                        for span in scope_spans.spans:
                            span.trace_id = _retrace(span.trace_id, copy)
                            self.spans.setdefault(span.trace_id, []).append(
                                (resource_spans.resource, scope_spans.scope, span)
                            )
                self.inferred |= {
                    (f"{copy:08x}" + run.trace_id[8:], run.span_id or "")
                    for run in rebuild_runs(read_trace_file(path))
                    if run.inferred
                }
                truth_path = TRUTH / path.parent.name / path.name.replace(".pb", ".truth.json")
                truth = json.loads(truth_path.read_text()) if truth_path.exists() else {"runs": []}
                runs = truth["runs"]
                for run in runs:
                    trace_id = _retrace(bytes.fromhex(run["trace_id"]), copy).hex()
                    self.truth[(trace_id, run["agent_span_id"])] = len(run["calls"])
                    if run.get("incomplete"):
                        self.incomplete.add((trace_id, run["agent_span_id"]))
                spans = {span.span_id: span for span in read_trace_file(path)}
                self.origin |= {_retrace(bytes.fromhex(span.trace_id), copy).hex(): path for span in spans.values()}
                run_spans = {run["agent_span_id"] for run in runs}
                self.ends_early |= {
                    (_retrace(bytes.fromhex(spans[s].trace_id), copy).hex(), s) for s in _ending_early(spans, run_spans)
                }
                for inner in run_spans if truth.get("skipped", {}).get("run_layer") else ():
                    outer = spans.get(spans[inner].parent_id or "")
                    if outer is not None and outer.end_ns < spans[inner].end_ns:
                        trace_id = _retrace(bytes.fromhex(outer.trace_id), copy).hex()
                        self.layers[(trace_id, outer.span_id)] = (trace_id, inner)
                        self.ends_early.add((trace_id, inner))

    def rebuilt(self, trace_id: str, span_ids: set[str]) -> list[tuple[str, bool]]:
        """(span id, inferred) of the runs `rebuild_runs` finds in the spans `span_ids` of trace `trace_id` alone:
        what a replica that got only those can rebuild."""
        original = trace_id[8:]
        share = [
            s for s in read_trace_file(self.origin[trace_id]) if s.trace_id[8:] == original and s.span_id in span_ids
        ]
        return [(run.span_id or "", run.inferred) for run in rebuild_runs(share)]

    @property
    def keys(self) -> set[tuple[str, str]]:
        return {(span.trace_id.hex(), span.span_id.hex()) for items in self.spans.values() for _, _, span in items}

    def schedule(self, base_ns: int) -> list[tuple[float, Any]]:
        """(seconds from the start, request) for every batch, in time order; one request per 50 ms of batches.

        Each trace's times are moved and stretched onto its sending: it starts at `base_ns` plus its start
        offset and lasts the `parts - 1` gaps, in the proportions the capture recorded."""
        slots: dict[int, list[tuple[Any, Any, Any]]] = defaultdict(list)
        log_slots: dict[int, list[tuple[Any, Any, Any]]] = defaultdict(list)
        span_ns = max(1, int((self.parts - 1) * self.gap_s * 1e9))
        for i, items in enumerate(self.spans.values()):
            start = i / self.traces_per_s
            first = min(span.start_time_unix_nano for _, _, span in items)
            length = max(1, max(span.end_time_unix_nano for _, _, span in items) - first)
            for _, _, span in items:
                for name in ("start_time_unix_nano", "end_time_unix_nano"):
                    moved = base_ns + int(start * 1e9) + (getattr(span, name) - first) * span_ns // length
                    setattr(span, name, moved)
            ordered = sorted(items, key=lambda item: (item[2].end_time_unix_nano, item[2].parent_span_id != b""))
            log_slots[int(start / 0.05)].extend(self.logs.get(items[0][2].trace_id, ()))
            for part in range(self.parts):
                chunk = ordered[part * len(ordered) // self.parts : (part + 1) * len(ordered) // self.parts]
                slots[int((start + part * self.gap_s) / 0.05)].extend(chunk)
        out: list[tuple[float, Any]] = []
        for slot in sorted(log_slots.keys() | slots.keys()):
            if log_slots.get(slot):
                logs = logs_service_pb2.ExportLogsServiceRequest()
                for resource, scope, record in log_slots[slot]:
                    resource_logs = logs.resource_logs.add()
                    resource_logs.resource.CopyFrom(resource)
                    scope_logs = resource_logs.scope_logs.add()
                    scope_logs.scope.CopyFrom(scope)
                    scope_logs.log_records.append(record)
                out.append((slot * 0.05, logs))
            if slots.get(slot):
                request = trace_service_pb2.ExportTraceServiceRequest()
                for resource, scope, span in slots[slot]:
                    resource_spans = request.resource_spans.add()
                    resource_spans.resource.CopyFrom(resource)
                    scope_spans = resource_spans.scope_spans.add()
                    scope_spans.scope.CopyFrom(scope)
                    scope_spans.spans.append(span)
                out.append((slot * 0.05, request))
        return out

    def send(self, endpoint: str, on_progress: dict[float, Any] | None = None) -> float:
        """Send every batch at its time (`on_progress`: callbacks to run at given seconds);
        returns how long it took."""
        pending = sorted((on_progress or {}).items())
        schedule = self.schedule(time.time_ns())
        started = time.monotonic()
        with grpc.insecure_channel(endpoint) as channel:
            export_logs = logs_service_pb2_grpc.LogsServiceStub(channel).Export
            export_spans = trace_service_pb2_grpc.TraceServiceStub(channel).Export
            for at, request in schedule:
                export = export_logs if isinstance(request, logs_service_pb2.ExportLogsServiceRequest) else export_spans
                while pending and pending[0][0] <= at:
                    pending.pop(0)[1]()
                wait = started + at - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                export(request, timeout=30)
        for _, action in pending:
            action()
        return time.monotonic() - started


class HostsFile:
    """A hosts file the test owns, bind-mounted over /etc/hosts in the Collector's own mount namespace
    (`unshare`), so the `dns` resolver resolves a name the test controls. Rewritten in place: a bind mount
    follows the file, not its name."""

    def __init__(self, path: Path, name: str) -> None:
        self.path, self.name = path, name
        self._lock = threading.Lock()
        self.hosts: list[str] = []
        self.path.write_text("127.0.0.1 localhost\n")

    def set(self, hosts: list[str]) -> None:
        with self._lock:
            self.hosts = list(hosts)
            with self.path.open("r+") as f:
                f.truncate(0)
                f.write("127.0.0.1 localhost\n" + "".join(f"{host} {self.name}\n" for host in hosts))

    def command(self, argv: list[str]) -> list[str]:
        """`argv` run with this file as its /etc/hosts."""
        script = f'mount --bind "{self.path}" /etc/hosts && exec "$@"'
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *argv]


def forwarded(replicas: list[Replica]) -> Iterator[tuple[str, str, str]]:
    """(replica name, trace id, span id) of every span every replica forwarded."""
    for replica in replicas:
        for _, span in replica.downstream.spans():
            yield replica.name, span.trace_id.hex(), span.span_id.hex()


def _ending_early(by_id: dict[str, SpanRecord], run_span_ids: set[str]) -> set[str]:
    """The run spans among `run_span_ids` that ended before one of the spans under them did."""
    early: set[str] = set()
    for span in by_id.values():
        parent = by_id.get(span.parent_id or "")
        while parent is not None:
            if parent.span_id in run_span_ids and span.end_ns > parent.end_ns:
                early.add(parent.span_id)
            parent = by_id.get(parent.parent_id or "")
    return early
