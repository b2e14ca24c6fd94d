"""The captures (tests/testdata/traces) replayed into a collector, and the scores their runs must come back with.

Shared by the end-to-end tests that send real agent traces through `toolscore serve`, directly
(tests/test_serve_e2e.py) or through a real OpenTelemetry Collector (tests/test_otelcol_*.py).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.serve_demo_checks import SpanKey, attrs, key
from toolscore.collector.extract import rebuild_runs
from toolscore.collector.sources import read_trace_file

__all__ = [
    "CAPTURES",
    "TRUTH",
    "capture_requests",
    "captures_expectations",
    "check_capture_scores",
    "inferred_run_ids",
]

CAPTURES = Path(__file__).parent / "testdata" / "traces"
TRUTH = Path(__file__).parent / "testdata" / "truth"


def _expectation_name(service: str, agent: str) -> str:
    """`captures.<service>.<agent>`, made a valid expectation name (CrewAI's `Crew Manager`, `unknown_service:...`)."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", f"captures.{service}.{agent}")


def _service_of(truth_file: Path, span_id: str) -> str:
    """The `service.name` of the run span `span_id` in the capture `truth_file` describes."""
    capture = CAPTURES / truth_file.parent.name / truth_file.name.replace(".truth.json", ".pb")
    if capture not in _SERVICES:
        _SERVICES[capture] = {span.span_id: span.service_name or "" for span in read_trace_file(capture)}
    return _SERVICES[capture][span_id]


_SERVICES: dict[Path, dict[str, str]] = {}


def _truth_files() -> list[Path]:
    # a capture kept outside testdata/traces (the MCP one) is not replayed
    return [path for path in sorted(TRUTH.glob("*/*.truth.json")) if (CAPTURES / path.parent.name).is_dir()]


def captures_expectations(path: Path) -> set[str]:
    """Write one expectation per (service, agent) of the captures to `path`: exactly the calls the truth files
    list, in order; returns their names.

    A (service, agent) whose runs make different calls across scenarios (one `triage_agent` per capture) gets
    none: no one expectation fits all its runs."""
    runs: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for truth_file in _truth_files():
        for run in json.loads(truth_file.read_text())["runs"]:
            service = _service_of(truth_file, run["agent_span_id"])
            runs.setdefault(_expectation_name(service, run["agent_name"]), []).append((service, run))
    expectations = []
    for name, found in runs.items():
        sequences = {tuple(call["name"] for call in run["calls"]) for _, run in found}
        if len(sequences) > 1:
            continue
        (service, run), *_ = found
        expected = [{"name": call["name"]} for call in run["calls"]]
        expectations.append(
            {
                "name": name,
                "match": {"agent": run["agent_name"], "service": service},
                "scorers": [{"type": "trajectory", "mode": "strict", "expected": expected}],
            }
        )
    path.write_text(yaml.safe_dump({"expectations": expectations}, sort_keys=False))
    return {str(expectation["name"]) for expectation in expectations}


def _capture_files() -> list[Path]:
    return sorted(p for p in CAPTURES.glob("*/*.pb") if not p.name.endswith(".logs.pb"))


def capture_requests(seed: int) -> tuple[list[trace_service_pb2.ExportTraceServiceRequest], set[SpanKey]]:
    """Every capture's spans, shuffled within the capture, in requests of 1-7 spans (resource and scope kept), one
    capture after another: a trace's spans arrive out of order and split, within a settle of each other (a span
    that comes later than that is a late span by design, and the replay of all the captures takes seconds)."""
    rng = random.Random(seed)
    requests, keys = [], set()
    for path in _capture_files():
        items = []
        request = trace_service_pb2.ExportTraceServiceRequest.FromString(path.read_bytes())
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                items.extend((resource_spans.resource, scope_spans.scope, span) for span in scope_spans.spans)
        rng.shuffle(items)
        keys.update(key(span) for _, _, span in items)
        i = 0
        while i < len(items):
            size = rng.randint(1, 7)
            request = trace_service_pb2.ExportTraceServiceRequest()
            for resource, scope, span in items[i : i + size]:
                resource_spans = request.resource_spans.add()
                resource_spans.resource.CopyFrom(resource)
                scope_spans = resource_spans.scope_spans.add()
                scope_spans.scope.CopyFrom(scope)
                scope_spans.spans.append(span)
            requests.append(request)
            i += size
    return requests, keys


def inferred_run_ids() -> set[str]:
    """The span ids the captures' inferred runs (no run span of their own) are known by."""
    return {
        run.span_id or ""
        for run in rebuild_runs(s for p in _capture_files() for s in read_trace_file(p))
        if run.inferred
    }


def check_capture_scores(by_key: Mapping[SpanKey, Span], expected: set[str]) -> int:
    """Assert that every captured run with a run span and an expectation in `expected` came back (in `by_key`)
    matched to its expectation with a trajectory score of 1, or, when its truth marks it `incomplete`, flagged
    `toolscore.run.incomplete`; returns how many runs were checked."""
    inferred = inferred_run_ids()
    checked = 0
    for truth_file in _truth_files():
        for run in json.loads(truth_file.read_text())["runs"]:
            found = attrs(by_key[(run["trace_id"], run["agent_span_id"])])
            name = _expectation_name(_service_of(truth_file, run["agent_span_id"]), run["agent_name"])
            if name not in expected or run["agent_span_id"] in inferred:
                continue  # no expectation of its own, or no run span to carry its scores
            checked += 1
            assert found["toolscore.expectations"].get("arrayValue", {}).get("values") == [{"stringValue": name}], (
                truth_file,
                name,
                found["toolscore.expectations"],
            )
            if run.get("incomplete"):  # calls its trace does not record (content capture off): flagged, not read whole
                assert found.get("toolscore.run.incomplete") == {"boolValue": True}, truth_file
                continue
            prefix = name.replace(".", "_").replace("-", "_").lower()  # the run span's key for an expectation name
            assert found[f"toolscore.evaluation.{prefix}.trajectory.score"] == {"doubleValue": 1.0}, truth_file
    return checked
