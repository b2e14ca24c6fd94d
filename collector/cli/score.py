"""`toolscore score`: score JSON Lines requests in batch, one result line per request line.

Lines are read in windows so memory stays bounded on any input size; inside a window the LLM
judge's requests run concurrently (each judge bounds its own concurrency), and results are written
in input order. A bad line yields an error object naming its line number and the run goes on.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import click
from pydantic import ValidationError

from toolscore.collector.error_text import error_message
from toolscore.collector.registry._validation import drop_tags, field_path
from toolscore.scorers import AgentRun, ScoreFailure, ScoreResult, ToolCall
from toolscore.scorers._base import ScorerBase
from toolscore.scorers._llm_judge import LLMJudge
from toolscore.scorers._spec import ScorerSpec, check_threshold, parse_scorer

__all__ = ["score_command", "score_lines"]

WINDOW_LINES = 256
"""Lines scored together; bounds memory and the judge requests in flight from one window."""


@dataclass(slots=True)
class _Request:
    line: int
    id: Any
    scorer: Any
    run: AgentRun


class RequestError(ValueError):
    """A request line that cannot be scored; `kind` becomes the error object's `type`."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _parse_line(line_no: int, text: str) -> _Request:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RequestError("invalid_json", f"not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise RequestError("invalid_request", f"expected a JSON object, got {type(data).__name__}")
    scorer_data = data.get("scorer")
    if not isinstance(scorer_data, dict):
        raise RequestError("invalid_request", "scorer: required, an object with a `type`")
    calls = data.get("calls", [])
    if not isinstance(calls, list):
        raise RequestError("invalid_request", "calls: expected a list of tool calls")
    problems: list[str] = []
    scorer = _validated(lambda: _scorer(scorer_data), ("scorer",), ScorerSpec, problems, scorer_data)
    parsed = [
        _validated(functools.partial(ToolCall.model_validate, call), ("calls", i), ToolCall, problems, call)
        for i, call in enumerate(calls)
    ]
    fields = {key: data.get(key) for key in ("input", "output", "output_messages")}
    if "available_tools" in data:  # the run's tool catalog, `[{name, description?, parameters?}]` (args_valid)
        fields["available_tools"] = data["available_tools"]
    valid_calls = tuple(call for call in parsed if call is not None)
    run = _validated(lambda: AgentRun(calls=valid_calls, **fields), (), AgentRun, problems, fields)
    if problems:
        raise RequestError("invalid_request", "; ".join(problems))
    return _Request(line_no, data.get("id"), scorer, run)


def _scorer(data: dict[str, Any]) -> ScorerBase:
    """The request's scorer, held to what an expectation's scorer is: a threshold outside 0-1 would
    label every run alike, so the line is refused rather than scored."""
    scorer = parse_scorer(data)
    check_threshold(scorer.threshold)
    return scorer


def _validated(
    build: Callable[[], Any], prefix: tuple[str | int, ...], root: Any, problems: list[str], data: Any
) -> Any:
    """`build()`, or None with its problems appended, each named by its place in the request line.

    Union tags are left out of pydantic's locations (`trajectory.mode`): the author wrote `scorer.mode`.
    """
    try:
        return build()
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            loc = drop_tags(err["loc"], data)
            problems.append(f"{field_path((*prefix, *loc)) or '<root>'}: {error_message(err, root)}")
        return None


def _result_line(req: _Request, result: ScoreResult) -> dict[str, Any]:
    if isinstance(result, ScoreFailure):
        return {"id": req.id, "line": req.line, "error": {"type": result.error_type, "message": result.message}}
    return {
        "id": req.id,
        "type": req.scorer.type,
        "score": result.value,
        "label": result.label,
        "explanation": result.explanation,
        "details": result.details,
    }


async def _score_window(window: list[_Request | dict[str, Any]]) -> list[dict[str, Any]]:
    async def one(item: _Request | dict[str, Any]) -> dict[str, Any]:
        if isinstance(item, dict):
            return item
        if isinstance(item.scorer, LLMJudge):
            return _result_line(item, await item.scorer.ascore(item.run))
        return _result_line(item, item.scorer.score(item.run))

    return list(await asyncio.gather(*(one(item) for item in window)))


def score_lines(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """Score request lines; yields one result or error object per non-blank line, in input order."""
    window: list[_Request | dict[str, Any]] = []
    for line_no, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            window.append(_parse_line(line_no, text))
        except RequestError as exc:
            window.append({"id": _peek_id(text), "line": line_no, "error": {"type": exc.kind, "message": str(exc)}})
        if len(window) >= WINDOW_LINES:
            yield from asyncio.run(_score_window(window))
            window = []
    if window:
        yield from asyncio.run(_score_window(window))


def _peek_id(text: str) -> Any:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data.get("id") if isinstance(data, dict) else None


def _progress_lines(stream: IO[str], total: int) -> Iterator[str]:
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    columns = (BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=None, transient=True) as progress:
        task = progress.add_task("scoring", total=total)
        for line in stream:
            progress.advance(task, len(line.encode()))
            yield line


@click.command("score")
@click.option("--input", "input_path", type=click.Path(exists=True, dir_okay=False), help="Read requests from FILE.")
@click.option("--output", "output_path", type=click.Path(dir_okay=False, writable=True), help="Write results to FILE.")
def score_command(input_path: str | None, output_path: str | None) -> None:
    """Score JSON Lines requests from stdin (or --input) and write JSON Lines results.

    Each line: {"id", "scorer": {"type": ..., params}, "calls": [...], "input"?, "output"?}.
    Exit status 1 when any line could not be scored.
    """
    source: IO[str] = open(input_path, encoding="utf-8") if input_path else sys.stdin  # noqa: SIM115
    sink: IO[str] = open(output_path, "w", encoding="utf-8") if output_path else sys.stdout  # noqa: SIM115
    failed = 0
    try:
        lines: Iterator[str] = iter(source)
        if input_path and sys.stderr.isatty():
            lines = _progress_lines(source, os.path.getsize(input_path))
        for result in score_lines(lines):
            failed += "error" in result
            sink.write(json.dumps(result, ensure_ascii=False) + "\n")
    finally:
        if input_path:
            source.close()
        if output_path:
            sink.close()
    if failed:
        click.echo(f"toolscore score: {failed} line(s) could not be scored", err=True)
        sys.exit(1)
