"""For the OpenLIT captures (openlit-openai, openlit-openai-agents, langgraph-openlit, langchain-openlit,
crewai-openlit, smolagents-openlit, agno-openlit, pydantic-ai-openlit): `setup`, `write` and `main`.

Imported from the openlit venv only (it imports `openlit` in `setup`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from capture_kit import Scenario, loopback_only_lookups, write_capture

__all__ = ["PRICING", "main", "setup", "write"]

REPO = Path(__file__).resolve().parents[2]
PRICING = Path(__file__).resolve().parent / "openlit-openai" / "pricing.json"
"""An empty price list (OpenLIT's cost attribute is then 0)."""


def setup(folder: str) -> Any:
    """Global providers with an in-memory span exporter (OpenLIT reuses an SDK provider it finds), then
    `openlit.init()`; returns the exporter."""
    from opentelemetry import _logs, trace
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    resource = Resource.create({"service.name": f"capture-{folder}"})
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    trace.set_tracer_provider(tracer_provider)
    _logs.set_logger_provider(LoggerProvider(resource=resource))  # inference events: not exported (all on the spans)

    import openlit

    openlit.init(
        application_name=f"capture-{folder}",
        disable_metrics=True,
        capture_message_content=True,
        pricing_json=str(PRICING),  # else init fetches OpenLIT's price list from GitHub
    )
    return spans


def write(out: Path, folder: str, name: str, spans: Sequence[Any], truth: Mapping[str, Any]) -> None:
    """Write the capture into `out`/traces/`folder` and `out`/truth/`folder`, and say so."""
    if write_capture(out / "traces" / folder, out / "truth" / folder, name, spans, truth):
        print(f"wrote {folder}/{name}: {len(spans)} spans")


def main(
    description: str,
    folder: str,
    scenarios: Mapping[str, Scenario],
    capture: Callable[[str, Scenario, Any, Path], Any],
) -> None:
    """`capture.py [--out DIR] [SCENARIO ...]`: no network beyond the loopback, `setup`, then `capture` each
    scenario (default: all) into DIR (default: tests/testdata)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("scenarios", nargs="*", help="default: all")
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "testdata", help="default: tests/testdata")
    args = parser.parse_args()
    loopback_only_lookups()
    exporter = setup(folder)
    for name in args.scenarios or list(scenarios):
        capture(name, scenarios[name], exporter, args.out)
