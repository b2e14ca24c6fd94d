"""Read what an evaluation needs: trace files (or directories of them) and expectation files.

Every problem is collected before giving up, so one run of `toolscore eval` names all the bad
files at once; each message names the file, and the line, byte offset or field where it is wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from toolscore.collector.extract.privacy import PrivacyConfig
from toolscore.collector.registry import Expectation, InvalidExpectation
from toolscore.collector.registry._files import load_by_file
from toolscore.collector.sources import (
    NOT_A_TRACE_EXPORT,
    DecodeStats,
    LogBatch,
    TraceFileError,
    join_log_events,
    read_trace_file,
)
from toolscore.collector.spans import SpanRecord

__all__ = [
    "TRACE_SUFFIXES",
    "EvalInputError",
    "TraceInput",
    "expand_trace_paths",
    "read_expectations",
    "read_traces",
    "trace_files",
]

TRACE_SUFFIXES = (".json", ".jsonl", ".ndjson", ".pb", ".bin", ".otlp", ".gz")
"""Files taken from a trace directory; the format is then detected from the content."""

NOT_TRACES_HINT = (
    "every file given, and every file with a trace suffix in a trace directory, is read as OTLP trace data "
    "(or an OTLP logs export, whose GenAI events join their spans): keep other files (ground truth, configs, "
    "metrics exports) out of trace directories"
)
"""Said once after the files that are not trace exports (JSON, or another signal's protobuf export): found in a
directory, they are refused too, rather than skipped by name or content, so that a bad export can never pass an
evaluation unread."""


class EvalInputError(ValueError):
    """Input that cannot be evaluated (exit status 2); `problems` has one message per thing wrong."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def expand_trace_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given; directories become their trace files (recursively, in name order, hidden skipped)."""
    out: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = (p for p in path.rglob("*") if p.suffix in TRACE_SUFFIXES and p.is_file())
            out.extend(sorted(p for p in found if not any(part.startswith(".") for part in p.relative_to(path).parts)))
        else:
            out.append(path)
    return out


def trace_files(paths: Sequence[str | Path]) -> list[Path]:
    """`expand_trace_paths`, refusing paths that hold no trace file at all (`EvalInputError`).

    As for expectation paths that hold no expectation: in CI that is a wrong path or a test job that
    recorded nothing, and an evaluation of no run would pass.
    """
    files = expand_trace_paths(paths)
    if not files:
        suffixes = ", ".join(f"*{suffix}" for suffix in TRACE_SUFFIXES)
        raise EvalInputError([f"{', '.join(map(str, paths))}: no trace files found (looked for {suffixes})"])
    return files


@dataclass(slots=True)
class TraceInput:
    """Every span read (with the GenAI events of the logs exports among the files joined to them), the file
    each trace was first seen in, and decode counters."""

    files: list[Path] = field(default_factory=list)
    spans: list[SpanRecord] = field(default_factory=list)
    source_of: dict[str, str] = field(default_factory=dict)
    stats: DecodeStats = field(default_factory=DecodeStats)
    logs: LogBatch = field(default_factory=LogBatch)


def read_traces(paths: Iterable[str | Path], on_file: Callable[[Path], None] | None = None) -> TraceInput:
    """Read every trace file; raises `EvalInputError` listing every unreadable file or line."""
    out = TraceInput(files=expand_trace_paths(paths))
    problems: list[str] = []
    not_traces = False
    for path in out.files:
        errors: list[TraceFileError] = []
        seen = len(out.stats.examples)
        try:
            spans = read_trace_file(path, out.stats, errors, out.logs)
        except TraceFileError as exc:
            errors.append(exc)
            spans = []
        finally:
            if on_file is not None:
                on_file(path)
        problems.extend(str(error) for error in errors)
        not_traces = not_traces or any(error.message.startswith(NOT_A_TRACE_EXPORT) for error in errors)
        out.stats.examples[seen:] = [f"{path}: {example}" for example in out.stats.examples[seen:]]
        for span in spans:
            out.source_of.setdefault(span.trace_id, str(path))
        out.spans.extend(spans)
    if problems:
        raise EvalInputError([*problems, NOT_TRACES_HINT] if not_traces else problems)
    join_log_events(out.spans, out.logs.events)
    return out


def read_expectations(
    paths: Sequence[str | Path], privacy: PrivacyConfig | None = None
) -> dict[Path, list[Expectation]]:
    """Every expectation file and the expectations in it; raises `EvalInputError` (file:line: field: what).

    `privacy`: the settings runs are masked with; an argument rule they make uncheckable is refused."""
    missing = [f"{path}: no such file or directory" for path in map(Path, paths) if not path.exists()]
    if missing:
        raise EvalInputError(missing)
    try:
        by_file = load_by_file(paths, privacy=privacy)
    except InvalidExpectation as exc:
        raise EvalInputError([str(problem) for problem in exc.problems]) from None
    if not any(by_file.values()):
        raise EvalInputError([f"{', '.join(map(str, paths))}: no expectations found"])
    return by_file
