"""The runs list: newest first, filtered, paged by run id, and kept live by a small polling script.

Without JavaScript the page is complete (the filters are a GET form, "Older" is a link); with it, the
page asks `/api/latest` every `poll_interval_ms` for the newest run id the filters keep and, on the first
page, replaces the table's rows with `/?...&partial=rows` when a newer one arrived.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolscore.collector.serve.scores import RunFilter, StoredRun, StoredScore
from toolscore.collector.ui._html import attr, esc, first_line, layout, query, when

__all__ = [
    "LIVE_JS",
    "call_chip",
    "render_rows",
    "render_runs",
    "run_filter_of",
    "sampled_text",
    "score_chip",
    "verdict",
]

_CALLS_SHOWN = 8
"""Calls shown in a row; the run's page lists them all."""


def verdict(score: StoredScore) -> str:
    """`pass`, `fail` or `error` (a scorer that failed to score)."""
    if score.error_type is not None:
        return "error"
    return "pass" if score.label == "pass" else "fail"


def score_chip(score: StoredScore) -> str:
    kind = verdict(score)
    value = f"error: {score.error_type}" if score.error_type is not None else f"{score.value:.2f} {score.label or ''}"
    title = f"{score.expectation} v{score.version} / {score.scorer}: {score.explanation}"
    return f'<span class="chip {kind}"{attr("title", title)}>{esc(score.scorer)} {esc(value.strip())}</span>'


def sampled_text(run: StoredRun) -> str:
    """Which scorers did not run on the run, for the `sampled` flag's title and the run's page."""
    return "not scored by (sampled out): " + "; ".join(
        f"{s.expectation} v{s.version} / {s.scorer} (sample_rate {s.sample_rate:g})" for s in run.sampled_out
    )


def call_chip(call: dict[str, Any]) -> str:
    name = esc(call.get("name") or "?")
    marks = "†" if call.get("model_only") else ""
    marks += "!" if call.get("error") else ""
    return f"<code>{name}{marks}</code>"


def _row(run: StoredRun) -> str:
    calls = "".join(call_chip(call) for call in run.calls[:_CALLS_SHOWN])
    more = run.calls_total - min(len(run.calls), _CALLS_SHOWN)
    if more > 0:
        calls += f'<span class="muted">+{more}</span>'
    flags = '<span class="flag">incomplete</span>' if run.incomplete else ""
    if run.sampled:
        flags += f'<span class="flag sampled"{attr("title", sampled_text(run))}>sampled</span>'
    href = f"/run/{run.row_id}"
    bad = any(verdict(score) != "pass" for score in run.scores)
    return (
        f'<tr data-id="{run.row_id}"{" class=bad" if bad else ""}>'
        f"<td class=when><a{attr('href', href)}>{esc(when(run.scored_ns))}"
        f"</a></td><td>{esc(run.agent or '-')}{flags}</td>"
        f"<td>{esc(first_line(run.request)) or '<span class=muted>-</span>'}"
        f'</td><td class="calls">{calls or "<span class=muted>none</span>"}</td>'
        f"<td>{''.join(score_chip(score) for score in run.scores)}</td></tr>"
    )


def render_rows(runs: Sequence[StoredRun]) -> str:
    """The table body alone (also what the live script fetches)."""
    if not runs:
        return '<tr><td colspan=5 class="muted">no scored runs match</td></tr>'
    return "".join(_row(run) for run in runs)


def _select(name: str, label: str, current: str | None, choices: Sequence[str]) -> str:
    options = '<option value="">any</option>' + "".join(
        f"<option{attr('value', c)}{' selected' if c == current else ''}>{esc(c)}</option>" for c in choices
    )
    return f"<label>{label}<select{attr('name', name)}>{options}</select></label>"


def render_runs(
    runs: Sequence[StoredRun],
    params: dict[str, str],
    agent_names: Sequence[str],
    expectation_names: Sequence[str],
    *,
    page_size: int,
    poll_ms: int,
    error: str | None = None,
) -> str:
    """The whole runs page; `params` are the request's filter parameters (echoed into the form and links)."""
    form = (
        '<form class="filters" method="get" action="/">'
        + _select("agent", "agent", params.get("agent"), agent_names)
        + _select("expectation", "expectation", params.get("expectation"), expectation_names)
        + _select("verdict", "verdict", params.get("verdict"), ["pass", "fail", "error"])
        + f"<label>since (10m, 2h, 1d, ISO)<input name=since size=10{attr('value', params.get('since', ''))}></label>"
        + '<button type="submit">filter</button> <a href="/">clear</a></form>'
    )
    problem = f'<p class="fail">{esc(error)}</p>' if error else ""
    filters = {k: params.get(k) for k in ("agent", "expectation", "verdict", "since")}
    pager = ""
    if len(runs) >= page_size:
        pager = f'<p class="pager"><a{attr("href", query("/", {**filters, "before": runs[-1].row_id}))}>older →</a></p>'
    if params.get("before"):
        pager += '<p class="pager"><a' + attr("href", query("/", filters)) + ">← newest</a></p>"
    live = not params.get("before")
    top = runs[0].row_id if runs else 0
    body = (
        f"<h1>Runs</h1>{form}{problem}"
        f'<p class="note" id="live"{attr("data-top", top)}{attr("data-poll", poll_ms)}'
        f"{attr('data-latest', query('/api/latest', filters))}"
        f"{attr('data-rows', query('/', {**filters, 'partial': 'rows'}))}"
        f">{'live: new runs appear as they are scored' if live else 'an older page (not live)'}</p>"
        '<table id="runs"><thead><tr><th>scored</th><th>agent</th><th>request</th><th>calls</th><th>scores</th></tr>'
        f'</thead><tbody id="rows">{render_rows(runs)}</tbody></table>{pager}'
        '<p class="note">† seen only in the model\'s output (no tool span) · ! the call failed · '
        "sampled: a scorer of a matched expectation did not run on this run (its sample_rate)</p>"
    )
    return layout("Runs", "runs", body, LIVE_JS if live else "")


LIVE_JS = """
(function(){
  var live=document.getElementById('live'); if(!live) return;
  var top=+live.dataset.top, every=+live.dataset.poll;
  function tick(){
    fetch(live.dataset.latest,{credentials:'same-origin'}).then(function(r){return r.json();}).then(function(d){
      if(d.latest>top){
        return fetch(live.dataset.rows,{credentials:'same-origin'}).then(function(r){return r.text();})
        .then(function(t){
          document.getElementById('rows').innerHTML=t; top=d.latest;
          live.textContent='live: updated '+new Date().toLocaleTimeString();
        });
      }
    }).catch(function(){}).then(function(){setTimeout(tick,every);});
  }
  setTimeout(tick,every);
})();
"""
"""`innerHTML` takes only the server's own rendering of the rows (`render_rows`), escaped as every page is."""


def run_filter_of(params: dict[str, str], since_ns: int | None) -> RunFilter:
    verdict_text = params.get("verdict") or None
    label: Any = verdict_text if verdict_text in ("pass", "fail", "error") else None
    return RunFilter(
        agent=params.get("agent") or None,
        expectation=params.get("expectation") or None,
        label=label,
        since_ns=since_ns,
    )
