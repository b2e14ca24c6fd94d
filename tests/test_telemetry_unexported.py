"""In process, metrics and evaluation records that go nowhere are said so, once, at WARNING, with how to export them.

Each case runs in a fresh interpreter, as an application does: the global providers can be set only once per
process, and the warning is once per process. Python's last-resort handler prints it on stderr (the app
configured no logging), which is what a user of `toolscore.instrument()` sees.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # every test here starts a process

ROOT = Path(__file__).resolve().parent.parent
WARNING = "toolscore: {lost} are not exported: no provider is set for them and no OTEL_* variable names an export"
METRICS = "metrics (toolscore.*)"
EVENTS = "gen_ai.evaluation.result log records"

SCRIPT = """
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.test_telemetry_instrument import EXPECTATION, _agent_run
from toolscore.collector.instrumentation import instrument
from toolscore.collector.pipeline import PipelineConfig
from toolscore.collector.registry.stores import MemoryStore; from toolscore.collector.registry import Registry

{setup}
provider = TracerProvider()
with Registry(MemoryStore()) as registry:
    registry.put(EXPECTATION)
    processor = instrument(
        registry,
        tracer_provider=provider,
        next_processor=SimpleSpanProcessor(InMemorySpanExporter()),
        config=PipelineConfig(settle_ms=10),
    )
    {before_runs}
    for _ in range(3):
        _agent_run(provider, "book_flight")
    assert processor.force_flush(10_000)
    provider.shutdown()
print("scored")
"""


def _run(setup: str = "", before_runs: str = "", **env_vars: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLSCORE_"))} | env_vars
    script = textwrap.dedent(SCRIPT).format(setup=setup, before_runs=before_runs or "pass")
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, env=env, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "scored"
    return done


def test_without_providers_or_otel_variables_the_loss_is_said_once_with_how_to_export() -> None:
    done = _run()
    lines = [line for line in done.stderr.splitlines() if "are not exported" in line]
    assert len(lines) == 1, done.stderr  # three runs scored, one warning
    (line,) = lines
    assert line.startswith(WARNING.format(lost=f"{METRICS} and {EVENTS}"))
    for how in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_METRICS_EXPORTER=prometheus", "meter_provider="):
        assert how in line


def test_only_what_goes_nowhere_is_named() -> None:
    """A Prometheus endpoint for the metrics, nothing for the events: the events alone are said lost."""
    done = _run(OTEL_METRICS_EXPORTER="prometheus", OTEL_EXPORTER_PROMETHEUS_PORT="0")
    (line,) = [line for line in done.stderr.splitlines() if "are not exported" in line]
    assert line.startswith(WARNING.format(lost=EVENTS))


@pytest.mark.parametrize(
    ("setup", "before_runs"),
    [
        (
            "from opentelemetry import metrics, _logs\n"
            "from opentelemetry.sdk.metrics import MeterProvider\n"
            "from opentelemetry.sdk._logs import LoggerProvider\n"
            "metrics.set_meter_provider(MeterProvider())\n"
            "_logs.set_logger_provider(LoggerProvider())",
            "",
        ),
        # providers set after instrument(), before the first run is scored: the proxies forward to them
        (
            "from opentelemetry import metrics, _logs\n"
            "from opentelemetry.sdk.metrics import MeterProvider\n"
            "from opentelemetry.sdk._logs import LoggerProvider",
            "metrics.set_meter_provider(MeterProvider()); _logs.set_logger_provider(LoggerProvider())",
        ),
    ],
    ids=["set-before", "set-after-instrument"],
)
def test_an_application_that_sets_its_providers_gets_no_warning(setup: str, before_runs: str) -> None:
    done = _run(setup, before_runs)
    assert "are not exported" not in done.stderr, done.stderr
