"""One run: its request, its calls with their arguments, each score with the diff that explains it, its
trace and span ids (linked to the user's trace backend), and the form that makes it an expectation."""

from __future__ import annotations

from collections.abc import Callable

from toolscore.collector.registry import Expectation
from toolscore.collector.serve.scores import StoredRun, StoredScore
from toolscore.collector.ui._diff import render_diff_html, run_diff
from toolscore.collector.ui._from_run import ARGS_MODES, MODES, FromRun, default_name, selectable
from toolscore.collector.ui._html import attr, esc, layout, pretty_json, when
from toolscore.collector.ui._runs_view import sampled_text, verdict

__all__ = ["render_run", "trace_link"]

FindExpectation = Callable[[str, int], Expectation | None]


def trace_link(template: str | None, run: StoredRun) -> str:
    """The ids, linked through `ui.trace_url` when set."""
    ids = f"trace <code>{esc(run.trace_id)}</code> · run span <code>{esc(run.span_id)}</code>"
    if not template:
        return ids
    url = template.replace("{trace_id}", run.trace_id).replace("{span_id}", run.span_id)
    return f'{ids} · <a{attr("href", url)} target="_blank" rel="noopener noreferrer">open the trace</a>'


def _calls(run: StoredRun) -> str:
    rows = []
    for index, call in enumerate(run.calls, 1):
        notes = []
        if call.get("model_only"):
            notes.append('<span class="flag">model only: no tool span recorded it</span>')
        if call.get("error"):
            notes.append(
                f'<span class="fail">error{": " + esc(call["error_type"]) if call.get("error_type") else ""}</span>'
            )
        if call.get("args_truncated"):
            notes.append('<span class="flag">arguments truncated in the store</span>')
        if call.get("args_captured") is False:
            notes.append('<span class="muted">arguments not captured</span>')
        args = call.get("args")
        shown = args if isinstance(args, str) and (call.get("args_truncated") or call.get("args_raw")) else None
        body = esc(shown) if shown is not None else esc(pretty_json(args)) if "args" in call else ""
        rows.append(
            f"<tr><td>{index}</td><td><code>{esc(call.get('name') or '')}</code> {' '.join(notes)}</td>"
            f"<td><pre>{body}</pre></td></tr>"
        )
    if run.calls_total > len(run.calls):
        rows.append(
            f'<tr><td colspan=3 class="muted">+{run.calls_total - len(run.calls)} more calls not kept'
            " (score_store.max_calls)</td></tr>"
        )
    if not rows:
        rows.append('<tr><td colspan=3 class="muted">no tool calls</td></tr>')
    return (
        "<table><thead><tr><th>#</th><th>tool</th><th>arguments</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _score(run: StoredRun, score: StoredScore, expectation: Expectation | None) -> str:
    kind = verdict(score)
    value = f"error: {score.error_type}" if score.error_type else f"{score.value:.3f}"
    head = (
        f'<h3>{esc(score.scorer)}: <span class="{kind}">{esc(value)} {esc(score.label or "")}</span></h3>'
        f'<pre class="explanation">{esc(score.explanation)}</pre>'
    )
    if expectation is None:
        return (
            head + '<p class="note">no diff: this version of the expectation is not in the registry the page reads</p>'
        )
    diff = run_diff(run, expectation, score.scorer)
    if diff is None:
        return head
    cut = any(call.get("args_truncated") for call in run.calls) or run.calls_total > len(run.calls)
    warn = (
        '<p class="note">the store cut some calls or arguments: the diff may differ from the score</p>' if cut else ""
    )
    return head + render_diff_html(diff) + warn


def _scores(run: StoredRun, find: FindExpectation) -> str:
    groups: dict[tuple[str, int], list[StoredScore]] = {}
    for score in run.scores:
        groups.setdefault((score.expectation, score.version), []).append(score)
    parts = []
    for (name, version), scores in groups.items():
        expectation = find(name, version)
        inner = "".join(_score(run, score, expectation) for score in scores)
        parts.append(f"<section><h2>expectation {esc(name)} <span class=muted>v{version}</span></h2>{inner}</section>")
    return "".join(parts) or '<p class="muted">no scores</p>'


def _attribute_choices(run: StoredRun, chosen: list[str]) -> str:
    """A checkbox per attribute the run offers as a selector (`selectable`), the chosen ones checked."""
    boxes = [
        f"<label class=attr{attr('title', where)}><input type=checkbox name=match_attribute{attr('value', key)}"
        f"{' checked' if key in chosen else ''}><code>{esc(key)}</code> = <code>{esc(str(value))}</code></label>"
        for where, key, value in selectable(run)
    ]
    if not boxes:
        return ""
    return f'<fieldset id="match-attributes"><legend>also match the attribute</legend>{"".join(boxes)}</fieldset>'


def _from_run_form(run: StoredRun, csrf: str, can_write: bool, preview: FromRun | None, choice: dict[str, str]) -> str:
    if not can_write:
        return '<p class="note">no registry to write to: start the page with a registry to make expectations</p>'
    mode = choice.get("mode", "strict")
    args_mode = choice.get("args_mode", "subset")
    modes = "".join(f"<option{attr('value', m)}{' selected' if m == mode else ''}>{m}</option>" for m in MODES)
    rules = "".join(
        f"<option{attr('value', m)}{' selected' if m == args_mode else ''}>{m}</option>" for m in ARGS_MODES
    )
    checked = " checked" if choice.get("match_input", "0" if choice else "1") == "1" else ""
    name = choice.get("name") or default_name(run)
    chosen = [key for key in choice.get("match_attributes", "").split("\n") if key]
    form = (
        f'<form class="filters" method="get" action="/run/{run.row_id}/expect" id="from-run">'
        f"<label>name<input name=name size=40{attr('value', name)}></label>"
        f"<label>trajectory mode<select name=mode>{modes}</select></label>"
        f"<label>arguments<select name=args_mode>{rules}</select></label>"
        f"<label>match the request<input type=checkbox name=match_input value=1{checked}></label>"
        f"{_attribute_choices(run, chosen)}"
        '<button type="submit">preview</button></form>'
    )
    if preview is not None:
        form += (
            f'<pre id="preview">{esc(preview.yaml)}</pre>'
            f'<form method="post" action="/run/{run.row_id}/expect">'
            f"<input type=hidden name=csrf{attr('value', csrf)}>"
            f"<input type=hidden name=name{attr('value', preview.expectation.name)}>"
            f"<input type=hidden name=mode{attr('value', mode)}>"
            f"<input type=hidden name=args_mode{attr('value', args_mode)}>"
            f"<input type=hidden name=match_input{attr('value', choice.get('match_input', '0'))}>"
            + "".join(f"<input type=hidden name=match_attribute{attr('value', key)}>" for key in chosen)
            + '<button type="submit" id="apply">write this expectation to the registry</button></form>'
        )
    return f"<section><h2>Make this run an expectation</h2>{form}</section>"


def render_run(
    run: StoredRun,
    find: FindExpectation,
    *,
    trace_url: str | None,
    csrf: str,
    can_write: bool,
    preview: FromRun | None = None,
    choice: dict[str, str] | None = None,
    message: str | None = None,
) -> str:
    flags = ' <span class="flag">incomplete: some spans were missing when scored</span>' if run.incomplete else ""
    if run.sampled:
        flags += f' <span class="flag sampled">sampled: {esc(sampled_text(run))}</span>'
    note = f'<p class="fail">{esc(message)}</p>' if message else ""
    request = f"<pre id=request>{esc(run.request)}</pre>" if run.request else '<p class="muted">no request recorded</p>'
    body = (
        f"<h1>Run of {esc(run.agent or 'an unnamed agent')}{flags}</h1>{note}"
        f'<p class="note">scored {esc(when(run.scored_ns))} · {trace_link(trace_url, run)}</p>'
        f"<section><h2>Request</h2>{request}</section>"
        f"<section><h2>Calls</h2>{_calls(run)}</section>"
        f"{_scores(run, find)}"
        f"{_from_run_form(run, csrf, can_write, preview, choice or {})}"
    )
    return layout(f"Run {run.trace_id[:8]}", "runs", body)
