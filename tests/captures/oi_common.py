"""What the OpenInference capture scripts (crewai, llamaindex) share beyond the kit.

- `guard_network()`: a socket guard installed before the framework is imported, so that nothing a
  capture runs can reach past 127.0.0.1 (a framework's telemetry or version check would be refused
  and listed by `blocked()`, not sent).
- `in_memory_tracing()`: one tracer provider per process with an in-memory exporter; instrumentors
  are process-wide, so scenarios share it and `clear()` the exporter between them.
- `compare_with_extract()`: runs `toolscore extract` on a written capture and prints how its runs and
  calls differ from the truth. Differences are findings, not failures: extraction is changed elsewhere.

Standard library and the OTel SDK only: imported from each framework's own venv.
"""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

__all__ = ["REPO", "blocked", "compare_with_extract", "guard_network", "in_memory_tracing", "model_only", "report"]

REPO = Path(__file__).resolve().parents[2]
_LOOPBACK = {"127.0.0.1", "::1", "localhost"}
_blocked: list[str] = []


def guard_network() -> None:
    """Refuse every socket connection that is not to the loopback address (noted for `blocked`)."""
    original = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else None
        if host is not None and host not in _LOOPBACK:
            _blocked.append(str(address))
            raise OSError(f"capture network guard: connection to {address!r} refused")
        original(self, address)

    socket.socket.connect = connect  # type: ignore[method-assign]


def blocked() -> list[str]:
    """The addresses something tried to reach past 127.0.0.1 (refused), in order."""
    return list(_blocked)


def in_memory_tracing(service_name: str) -> tuple[TracerProvider, InMemorySpanExporter]:
    """A tracer provider that keeps finished spans in memory (exported as each span ends)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _shape(run: Mapping[str, Any], span_key: str) -> dict[str, Any]:
    keys = ("name", "args", "call_id", "error", "final", "model_only")
    return {
        "trace_id": run["trace_id"],
        "run_span_id": run[span_key],
        "agent_name": run["agent_name"],
        "calls": [{k: c[k] for k in keys if k in c} for c in run["calls"]],
    }


def compare_with_extract(pb_path: Path, truth: Mapping[str, Any], toolscore: Path) -> list[str]:
    """How `toolscore extract <pb_path>` differs from the truth, one line per difference ([] = agrees)."""
    if not toolscore.exists():
        return [f"{toolscore} missing: not compared"]
    done = subprocess.run([str(toolscore), "extract", str(pb_path)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return [f"toolscore extract failed ({done.returncode}): {done.stderr.strip()[:300]}"]
    got = [_shape(json.loads(line), "run_span_id") for line in done.stdout.splitlines() if line.strip()]
    want = [_shape(run, "agent_span_id") for run in truth["runs"]]
    for run in got:  # extract always says `final`/`model_only`; the truth only when true
        for call in run["calls"]:
            for key in ("final", "model_only"):
                if call.get(key) is False:
                    del call[key]
    if got == want:
        return []
    problems = []
    if len(got) != len(want):
        problems.append(f"{len(got)} runs extracted, the truth has {len(want)}")
    by_span = {r["run_span_id"]: r for r in got}
    for run in want:
        other = by_span.get(run["run_span_id"])
        if other is None:
            problems.append(f"run {run['agent_name']} ({run['run_span_id']}) not extracted as a run")
            continue
        if other["agent_name"] != run["agent_name"]:
            got_name, want_name = other["agent_name"], run["agent_name"]
            problems.append(f"run {run['run_span_id']}: agent_name {got_name!r}, truth {want_name!r}")
        if other["calls"] != run["calls"]:
            problems.append(
                f"run {run['agent_name']}: calls {json.dumps(other['calls'], ensure_ascii=False)}"
                f" != truth {json.dumps(run['calls'], ensure_ascii=False)}"
            )
    for run in got:
        if run["run_span_id"] not in {r["run_span_id"] for r in want}:
            names = [c["name"] for c in run["calls"]]
            problems.append(f"extra run {run['agent_name']!r} at span {run['run_span_id']} with calls {names}")
    return problems


def report(
    scenario: str, folder: str, spans: Sequence[Any], truth: Mapping[str, Any], *, out: Path, toolscore: Path
) -> None:
    """Write the capture (the kit keeps a shared-set capture: then only compare with its truth) and
    print its size and how `toolscore extract` differs from the truth."""
    from capture_kit import write_capture

    written = write_capture(out / "traces" / folder, out / "truth" / folder, scenario, spans, truth)
    kinds = [(s.attributes or {}).get("openinference.span.kind") for s in spans]
    if not written:
        kept = json.loads((out / "truth" / folder / f"{scenario}.truth.json").read_text(encoding="utf-8"))
        mine = [(r["agent_name"], r["calls"]) for r in truth["runs"]]
        same = [(r["agent_name"], r["calls"]) for r in kept["runs"]] == mine
        print(f"{scenario}: kept the shared capture; this run's calls {'equal' if same else 'DIFFER from'} its truth's")
        return
    size = sum(p.stat().st_size for p in written if p.suffix == ".pb")
    print(f"{scenario}: {len(spans)} spans ({kinds.count('TOOL')} TOOL), .pb {size} bytes, {len(truth['runs'])} run(s)")
    for problem in compare_with_extract(out / "traces" / folder / f"{scenario}.pb", truth, toolscore):
        print(f"  extract differs: {problem}")


def model_only(scenario: Any, recorder: Any, call_id: str) -> tuple[dict[str, dict[str, bool]], list[str]]:
    """`truth_for`'s flags and unrecorded tools for a scenario whose call `call_id` never reaches a tool
    (answered from a cache, or of a tool never offered), after checking that it did not: the tools
    received every other call, in order, and not that one. The kit's own check is skipped for these
    tools, since it counts calls per tool and cannot tell a call that never ran from a missing one.
    The call is an error when its tool was never offered (the framework answers "not found")."""
    calls = [c for agent in scenario.agents for c in agent.calls]
    reached = [(c.name, recorder.full_args(c.name, dict(c.args))) for c in calls if c.id != call_id]
    received = [(r.name, r.full_args) for r in recorder.calls]
    if received != reached:
        raise AssertionError(f"{scenario.name}: the tools received {received}, expected {reached}")
    missing = next(c for c in calls if c.id == call_id)
    offered = {name for agent in scenario.agents for name in agent.tools}
    return {call_id: {"model_only": True, "error": missing.name not in offered}}, sorted({c.name for c in calls})
