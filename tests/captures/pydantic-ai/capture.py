"""Capture pydantic-ai runs traced by pydantic-ai's own instrumentation, one data format (or release) per folder.

Run from the repository root with the venv of the folder's release (requirements-<release>.txt beside this file;
requirements-2-openinference.txt for pydantic-ai-openinference):

    /work/venvs/pydantic-ai-2/bin/python tests/captures/pydantic-ai/capture.py FOLDER [SCENARIO ...]

(`--out DIR` writes into DIR/traces and DIR/truth instead of tests/testdata.) FOLDER chooses the release the venv
must hold and the `InstrumentationSettings` (`FORMS` below); the scenarios are played by `pydantic_ai_runs.py`.
The spans and log records go to in-memory exporters of the providers given to `InstrumentationSettings`, the same
records a `BatchSpanProcessor` hands an OTLP exporter. Every socket connection to anything but the loopback
address is refused and reported: the script fails if one was tried. What each form writes where: NOTES.md.

The committed `tests/testdata/traces/pydantic-ai/` (2.68.0, data format 5, the default) predates this script; the
form `pydantic-ai-v5` writes the same shape, for comparison (`--out`).
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from capture_kit import (  # noqa: E402
    SCENARIOS,
    Recorder,
    find_span,
    loopback_only_connections,
    out_option,
    write_capture,
)
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402


@dataclass(frozen=True)
class Form:
    """One capture folder: the pydantic-ai major release its venv holds and the settings given."""

    release: str
    settings: dict[str, Any] = field(default_factory=dict)
    describe: str = "defaults"
    openinference: bool = False
    """OpenInference's `OpenInferenceSpanProcessor` added before the exporter (it rewrites each ending span's
    attributes in place: OpenInference's beside pydantic-ai's, status OK unless ERROR)."""
    compare_only: bool = False
    """A form whose spans were found identical to a committed folder's (NOTES.md): written only with `--out`."""


FORMS: dict[str, Form] = {
    "pydantic-ai-v2": Form("1"),  # 1.x's default data format is 2
    "pydantic-ai-v6": Form("2", {"version": 6}, "version=6"),
    "pydantic-ai-nocontent": Form("2", {"include_content": False}, "include_content=False"),
    "pydantic-ai-v2-nocontent": Form("1", {"include_content": False}, "include_content=False"),
    "pydantic-ai-logs": Form("1", {"version": 1, "event_mode": "logs"}, "version=1, event_mode='logs'"),
    "pydantic-ai-0x": Form("0"),  # 0.x's default data format is 1, its events in the `events` attribute
    "pydantic-ai-openinference": Form("2", openinference=True),
    # the same spans as a folder above (NOTES.md), for comparison:
    "pydantic-ai-v2-on-2x": Form("2", {"version": 2}, "version=2", compare_only=True),
    "pydantic-ai-v3": Form("2", {"version": 3}, "version=3", compare_only=True),
    "pydantic-ai-v4": Form("2", {"version": 4}, "version=4", compare_only=True),
    "pydantic-ai-v5": Form("2", {"version": 5}, "version=5", compare_only=True),
    "pydantic-ai-v1": Form("1", {"version": 1}, "version=1", compare_only=True),
}

REFUSED = loopback_only_connections()
OUT, ARGS = out_option(sys.argv[1:])
if not ARGS or ARGS[0] not in FORMS:
    sys.exit(f"usage: capture.py [--out DIR] {{{'|'.join(FORMS)}}} [scenario ...]")
FOLDER, NAMES = ARGS[0], ARGS[1:]
FORM = FORMS[FOLDER]
RELEASE = version("pydantic-ai-slim")
if RELEASE.split(".")[0] != FORM.release:
    sys.exit(f"{FOLDER} is captured on pydantic-ai {FORM.release}.x; this venv holds {RELEASE}")
if FORM.compare_only and OUT is None:
    sys.exit(f"{FOLDER} writes the same spans as a committed folder (NOTES.md): give --out DIR to compare")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.models.instrumented import InstrumentationSettings  # noqa: E402
from pydantic_ai_runs import EXTRA, play, run_agent_names, truth_of  # noqa: E402

ROOT = OUT or HERE.parents[1] / "testdata"
TRACES, TRUTHS = ROOT / "traces" / FOLDER, ROOT / "truth" / FOLDER
EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider(resource=Resource.create({"service.name": f"capture-{FOLDER}"}))
if FORM.openinference:  # as its README sets it up: the processor first, the exporter's after it
    from openinference.instrumentation.pydantic_ai import OpenInferenceSpanProcessor

    PROVIDER.add_span_processor(OpenInferenceSpanProcessor())
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
LOGS = FORM.settings.get("event_mode") == "logs"
extra: dict[str, Any] = {}
if LOGS:  # imported only here: the 0.x venv's older SDK names its in-memory log exporter otherwise
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

    LOG_EXPORTER = InMemoryLogRecordExporter()
    LOGGER_PROVIDER = LoggerProvider(resource=Resource.create({"service.name": f"capture-{FOLDER}"}))
    LOGGER_PROVIDER.add_log_record_processor(SimpleLogRecordProcessor(LOG_EXPORTER))
    extra["logger_provider"] = LOGGER_PROVIDER

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # versions 1..4 are deprecated: the warning says so, the capture is the point
    SETTINGS = InstrumentationSettings(tracer_provider=PROVIDER, **FORM.settings, **extra)
Agent.instrument_all(SETTINGS)
DATA_FORMAT = SETTINGS.version
META = {
    "framework": "pydantic-ai",
    "framework_version": RELEASE,
    "instrumentation": f"pydantic-ai native (Agent.instrument_all(InstrumentationSettings({FORM.describe})))"
    + (" + openinference-instrumentation-pydantic-ai's OpenInferenceSpanProcessor" if FORM.openinference else ""),
    "conventions": f"pydantic-ai data format version {DATA_FORMAT}"
    + (", GenAI events as OTel log records" if LOGS else "")
    + ("" if SETTINGS.include_content else ", content not included")
    + (", OpenInference attributes added by openinference-instrumentation-pydantic-ai" if FORM.openinference else ""),
}
NO_CONTENT = not SETTINGS.include_content


def capture(name: str) -> None:
    scenario = {**SCENARIOS, **EXTRA}[name]
    recorder = Recorder()
    EXPORTER.clear()
    if LOGS:
        LOG_EXPORTER.clear()
    play(scenario, recorder, PROVIDER.get_tracer("capture"))
    PROVIDER.force_flush()
    if LOGS:
        LOGGER_PROVIDER.force_flush()
    assert not REFUSED, f"connections refused: {REFUSED}"
    spans: list[ReadableSpan] = list(EXPORTER.get_finished_spans())
    runs = {a.name: find_span(spans, where=lambda s, n=a.name: run_agent_names(s) == n) for a in scenario.agents}
    truth = truth_of(scenario, META, recorder, runs)
    if NO_CONTENT:
        # No arguments anywhere in the trace: the reader must say so, not invent them.
        for run in truth["runs"]:
            for call in run["calls"]:
                call["args"] = None
                call["args_captured"] = False
    logs = LOG_EXPORTER.get_finished_logs() if LOGS else None
    written = write_capture(TRACES, TRUTHS, name, spans, truth, logs=logs)
    print(
        f"{FOLDER}/{name}: {len(spans)} spans, {len(logs or ())} log records, "
        f"{[len(r['calls']) for r in truth['runs']]} calls per run -> {[p.name for p in written]}"
    )


if __name__ == "__main__":
    for scenario_name in NAMES or [*SCENARIOS, *EXTRA]:
        capture(scenario_name)
