"""The diff `eval` shows, for a stored run: its calls read back from the store, against the scorer of the
expectation version that scored it (from the registry's history), through the same `diff_for_scorer` and
the same cells (`diff_text.cells`) as the console, JUnit and Markdown reports.

What the store cut is said beside the diff rather than hidden: calls beyond `score_store.max_calls`, and
arguments longer than `max_args_chars` (compared as absent), can make the diff differ from the score.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolscore.collector.evaluate.diff import CallDiff, diff_for_scorer
from toolscore.collector.evaluate.diff_text import cells, order_text
from toolscore.collector.extract.privacy import PrivacyConfig, masker_for
from toolscore.collector.extract.privacy_rules import masked_scorer
from toolscore.collector.registry import Expectation, Registry
from toolscore.collector.serve.scores import StoredRun
from toolscore.collector.ui._html import esc
from toolscore.scorers._model import AgentRun, ToolCall

__all__ = ["expectation_version", "masked_expectation", "render_diff_html", "run_diff", "stored_calls"]


def stored_calls(calls: Sequence[dict[str, Any]]) -> tuple[ToolCall, ...]:
    """The calls as the store keeps them (`ToolCall.to_json`, arguments maybe cut) back as `ToolCall`s."""
    out = []
    for call in calls:
        fields: dict[str, Any] = {
            "name": str(call.get("name") or ""),
            "call_id": call.get("call_id"),
            "error": bool(call.get("error")),
            "error_type": call.get("error_type"),
            "final": bool(call.get("final")),
            "model_only": bool(call.get("model_only")),
        }
        if call.get("args_captured") is False:
            fields["args_state"] = "not_captured"
        elif "args" in call and not call.get("args_truncated") and not call.get("args_text"):
            fields["args"] = call["args"]
            fields["args_state"] = "raw" if call.get("args_raw") else "value"
        out.append(ToolCall(**fields))
    return tuple(out)


def expectation_version(registry: Registry | None, name: str, version: int) -> Expectation | None:
    """The expectation as it was at `version` (the current one, or from the history); None when unknown."""
    if registry is None:
        return None
    try:
        current = registry.get(name)
        if current.version == version:
            return current
        return next((e for e in registry.history(name) if e.version == version), None)
    except Exception:  # not found, or the store unreachable: the page shows the score without its diff
        return None


def masked_expectation(expectation: Expectation | None, privacy: PrivacyConfig | None) -> Expectation | None:
    """The expectation with its expected values masked as the stored runs were (`privacy`), as the pipeline
    scored them: the diff then compares markers with markers, and the page shows no value the masks hide."""
    if expectation is None or privacy is None or not privacy.active:
        return expectation
    masker = masker_for(privacy)
    scorers = [s.model_copy(update={"scorer": masked_scorer(s.scorer, masker)}) for s in expectation.scorers]
    return expectation.model_copy(update={"scorers": scorers})


def run_diff(run: StoredRun, expectation: Expectation, scorer_name: str) -> CallDiff | None:
    """The diff for one scorer of `expectation` over the stored run; None for a scorer without one (a judge)."""
    names = expectation.scorer_names
    if scorer_name not in names:
        return None
    scorer = expectation.scorers[names.index(scorer_name)].scorer
    calls = stored_calls(run.calls)
    return diff_for_scorer(scorer, calls, run=AgentRun(agent_name=run.agent, input=run.request, calls=calls))


def render_diff_html(diff: CallDiff) -> str:
    """Expected beside actual, one row per call, the differing keys and broken rules under their call."""
    rows = []
    for cell in cells(diff, width=200):
        notes = "".join(f"<div>{esc(note)}</div>" for note in cell.notes)
        mark = "" if cell.ok else "✗"
        rows.append(
            f"<tr{'' if cell.ok else ' class=bad'}><td>{mark}</td><td>{esc(cell.status)}</td>"
            f"<td><code>{esc(cell.expected)}</code></td><td><code>{esc(cell.actual)}</code>"
            f'<div class="note">{notes}</div></td></tr>'
        )
    if not rows:
        rows.append('<tr><td></td><td colspan=3 class="muted">no calls expected, none made</td></tr>')
    return (
        f'<div class="note">{esc(diff.rule or "calls")}, {esc(order_text(diff))}</div>'
        '<table class="diff"><thead><tr><th></th><th>status</th><th>expected</th><th>actual</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
