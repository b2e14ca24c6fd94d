"""The capture kit: one import for a framework capture script (scenarios, tools, server, truth, files).

A capture script runs a scenario's agents in a framework against `ScriptedOpenAI`, with the tools
wrapped by a `Recorder`, collects the spans (and logs) with the OTel SDK's in-memory exporters, finds
the span that represents each run, and calls `truth_for` then `write_capture`. `truth_for` builds the
truth from the scenario's script and raises when it disagrees with what the tools really received.

Imported from each framework's own venv, so it needs only the standard library,
opentelemetry-sdk, opentelemetry-proto, opentelemetry-exporter-otlp-proto-common and protobuf.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from capture_scenarios import APP_SPAN_NAME, SCENARIOS, Agent, Scenario, scenario
from capture_tools import TOOLS, RecordedCall, Recorder, ToolFailure
from google.protobuf import json_format
from google.protobuf.message import Message
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from scripted_openai import ScriptedOpenAI, ToolCall, Turn

__all__ = [
    "APP_SPAN_NAME",
    "PROTECTED",
    "SCENARIOS",
    "TOOLS",
    "Agent",
    "RecordedCall",
    "Recorder",
    "Scenario",
    "ScriptedOpenAI",
    "ToolCall",
    "ToolFailure",
    "Turn",
    "check_recorded",
    "find_span",
    "find_spans",
    "loopback_only_connections",
    "loopback_only_lookups",
    "otlp_json",
    "out_option",
    "scenario",
    "span_ref",
    "truth_for",
    "write_capture",
]

PROTECTED = frozenset(
    {
        ("crewai", "a_single_tool"),
        ("llamaindex", "a_single_tool"),
        ("smolagents", "a_single_tool"),
        ("dspy", "a_single_tool"),
        ("openai-v2-latest", "c_parallel"),
    }
)
"""(framework folder, scenario) captures copied from the project's shared set: never overwritten."""

SpanRef = ReadableSpan | tuple[str, str]
"""A run's span: the SDK span itself, or (trace id, span id) in hex."""


def span_ref(span: SpanRef) -> tuple[str, str]:
    """(trace id, span id) as 32 and 16 hex digits."""
    if isinstance(span, ReadableSpan):
        context = span.get_span_context()
        return format(context.trace_id, "032x"), format(context.span_id, "016x")
    trace_id, span_id = span
    if len(trace_id) != 32 or len(span_id) != 16:
        raise ValueError(f"expected 32 and 16 hex digits, got {span!r}")
    return trace_id.lower(), span_id.lower()


def find_spans(
    spans: Iterable[ReadableSpan],
    name: str | None = None,
    *,
    prefix: str | None = None,
    attributes: Mapping[str, Any] | None = None,
    where: Callable[[ReadableSpan], bool] | None = None,
) -> list[ReadableSpan]:
    """The spans with this exact name, name prefix, attribute values and predicate, in start order."""
    found = [
        s
        for s in spans
        if (name is None or s.name == name)
        and (prefix is None or s.name.startswith(prefix))
        and all((s.attributes or {}).get(k) == v for k, v in (attributes or {}).items())
        and (where is None or where(s))
    ]
    return sorted(found, key=lambda s: s.start_time or 0)


def find_span(spans: Iterable[ReadableSpan], name: str | None = None, **criteria: Any) -> ReadableSpan:
    """The one span matching (see `find_spans`); raises listing the span names when not exactly one."""
    spans = list(spans)
    found = find_spans(spans, name, **criteria)
    if len(found) != 1:
        names = sorted({s.name for s in spans})
        raise LookupError(f"{len(found)} spans match name={name!r} {criteria}; span names: {names}")
    return found[0]


def truth_for(
    scenario: Scenario,
    framework_meta: Mapping[str, Any],
    recorded: Recorder,
    run_span_ids: Sequence[SpanRef] | Mapping[str, SpanRef],
    *,
    final_tool: str | None = None,
    final_arg: str | None = "answer",
    call_ids: bool = True,
    agent_names: Mapping[str, str] | None = None,
    flags: Mapping[str, Mapping[str, Any]] | None = None,
    unrecorded: Iterable[str] = (),
) -> dict[str, Any]:
    """The truth of one capture, checked against what the tools received.

    framework_meta: `framework`, `framework_version`, `instrumentation`, `conventions` (and any
    extra keys, kept). run_span_ids: each agent's run span, in `scenario.agents` order or by agent
    name. final_tool: the framework's finishing tool (smolagents `final_answer`, DSPy `finish`):
    each agent's final answer is then listed as a last call `{final_arg: text}` (`{}` when final_arg
    is None) marked `"final": true`, with the agent's `final_call_id` (the script must use it too:
    `scenario.with_final_tool`). call_ids=False leaves `call_id` out (frameworks without call ids).
    agent_names: the run name the framework records, by scenario agent name (default: the same).
    flags: extra keys per call id, such as `{"call_f1": {"model_only": True}}`. unrecorded: tool
    names no `Recorder` wraps (a framework's own delegation tool): left out of the check.
    """
    missing = {"framework", "framework_version", "instrumentation", "conventions"} - set(framework_meta)
    if missing:
        raise ValueError(f"framework_meta lacks {sorted(missing)}")
    refs = _run_refs(scenario, run_span_ids)
    runs = []
    for agent in scenario.agents:
        trace_id, span_id = refs[agent.name]
        calls = [_call(scenario, c, call_ids, flags) for t in agent.turns for c in t.calls]
        if final_tool is not None and not any(c.name == final_tool for c in agent.calls):
            final = ToolCall(agent.final_call_id, final_tool, {final_arg: agent.final_text} if final_arg else {})
            calls.append(_call(scenario, final, call_ids, flags))
        for call in calls:
            if call["name"] == final_tool:
                call["final"] = True
        name = (agent_names or {}).get(agent.name, agent.name)
        runs.append({"trace_id": trace_id, "agent_span_id": span_id, "agent_name": name, "calls": calls})
    truth = {**framework_meta, "scenario": scenario.name, "runs": runs}
    check_recorded(scenario, truth, recorded, unrecorded={*unrecorded, *([final_tool] if final_tool else [])})
    return truth


def _run_refs(
    scenario: Scenario, run_span_ids: Sequence[SpanRef] | Mapping[str, SpanRef]
) -> dict[str, tuple[str, str]]:
    names = [a.name for a in scenario.agents]
    if isinstance(run_span_ids, Mapping):
        given = dict(run_span_ids)
    else:
        if len(run_span_ids) != len(names):
            raise ValueError(f"{scenario.name}: {len(run_span_ids)} run spans for agents {names}")
        given = dict(zip(names, run_span_ids, strict=True))
    if set(given) != set(names):
        raise ValueError(f"{scenario.name}: run spans for {sorted(given)}, agents are {names}")
    return {name: span_ref(ref) for name, ref in given.items()}


def _call(
    scenario: Scenario, call: ToolCall, call_ids: bool, flags: Mapping[str, Mapping[str, Any]] | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": call.name, "args": json.loads(call.arguments)}
    if call_ids:
        entry["call_id"] = call.id
    entry["error"] = scenario.raises(call.name, call.args)
    entry.update((flags or {}).get(call.id, {}))
    return entry


def check_recorded(
    scenario: Scenario, truth: Mapping[str, Any], recorder: Recorder, unrecorded: Iterable[str] = ()
) -> None:
    """Raise unless each tool received exactly the truth's calls of it, in order, with their errors.

    Compared per tool name (runs in order, calls in model order), with the tool's defaults filled in
    on both sides; calls issued in one model turn may execute in any order, so each turn's calls are
    compared as a group.
    """
    skip = set(unrecorded)
    expected: dict[str, list[tuple[tuple[int, int], dict[str, Any], bool]]] = {}
    for run_index, (agent, run) in enumerate(zip(scenario.agents, truth["runs"], strict=True)):
        turn_of = {c.id: i for i, t in enumerate(agent.turns) for c in t.calls}
        for position, call in enumerate(run["calls"]):
            if call["name"] in skip:
                continue
            # Calls of one model turn form one group; without call ids, each call is its own group.
            turn = turn_of.get(call.get("call_id", ""), 1000 + position)
            full = recorder.full_args(call["name"], call["args"])
            expected.setdefault(call["name"], []).append(((run_index, turn), full, bool(call["error"])))
    got: dict[str, list[RecordedCall]] = {}
    for rec in recorder.calls:
        if rec.name not in skip:
            got.setdefault(rec.name, []).append(rec)
    problems = []
    for name in sorted(set(expected) | set(got)):
        want, have = expected.get(name, []), got.get(name, [])
        if len(want) != len(have):
            problems.append(f"{name}: truth has {len(want)} calls, the tool received {len(have)}: {have}")
            continue
        start = 0
        while start < len(want):
            end = start
            while end < len(want) and want[end][0] == want[start][0]:
                end += 1
            pending = list(have[start:end])
            for _, args, error in want[start:end]:
                match = next((r for r in pending if r.full_args == args and (r.error is not None) == error), None)
                if match is None:
                    problems.append(f"{name}: truth call {args} (error={error}) not among received {pending}")
                else:
                    pending.remove(match)
            start = end
    if problems:
        raise AssertionError(f"{scenario.name}: truth disagrees with the tools' record:\n  " + "\n  ".join(problems))


def out_option(argv: Sequence[str]) -> tuple[Path | None, list[str]]:
    """`--out DIR` taken out of a script's arguments: (DIR or None, the other arguments)."""
    args = list(argv)
    if "--out" not in args:
        return None, args
    at = args.index("--out")
    if at + 1 >= len(args):
        raise SystemExit("--out needs a folder")
    return Path(args[at + 1]), args[:at] + args[at + 2 :]


def loopback_only_lookups() -> None:
    """Refuse every name lookup but the loopback's: nothing in a capture may reach the internet."""
    lookup = socket.getaddrinfo

    def loopback_only(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise OSError(f"capture: no network beyond the loopback (asked for {host!r})")
        return lookup(host, *args, **kwargs)

    socket.getaddrinfo = loopback_only


def loopback_only_connections() -> list[Any]:
    """Refuse every socket connection to anything but the loopback address; returns the list the refused
    addresses are added to (a script fails when it is not empty). Call it before importing the framework."""
    refused: list[Any] = []
    connect = socket.socket.connect

    def loopback_only(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else None
        if self.family in (socket.AF_INET, socket.AF_INET6) and host not in ("127.0.0.1", "::1", "localhost"):
            refused.append(address)
            raise ConnectionRefusedError(f"capture: no connection outside 127.0.0.1 ({address!r})")
        return connect(self, address)

    socket.socket.connect = loopback_only  # type: ignore[method-assign]
    return refused


def otlp_json(message: Message) -> dict[str, Any]:
    """OTLP/JSON as the OTLP/HTTP JSON exporter sends it: camelCase, hex ids, int64 as decimal
    strings, enums as integers."""
    data = json_format.MessageToDict(message, use_integers_for_enums=True)
    _hex_ids(data)
    return data


_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(node: Any) -> None:
    """protobuf's JSON writes bytes as base64; OTLP/JSON writes trace and span ids as hex."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_KEYS and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                _hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids(item)


def write_capture(
    out_traces_dir: str | Path,
    out_truth_dir: str | Path,
    scenario_name: str,
    spans: Sequence[ReadableSpan],
    truth: Mapping[str, Any],
    *,
    logs: Sequence[Any] | None = None,
) -> list[Path]:
    """Write `<scenario>.pb`, `<scenario>.json` (and `.logs.pb`, `.logs.json` with `logs`) into
    out_traces_dir and `<scenario>.truth.json` into out_truth_dir; returns the paths written.

    Refuses (returns []) to overwrite a capture from the project's shared set (`PROTECTED`, judged by
    the folder name). Raises when a truth run's span is not among `spans`.
    """
    traces_dir, truth_dir = Path(out_traces_dir), Path(out_truth_dir)
    if (traces_dir.name, scenario_name) in PROTECTED and (traces_dir / f"{scenario_name}.pb").exists():
        print(f"kept {traces_dir.name}/{scenario_name}: a capture from the shared set is never overwritten")
        return []
    ids = {span_ref(s) for s in spans}
    for run in truth["runs"]:
        if (run["trace_id"], run["agent_span_id"]) not in ids:
            raise ValueError(f"{scenario_name}: run span {run['agent_span_id']} of {run['agent_name']} not exported")
    traces_dir.mkdir(parents=True, exist_ok=True)
    truth_dir.mkdir(parents=True, exist_ok=True)
    written = _write_pair(traces_dir / scenario_name, encode_spans(spans))
    if logs is not None:
        written += _write_pair(traces_dir / f"{scenario_name}.logs", encode_logs(list(logs)))
    truth_path = truth_dir / f"{scenario_name}.truth.json"
    truth_path.write_text(json.dumps(truth, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return [*written, truth_path]


def _write_pair(stem: Path, message: Message) -> list[Path]:
    pb, js = stem.with_name(stem.name + ".pb"), stem.with_name(stem.name + ".json")
    pb.write_bytes(message.SerializeToString())
    js.write_text(json.dumps(otlp_json(message), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return [pb, js]
