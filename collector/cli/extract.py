"""`toolscore extract`: rebuild agent runs and their tool calls from trace files, one JSON line per run.

All files are read first and their spans rebuilt together, so a trace split across files (a
rotated file export, say) still yields whole runs; OTLP logs exports given beside them add their
GenAI events to their spans across files (`toolscore.collector.sources.log_events`). An unreadable
file, or a bad line in a JSON Lines file, is reported on stderr with the file and the byte offset or
line; the other files (and lines) are still used, and the exit status is 1. The summary on stderr
ends with what extraction skipped, by reason (`ExtractStats.skipped`), so that a trace read
differently than its author expects (spans of no known convention, tool spans folded into a call) is
not silent.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import IO, TYPE_CHECKING, Any

import click

from toolscore.collector.cli.privacy_options import privacy_from_options, privacy_options

if TYPE_CHECKING:
    from toolscore.collector.spans import SpanRecord
    from toolscore.scorers._model import AgentRun

__all__ = ["extract_command", "run_line", "sorted_runs"]


def run_line(run: AgentRun) -> dict[str, Any]:
    """The output object of one run; calls in the order the model issued them. `incomplete`: the trace does not
    record all the run's calls (content capture off, a partial response), so `calls` is not all it made."""
    return {
        "trace_id": run.trace_id,
        "run_span_id": run.span_id,
        "agent_name": run.agent_name,
        "request": run.input,
        "convention": run.convention,
        "inferred": run.inferred,
        "incomplete": run.incomplete,
        "calls": [call.to_json() for call in run.calls],
    }


def sorted_runs(runs: Iterable[AgentRun], spans: Iterable[SpanRecord]) -> list[AgentRun]:
    """Runs by trace id, then the start of the run span, so output does not depend on export order."""
    starts = {(span.trace_id, span.span_id): span.start_ns for span in spans}

    def key(run: AgentRun) -> tuple[str, int, str]:
        start = run.start_ns if run.start_ns is not None else starts.get((run.trace_id, run.span_id), 0)
        return run.trace_id, start, run.span_id

    return sorted(runs, key=key)


def _read_all(paths: Iterable[str]) -> tuple[list[SpanRecord], int]:
    """Spans of every readable file, and how many files (or lines) failed; problems go to stderr."""
    from toolscore.collector.sources import DecodeStats, LogBatch, TraceFileError, join_log_events, read_trace_file

    spans: list[SpanRecord] = []
    failed = 0
    logs = LogBatch()
    for path in paths:
        stats = DecodeStats()
        errors: list[TraceFileError] = []
        try:
            spans.extend(read_trace_file(path, stats, errors, logs))
        except TraceFileError as exc:
            click.echo(f"toolscore extract: {exc}", err=True)
            failed += 1
            continue
        for error in errors:
            click.echo(f"toolscore extract: {error}", err=True)
        failed += bool(errors)
        if stats.skipped:
            reasons = ", ".join(f"{reason}={count}" for reason, count in sorted(stats.skipped.items()))
            click.echo(f"toolscore extract: {path}: skipped {stats.skipped_total} span(s): {reasons}", err=True)
    unjoined = join_log_events(spans, logs.events)
    if logs.refusals.total:
        click.echo(f"toolscore extract: {logs.refusals.message}", err=True)
    if unjoined:
        click.echo(f"toolscore extract: {len(unjoined)} GenAI log event(s) whose span is in no file given", err=True)
    return spans, failed


@click.command("extract")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--output", "-o", "output_path", type=click.Path(dir_okay=False, writable=True), help="Write to FILE.")
@privacy_options
def extract_command(files: tuple[str, ...], output_path: str | None, **privacy: Any) -> None:
    """Rebuild agent runs from OTLP trace FILES and write one JSON line per run.

    FILES may be OTLP protobuf (an http/protobuf export body), OTLP/JSON (one document, or JSON Lines
    as the Collector's file exporter writes them), length-prefixed protobuf, any of them gzipped. OTLP
    logs exports among them (e.g. `run.logs.pb` beside `run.pb`) add their GenAI events to their spans.
    Each line: {"trace_id", "run_span_id", "agent_name", "convention", "inferred", "incomplete", "calls": [...]}.
    Exit status 1 when any file, or any line of one, could not be read. The privacy options mask the
    arguments as `toolscore serve` does (docs/security.md).
    """
    # Imported here so that `toolscore --help` and the other commands do not load protobuf and the SDK.
    from toolscore.collector.extract import ExtractConfig, ExtractStats, rebuild_runs

    config = ExtractConfig(privacy=privacy_from_options(**privacy))
    spans, failed = _read_all(files)
    stats = ExtractStats()
    runs = sorted_runs(rebuild_runs(spans, config, stats=stats), spans)
    sink: IO[str] = open(output_path, "w", encoding="utf-8") if output_path else sys.stdout  # noqa: SIM115
    try:
        for run in runs:
            sink.write(json.dumps(run_line(run), ensure_ascii=False) + "\n")
    finally:
        if output_path:
            sink.close()
    calls = sum(len(run.calls) for run in runs)
    read = f"{len(files)} file(s)" + (f" ({failed} with errors)" if failed else "")
    skipped = ", ".join(f"{reason}={count}" for reason, count in sorted(stats.skipped.items()))
    summary = f"toolscore extract: {read}, {len(spans)} spans, {len(runs)} runs, {calls} calls"
    click.echo(summary + (f"; skipped: {skipped}" if skipped else ""), err=True)
    if failed:
        sys.exit(1)
