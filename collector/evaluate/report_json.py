"""`--json`: the whole `EvalResult`, every run and scorer with its details and diff, for other tools."""

from __future__ import annotations

import json
from pathlib import Path

from toolscore.collector.evaluate.model import EvalResult

__all__ = ["json_report", "write_json"]


def json_report(result: EvalResult) -> str:
    """The result as JSON text, with `exit_code` added at the top."""
    data = {"exit_code": result.exit_code, **result.model_dump(mode="json")}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_json(result: EvalResult, path: str | Path) -> None:
    Path(path).write_text(json_report(result), encoding="utf-8")
