"""Soak: steady orphan traffic into a real `toolscore serve`, its resident memory read from /proc every few seconds.

Not part of `make test` or `make bench` (it takes minutes): `python -m tests.bench.soak_orphans --minutes 4`.
Orphans (tool spans under a parent that never comes, no run) are the traffic under which the issue #27 probe saw
RSS creep ~1.3 MB/min: each trace waits `trace_idle_timeout_s` (30 s), then its span ids are remembered until
`max_pending_traces` (10,000) more traces have finished. At `--rate` traces a second the memory fills in
30 s + 10,000 / rate, then turns over: the script prints RSS over time, and its slope while the memory fills and
once it has, which should be flat (allocator noise of a few hundred KB either way).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import requests
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.serve_harness import Downstream, ServeProcess, serve_config


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _orphans(first: int, traces: int, spans: int) -> bytes:
    """One export request of `traces` orphan traces of `spans` tool spans each."""
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for trace in range(first, first + traces):
        for k in range(1, spans + 1):
            span = scope.spans.add()
            span.trace_id = trace.to_bytes(16, "big")
            span.span_id = (trace << 16 | k).to_bytes(8, "big")
            span.parent_span_id = b"\xff" * 8
            span.name = f"execute_tool t{k}"
            span.start_time_unix_nano, span.end_time_unix_nano = time.time_ns() - 1000, time.time_ns()
            for key, value in (("gen_ai.operation.name", "execute_tool"), ("gen_ai.tool.name", f"t{k}")):
                attribute = span.attributes.add()
                attribute.key, attribute.value.string_value = key, value
    return request.SerializeToString()


def _slope_kib_per_min(samples: list[tuple[float, int]]) -> float:
    """Least-squares slope of RSS over time."""
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_r = sum(r for _, r in samples) / n
    var = sum((t - mean_t) ** 2 for t, _ in samples) or 1.0
    return sum((t - mean_t) * (r - mean_r) for t, r in samples) / var * 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=4.0)
    parser.add_argument("--rate", type=int, default=100, help="orphan traces a second")
    parser.add_argument("--spans", type=int, default=3, help="spans per trace")
    parser.add_argument("--every", type=float, default=10.0, help="seconds between RSS samples")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        downstream = Downstream()
        config = serve_config(Path(tmp), [], downstream)
        with ServeProcess(config, Path(tmp)) as process:
            process.wait_ready()
            url = f"{process.http_url}/v1/traces"
            headers = {"Content-Type": "application/x-protobuf"}
            session = requests.Session()
            started = next_sample = time.monotonic()
            samples: list[tuple[float, int]] = []
            trace = 1
            while (now := time.monotonic()) - started < args.minutes * 60:
                body = _orphans(trace, args.rate, args.spans)
                trace += args.rate
                assert session.post(url, data=body, headers=headers, timeout=10).status_code == 200
                if now >= next_sample:
                    rss = _rss_kib(process.proc.pid)
                    samples.append((now - started, rss))
                    print(f"{now - started:6.0f} s  {trace - 1:8d} traces  RSS {rss / 1024:7.1f} MiB", flush=True)
                    next_sample += args.every
                time.sleep(max(0.0, 1.0 - (time.monotonic() - now)))
            process.terminate()
        downstream.stop()
    filled_s = 30 + 10_000 / args.rate + args.every  # trace_idle_timeout_s, then max_pending_traces finished traces
    filling = [sample for sample in samples if sample[0] < filled_s]
    filled = [sample for sample in samples if sample[0] >= filled_s]
    print(f"RSS slope while the memory fills (< {filled_s:.0f} s): {_slope_kib_per_min(filling) / 1024:+.2f} MiB/min")
    if len(filled) > 1:
        low, high = min(rss for _, rss in filled) / 1024, max(rss for _, rss in filled) / 1024
        print(f"once filled: {_slope_kib_per_min(filled) / 1024:+.2f} MiB/min, RSS {low:.1f}-{high:.1f} MiB")


if __name__ == "__main__":
    main()
