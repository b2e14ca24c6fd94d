"""`toolscore runs --by-version`: each agent version's pass rate per expectation, against the version before it.

The live counterpart of `toolscore eval --baseline`, read from the score store: per agent, expectation and
version (ordered by first run) the runs, pass rate, mean score, first and last run, and the difference from
the previous version, marked WORSE as the canary alert would (lower by more than `--margin`, on at least
`--min-runs` runs each). The exit status is 1 when a version is WORSE, so a deploy step can gate on it.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolscore.collector.serve.scores import VersionRow

__all__ = ["versions_json", "versions_summary", "versions_table"]


def _time(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9).astimezone().isoformat()


def _against(row: VersionRow) -> str:
    if row.delta is None:
        return "-"
    return f"{row.delta:+.2f} vs {row.previous}" + ("  WORSE" if row.worse else "")


def versions_table(rows: list[VersionRow]) -> str:
    """One line per agent, expectation and version, with the difference from the version before it."""
    head = ["AGENT", "EXPECTATION", "VERSION", "RUNS", "PASS RATE", "MEAN SCORE", "FIRST SEEN", "LAST SEEN"]
    table = [[*head, "AGAINST PREVIOUS"]]
    for row in rows:
        table.append(
            [
                row.agent or "-",
                row.expectation,
                row.version if row.version is not None else "(none)",
                str(row.runs),
                f"{row.pass_rate:.1%}",
                "-" if row.mean_score is None else f"{row.mean_score:.3f}",
                _time(row.first_seen_ns),
                _time(row.last_seen_ns),
                _against(row),
            ]
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in table)


def versions_summary(rows: list[VersionRow], margin: float, min_runs: int) -> str:
    """The verdict line under the table, as `eval --baseline` prints one."""
    worse = [row for row in rows if row.worse]
    rule = f"by more than {margin:.2f} (on at least {min_runs} runs each)"
    if not worse:
        return f"No version below the one before it {rule}."
    names = ", ".join(f"{row.agent or '-'}/{row.expectation} {row.version} (after {row.previous})" for row in worse)
    return f"{len(worse)} version(s) below the one before it {rule}: {names}"


def versions_json(rows: list[VersionRow]) -> str:
    out: list[dict[str, Any]] = [
        {
            "agent": row.agent,
            "expectation": row.expectation,
            "agent_version": row.version,
            "runs": row.runs,
            "passed": row.passed,
            "pass_rate": row.pass_rate,
            "mean_score": row.mean_score,
            "first_seen": _iso(row.first_seen_ns),
            "last_seen": _iso(row.last_seen_ns),
            "previous_version": row.previous,
            "delta": row.delta,
            "worse": row.worse,
        }
        for row in rows
    ]
    return json.dumps(out, indent=2, ensure_ascii=False)
