"""The expectations: each with its pass rate and mean score over a window (1 h, 1 d or 7 d, a small bar
chart of the pass rate per slice), the runs it matched, its last failure, and its version history."""

from __future__ import annotations

from collections.abc import Sequence

from toolscore.collector.registry import Expectation
from toolscore.collector.serve.scores import Bucket, ExpectationTrend
from toolscore.collector.ui._html import attr, esc, layout, query

__all__ = ["WINDOWS", "render_expectations", "render_history"]

WINDOWS = {"1h": 3600, "1d": 86400, "7d": 7 * 86400}
"""The windows offered, in seconds; the chart splits each into 24 slices."""

_W, _H = 192, 28


def _chart(buckets: Sequence[Bucket]) -> str:
    """Inline SVG: one bar per slice, its height the pass rate; grey where nothing was scored."""
    width = _W / max(1, len(buckets))
    bars = []
    for i, b in enumerate(buckets):
        x = f"{i * width:.1f}"
        bars.append(f'<rect class="bg" x="{x}" y="0" width="{width - 1:.1f}" height="{_H}"/>')
        if b.runs:
            ok = _H * b.passed / b.runs
            bars.append(f'<rect class="no" x="{x}" y="0" width="{width - 1:.1f}" height="{_H - ok:.1f}"/>')
            bars.append(f'<rect class="ok" x="{x}" y="{_H - ok:.1f}" width="{width - 1:.1f}" height="{ok:.1f}"/>')
    label = 'role="img" aria-label="pass rate per slice"'
    return f'<svg class="chart" width="{_W}" height="{_H}" {label}>{"".join(bars)}</svg>'


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def render_expectations(
    trends: Sequence[ExpectationTrend], current: dict[str, Expectation], window: str, message: str | None = None
) -> str:
    """`current`: the registry's expectations by name (empty without a registry), listed even when unscored."""
    links = " ".join(
        f"<b>{w}</b>" if w == window else f"<a{attr('href', query('/expectations', {'window': w}))}>{w}</a>"
        for w in WINDOWS
    )
    by_name = {t.expectation: t for t in trends}
    rows = []
    for name in sorted({*by_name, *current}):
        trend = by_name.get(name) or ExpectationTrend(name)
        exp = current.get(name)
        version = (
            f"<a{attr('href', '/expectations/' + name)}>v{exp.version}</a>" if exp else "<span class=muted>-</span>"
        )
        last = (
            f"<a{attr('href', f'/run/{trend.last_failure}')}>run {trend.last_failure}</a>"
            if trend.last_failure
            else '<span class="muted">none kept</span>'
        )
        mean = "-" if trend.mean is None else f"{trend.mean:.3f}"
        runs = f"<a{attr('href', query('/', {'expectation': name}))}>{trend.runs}</a>"
        chart = _chart(trend.buckets) if trend.buckets else ""
        rows.append(
            f"<tr><td><code>{esc(name)}</code></td><td>{version}</td><td>{runs}</td><td>{_percent(trend.pass_rate)}</td>"
            f"<td>{mean}</td><td>{chart}</td><td>{last}</td></tr>"
        )
    note = f'<p class="pass">{esc(message)}</p>' if message else ""
    body = (
        f"<h1>Expectations</h1>{note}<p>window: {links}</p>"
        "<table><thead><tr><th>expectation</th><th>version</th><th>runs</th><th>pass rate</th><th>mean</th>"
        "<th>pass rate over the window</th><th>last failure</th></tr></thead><tbody>"
        + ("".join(rows) or '<tr><td colspan=7 class="muted">no expectation scored yet</td></tr>')
        + "</tbody></table>"
    )
    return layout("Expectations", "expectations", body)


def render_history(name: str, versions: Sequence[tuple[int, str, str]]) -> str:
    """`versions`: (version, what happened, YAML), newest first."""
    items = "".join(
        f"<section><h2>v{version} <span class=muted>{esc(kind)}</span></h2><pre>{esc(text)}</pre></section>"
        for version, kind, text in versions
    )
    body = f"<h1>Expectation <code>{esc(name)}</code></h1>" + (items or '<p class="muted">no history</p>')
    return layout(name, "expectations", body)
