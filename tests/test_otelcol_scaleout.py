"""Scale-out by trace id with the real gateway: the Kubernetes gateway's Collector config (its `loadbalancing`
exporter, `routing_key: traceID`, with the `static` resolver, or the `dns` resolver over a name the test controls)
in front of three `toolscore serve` replicas on loopback (tests/scaleout.py), under 1,072 agent traces whose
spans arrive in three batches over seconds."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.otelcol import Otelcol, gateway_config
from tests.resize import resize
from tests.scaleout import AgentLoad, HostsFile, Replica, every_run_expectation, forwarded, start_replica
from tests.serve_harness import free_port

pytestmark = pytest.mark.integration


def _wait_all(replicas: list[Replica], load: AgentLoad, timeout_s: float = 90.0) -> None:
    """Until every span was forwarded and every run scored somewhere, and nothing more came for a second."""
    deadline = time.monotonic() + timeout_s
    last, quiet_since = (-1, -1), time.monotonic()
    while time.monotonic() < deadline:
        spans = sum(1 for _ in forwarded(replicas))
        runs = sum(len(replica.runs()) for replica in replicas)
        if (spans, runs) != last:
            last, quiet_since = (spans, runs), time.monotonic()
        elif spans >= len(load.keys) and runs >= len(load.truth) and time.monotonic() - quiet_since > 1.0:
            return
        time.sleep(0.25)


@pytest.mark.parametrize("resolver", ["static", "dns"])
def test_three_replicas_score_every_run_once_each_trace_on_one_replica_every_span_forwarded_once(
    tmp_path: Path, resolver: str
) -> None:
    """`dns`: the replicas on 127.0.0.2-4 with one port, as pods behind a headless Service, and the gateway
    resolving `toolscore-headless` through a hosts file of its own (`HostsFile`) every second."""
    expectations = [every_run_expectation(tmp_path / "every-run.yaml")]
    # Without the captures whose calls are GenAI log events: the gateway keeps logs off the ring (docs/deploy.md).
    load = AgentLoad(copies=8, events=False, parts=3, gap_s=1.0, traces_per_s=400)
    assert len(load.spans) >= 1000
    port = free_port() if resolver == "dns" else 0
    with ExitStack() as stack:
        replicas = [
            start_replica(
                tmp_path, f"replica-{i}", expectations, **({"host": f"127.0.0.{i + 2}", "port": port} if port else {})
            )
            for i in range(3)
        ]
        for replica in replicas:
            stack.enter_context(replica.process)
            stack.callback(replica.downstream.stop)
        for replica in replicas:
            replica.process.wait_ready()  # as pods: in the gateway's list once ready
        wrap = None
        if resolver == "dns":
            hosts = HostsFile(tmp_path / "hosts", "toolscore-headless")
            hosts.set([replica.address.rsplit(":", 1)[0] for replica in replicas])
            wrap = hosts.command
            resolved = {"dns": {"hostname": "toolscore-headless", "port": str(port), "interval": "1s"}}
        else:
            resolved = {"static": {"hostnames": [replica.address for replica in replicas]}}
        config, listeners = gateway_config(tmp_path / "backend.pb", resolved)
        gateway = stack.enter_context(Otelcol(tmp_path, config, "gateway", wrap=wrap))
        gateway.wait_ready()
        if resolver == "dns":
            time.sleep(1.5)  # resolved once
        took = load.send(listeners["0.0.0.0:4317"])
        _wait_all(replicas, load)
        assert gateway.metric("otelcol_exporter_send_failed_spans_total") == 0, gateway.log()

        assert took >= 2.0, "each trace's spans arrive in batches over seconds"
        owners: dict[str, set[str]] = defaultdict(set)
        spans: Counter[tuple[str, str]] = Counter()
        for name, trace_id, span_id in forwarded(replicas):
            owners[trace_id].add(name)
            spans[(trace_id, span_id)] += 1
        assert set(spans) == load.keys, f"{len(load.keys - set(spans))} spans lost"
        doubled = {k for k, n in spans.items() if n > 1}
        where = Counter(
            tuple(sorted(n for n, t, sp in forwarded(replicas) if (t, sp) == k)) for k in list(doubled)[:50]
        )
        assert set(spans.values()) == {1}, f"every span forwarded once: {len(doubled)} twice, on {where}"
        assert {trace: len(names) for trace, names in owners.items() if len(names) > 1} == {}, "a trace on 2 replicas"
        per_replica = Counter(name for names in owners.values() for name in names)
        assert min(per_replica.values()) > len(owners) / 6, f"trace ids spread over the three replicas: {per_replica}"

        # a layered run's outer span, ending first, is where a collector settles the run: read as the run itself
        rows = [(*load.layers.get(row[:2], row[:2]), *row[2:]) for replica in replicas for row in replica.runs()]
        scored = Counter((trace_id, span_id) for trace_id, span_id, _, _ in rows)
        assert set(scored) == set(load.truth), "every run of the captures scored, nothing else"
        assert set(scored.values()) == {1}, "every run scored exactly once"
        flagged = {(t, s) for t, s, incomplete, _ in rows if incomplete}
        assert flagged <= load.ends_early | load.incomplete, (
            "no run flagged incomplete but those whose spans outlive their run span or cannot be read whole"
        )
        assert load.incomplete <= flagged, "every run that cannot be read whole flagged"
        short = {
            (t, s): (calls, load.truth[(t, s)])
            for t, s, _, calls in rows
            if calls != load.truth[(t, s)] and (t, s) not in flagged
        }
        assert short == {}, "every run with all its calls"
        for replica in replicas:
            assert replica.stop() == 0, replica.process.log()


def test_a_replica_leaving_and_one_joining_under_load_lose_and_double_nothing(tmp_path: Path) -> None:
    """The `dns` resolver over a name the test controls (tests/resize.py): replica 2 leaves as a pod does, its
    address out of the hosts file 2 s before SIGTERM (the deploy's preStop, longer than the resolver's 1 s
    interval), and it flushes before it exits; replica 4 joins. Every span reaches a downstream once, each trace
    split by the change is scored flagged incomplete on at least one side, and the only runs not scored under
    their own span id are inferred runs (no run span of their own) whose model response and root went to
    different replicas: the response's side scores what it holds flagged incomplete, or, when the response
    reached it with no span above it, has no run either, as the root's side has none to rebuild
    (tests/test_split_trace_runs.py; 1-4 of the load's runs on the shared 2-core VM; docs/deploy.md)."""
    outcome = resize(tmp_path, settle_ms=250, trace_idle_timeout_s=3, interval_s=1, prestop_s=2, copies=1)
    assert (outcome.spans_lost, outcome.spans_doubled) == (0, 0), outcome
    assert (outcome.missing_marked, outcome.missing_unflagged) == (0, 0), outcome
    assert outcome.incomplete >= outcome.fragments, outcome
