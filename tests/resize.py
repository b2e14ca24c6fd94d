"""Resize under load: a replica leaves and one joins behind the gateway's `dns` resolver while traces are in flight,
and what that does to the runs (`resize`); `python -m tests.resize` prints it over several settings.

    AgentLoad ─▶ gateway otelcol (its own /etc/hosts: `toolscore-headless` → 127.0.0.2, .3, .4, then .5)
                   ─loadbalancing, dns resolver every `interval_s`─▶ replicas, one port, one address each

At `leave_at_s` replica 2 leaves as a pod does: with `prestop_s` > 0, its address leaves the hosts file first and
SIGTERM follows `prestop_s` later (Kubernetes' preStop sleep); with 0, both at once. At `join_at_s` replica 4
starts, and enters the hosts file once ready. Counted over every run of the load:

- `fragments`: traces whose spans reached two replicas (split by the ring's change);
- `extra_runs`: runs scored beyond the load's own (a fragment scored as a run of its own);
- `incomplete`: runs flagged incomplete;
- `short_unflagged`: runs scored with fewer calls than they made and not flagged incomplete (the harm: a
  score that looks sound and is not);
- `missing_runs`: runs of the load not scored anywhere (under their own span id); of them `missing_marked`: runs
  with a run span of their own; `missing_bare`: inferred runs that no replica could rebuild from the spans it got
  (a run that called no tool, whose model response reached a replica with no span above it: one response alone is
  no run, tests/test_split_trace_runs.py); and `missing_unflagged`: the others of a trace no replica scored a run
  of flagged incomplete (`missing_marked` and `missing_unflagged` are 0 by design: only an inferred run is lost to
  a split, when its model response and its root went to different replicas, and the side with the response scores
  what it holds as an inferred run flagged incomplete, or holds no run at all);
- `spans_lost`, `spans_doubled`: spans not forwarded / forwarded more than once, over all replicas.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path

from tests.otelcol import Otelcol, gateway_config
from tests.scaleout import AgentLoad, HostsFile, Replica, every_run_expectation, forwarded, start_replica
from tests.serve_harness import free_port

__all__ = ["ResizeOutcome", "resize"]

HOSTNAME = "toolscore-headless"


@dataclass
class ResizeOutcome:
    settle_ms: float
    trace_idle_timeout_s: float
    interval_s: float
    prestop_s: float
    runs: int
    fragments: int
    extra_runs: int
    incomplete: int
    short_unflagged: int
    missing_runs: int
    missing_marked: int
    missing_bare: int
    missing_unflagged: int
    spans_lost: int
    spans_doubled: int


def _quiet(replicas: list[Replica], load: AgentLoad, settle_s: float, timeout_s: float) -> None:
    """Until nothing more is forwarded or scored for `settle_s` (past the idle timeout), or `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    last, since = (-1, -1), time.monotonic()
    while time.monotonic() < deadline:
        now = (sum(1 for _ in forwarded(replicas)), sum(len(r.runs()) for r in replicas))
        if now != last:
            last, since = now, time.monotonic()
        elif now[0] >= len(load.keys) and time.monotonic() - since > settle_s:
            return
        time.sleep(0.25)


def resize(
    root: Path,
    *,
    settle_ms: float,
    trace_idle_timeout_s: float,
    interval_s: float = 1.0,
    prestop_s: float = 0.0,
    copies: int = 3,
    leave_at_s: float = 1.5,
    join_at_s: float = 1.0,
) -> ResizeOutcome:
    """One resize under `copies` copies of the captures (134 traces each, without GenAI log events), 3 batches
    1 s apart, 60 new traces/s."""
    hosts = HostsFile(root / "hosts", HOSTNAME)
    port = free_port()
    expectations = [every_run_expectation(root / "every-run.yaml")]
    pipeline = {"settle_ms": settle_ms, "trace_idle_timeout_s": trace_idle_timeout_s}
    load = AgentLoad(copies=copies, events=False, parts=3, gap_s=1.0, traces_per_s=60)
    with ExitStack() as stack:
        replicas = [
            start_replica(root, f"replica-{i}", expectations, host=f"127.0.0.{i + 1}", port=port, **pipeline)
            for i in range(1, 4)
        ]
        for replica in replicas:
            stack.enter_context(replica.process)
            stack.callback(replica.downstream.stop)
        for replica in replicas:
            replica.process.wait_ready(timeout_s=120)
        leaving = replicas[1]
        hosts.set([r.address.rsplit(":", 1)[0] for r in replicas])
        config, listeners = gateway_config(
            root / "backend.pb", {"dns": {"hostname": HOSTNAME, "port": str(port), "interval": f"{interval_s}s"}}
        )
        gateway = stack.enter_context(Otelcol(root, config, "gateway", wrap=hosts.command))
        gateway.wait_ready()
        time.sleep(interval_s + 0.5)  # resolved once
        stopped: list[int] = []

        def leave() -> None:
            hosts.set([r.address.rsplit(":", 1)[0] for r in replicas[:3] if r is not leaving])
            if prestop_s:
                time.sleep(prestop_s)
            stopped.append(leaving.stop())

        def join() -> None:  # as a pod: started, and resolved once ready
            joining = start_replica(root, "replica-4", expectations, host="127.0.0.5", port=port, **pipeline)
            stack.enter_context(joining.process)
            stack.callback(joining.downstream.stop)
            replicas.append(joining)
            joining.process.wait_ready(timeout_s=120)
            hosts.set([r.address.rsplit(":", 1)[0] for r in replicas if r is not leaving])

        threads = [threading.Thread(target=leave), threading.Thread(target=join)]
        load.send(listeners["0.0.0.0:4317"], on_progress={leave_at_s: threads[0].start, join_at_s: threads[1].start})
        for thread in threads:
            thread.join(60)
        _quiet(replicas, load, settle_s=trace_idle_timeout_s + 1.5, timeout_s=120)
        assert stopped == [0], leaving.process.log()
        # a layered run's outer span, ending first, is where a collector settles the run: read as the run itself
        rows = [(*load.layers.get(row[:2], row[:2]), *row[2:]) for replica in replicas for row in replica.runs()]
        owners: dict[str, set[str]] = defaultdict(set)
        spans: Counter[tuple[str, str]] = Counter()
        held = list(forwarded(replicas))
        for name, trace_id, span_id in held:
            owners[trace_id].add(name)
            spans[(trace_id, span_id)] += 1
    scored = {(trace_id, span_id) for trace_id, span_id, _, _ in rows}
    missing = load.truth.keys() - scored
    flagged_traces = {trace_id for trace_id, _, incomplete, _ in rows if incomplete}
    shares: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for name, trace_id, span_id in held:
        shares[trace_id][name].add(span_id)
    bare = {
        (t, s)
        for t, s in missing
        if (t, s) in load.inferred and not any(load.rebuilt(t, share) for share in shares[t].values())
    }
    return ResizeOutcome(
        settle_ms=settle_ms,
        trace_idle_timeout_s=trace_idle_timeout_s,
        interval_s=interval_s,
        prestop_s=prestop_s,
        runs=len(load.truth),
        fragments=sum(1 for names in owners.values() if len(names) > 1),
        extra_runs=len(rows) - len(scored & load.truth.keys()),
        incomplete=sum(1 for row in rows if row[2]),
        short_unflagged=sum(
            1
            for t, s, incomplete, calls in rows
            if not incomplete and (t, s) in load.truth and calls < load.truth[(t, s)]
        ),
        missing_runs=len(missing),
        missing_marked=len(missing - load.inferred),
        missing_bare=len(bare),
        missing_unflagged=sum(1 for trace_id, _ in missing - bare if trace_id not in flagged_traces),
        spans_lost=len(load.keys - spans.keys()),
        spans_doubled=sum(1 for count in spans.values() if count > 1),
    )


SETTINGS = [
    # (settle_ms, trace_idle_timeout_s, interval_s, prestop_s)
    (250, 5, 1, 0),
    (2000, 5, 1, 0),
    (250, 15, 1, 0),
    (250, 5, 5, 0),
    (250, 5, 1, 3),
]


def main(argv: list[str]) -> int:
    """`python -m tests.resize`: one resize per setting of `SETTINGS`, one line each."""
    fields = list(ResizeOutcome.__dataclass_fields__)
    print(" | ".join(fields), flush=True)
    for settle_ms, idle_s, interval_s, prestop_s in SETTINGS:
        with tempfile.TemporaryDirectory(prefix="toolscore-resize-") as tmp:
            outcome = resize(
                Path(tmp),
                settle_ms=settle_ms,
                trace_idle_timeout_s=idle_s,
                interval_s=interval_s,
                prestop_s=prestop_s,
            )
        print(" | ".join(str(value) for value in asdict(outcome).values()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
