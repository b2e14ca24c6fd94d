"""Spans per second end to end through the gateway Collector in front of 1, 2 and 3 `toolscore serve` replicas,
beside the Collector alone forwarding the same load.

    load generator (process) ─OTLP/gRPC─▶ gateway otelcol (deploy/kubernetes/otelcol/config.yaml, static resolver)
        ─loadbalancing─▶ n × toolscore serve (score + forward) ─OTLP/gRPC─▶ sink (this process)
        ─loadbalancing─▶ sink directly: `scaleout.collector.spans_per_s`, the baseline

bench_collector's load (bench_extract's agent traces, fresh trace ids each round), timed from the generator's
first send to the sink holding every span of the round. No pinning: everything shares the machine's cores,
as replicas on one host would; on 2 cores, more replicas add processes, not cores, so the figures say what
the gateway costs and how far replicas on one host go, not what n hosts give.
"""

from __future__ import annotations

import multiprocessing
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import yaml

from tests.bench.bench_collector import EXPECTATION, _batches, _generator, _Rounds, _Sink
from tests.bench.harness import Bench
from tests.otelcol import Otelcol, gateway_config
from tests.serve_harness import ServeProcess, free_port

REPLICAS = (1, 2, 3)
COPIES_PER_ROUND = 3
RUNS = 3


def _replica(root: Path, sink_port: int) -> ServeProcess:
    root.mkdir()
    (root / "expectations.yaml").write_text(yaml.safe_dump(EXPECTATION))
    config = {
        "receiver": {"grpc_endpoint": f"127.0.0.1:{free_port()}", "http_endpoint": f"127.0.0.1:{free_port()}"},
        "pipeline": {"settle_ms": 100},
        "registry": {"store": {"type": "memory"}, "files": [str(root / "expectations.yaml")], "watch_files": False},
        "forward": {"endpoint": f"http://127.0.0.1:{sink_port}"},
        "score_store": {"path": str(root / "scores.db")},
        "telemetry": {"prometheus_port": free_port()},
        "ui": {"enabled": False},  # three replicas at once: the page's default port is one
    }
    (root / "serve.yaml").write_text(yaml.safe_dump(config))
    return ServeProcess(root / "serve.yaml", root)


def _gateway(root: Path, name: str, hosts: list[str]) -> tuple[Otelcol, str]:
    config, listeners = gateway_config(root / f"{name}.pb", {"static": {"hostnames": hosts}})
    gateway = Otelcol(root, config, name)
    gateway.wait_ready()
    return gateway, listeners["0.0.0.0:4317"]


def bench(b: Bench, *, quick: bool = False) -> None:
    """`quick`: one small round per target, for the smoke test."""
    runs = 1 if quick else RUNS
    warmup = 0 if quick else 1
    _, spans_per_copy = _batches(quick)
    spans_per_round = spans_per_copy * (1 if quick else COPIES_PER_ROUND)
    context = multiprocessing.get_context("spawn")  # grpc must not be forked
    sink = _Sink()
    ours, theirs = context.Pipe()
    rounds_needed = (1 + len(REPLICAS)) * (runs + warmup)
    copies = 1 if quick else COPIES_PER_ROUND
    generator = context.Process(target=_generator, args=(theirs, rounds_needed, quick, copies), daemon=True)
    with tempfile.TemporaryDirectory(prefix="toolscore-bench-") as tmp, ExitStack() as stack:
        root = Path(tmp)
        generator.start()
        stack.callback(generator.join, 5)
        stack.callback(ours.send, None)
        stack.callback(sink.server.stop, 0)
        assert ours.poll(120), "the load generator prepares its requests within 120 s"
        assert ours.recv() == "ready"
        rounds = _Rounds(ours, sink, spans_per_round)
        alone, endpoint = _gateway(root, "collector", [f"127.0.0.1:{sink.port}"])
        b.rate(
            "scaleout.collector.spans_per_s",
            lambda: rounds.run(endpoint),
            spans_per_round,
            unit="spans/s",
            runs=runs,
            warmup=warmup,
            clock=time.perf_counter,
        )
        alone.terminate()
        replicas = [_replica(root / f"replica-{i}", sink.port) for i in range(max(REPLICAS))]
        for replica in replicas:
            stack.enter_context(replica)
        for replica in replicas:
            replica.wait_ready()
        for n in REPLICAS:  # the first n replicas behind the gateway; the others idle
            gateway, endpoint = _gateway(root, f"gateway-{n}", [replica.grpc_endpoint for replica in replicas[:n]])
            b.rate(
                f"scaleout.spans_per_s.{n}",
                lambda endpoint=endpoint: rounds.run(endpoint),
                spans_per_round,
                unit="spans/s",
                baseline="scaleout.collector.spans_per_s",
                runs=runs,
                warmup=warmup,
                clock=time.perf_counter,
            )
            gateway.terminate()
        for replica in replicas:
            replica.terminate()
        print(f"scaleout: {spans_per_round:,} spans per round; requests retried: {rounds.retries}")
