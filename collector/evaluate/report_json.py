"""`--json`: the whole `EvalResult`, every run and scorer with its details and diff, for other tools; with
`--baseline`, the comparison too (`baseline`)."""

from __future__ import annotations

import json
from pathlib import Path

from toolscore.collector.evaluate.baseline import BaselineComparison, exit_code
from toolscore.collector.evaluate.model import EvalResult

__all__ = ["json_report", "write_json"]


def json_report(result: EvalResult, baseline: BaselineComparison | None = None) -> str:
    """The result as JSON text, with `exit_code` added at the top (and `baseline` at the end, when given)."""
    data = {"exit_code": exit_code(result, baseline), **result.model_dump(mode="json")}
    if baseline is not None:
        data["baseline"] = baseline.model_dump(mode="json")
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_json(result: EvalResult, path: str | Path, baseline: BaselineComparison | None = None) -> None:
    Path(path).write_text(json_report(result, baseline), encoding="utf-8")
