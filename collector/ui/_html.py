"""The page's frame and its one escaping rule: every value reaches the HTML through `esc` (or `attr`).

Everything a trace carries (tool names, arguments, requests, agent names, explanations) is untrusted: a
span attribute is whatever the sender wrote. `esc` escapes `&`, `<`, `>`, `"` and `'`, so a value is text
both between tags and inside a quoted attribute; no value is ever placed in a script, a style or an
unquoted attribute. The page's own script reads the data it needs from `data-` attributes and JSON it
fetches, and inserts text only through `textContent`.
"""

from __future__ import annotations

import html
import json
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

__all__ = ["attr", "esc", "first_line", "layout", "pretty_json", "query", "when"]


def esc(value: object) -> str:
    """`value` as HTML text, safe between tags and inside a double- or single-quoted attribute."""
    return html.escape(str(value), quote=True)


def attr(name: str, value: object) -> str:
    """` name="value"`, the value escaped."""
    return f' {name}="{esc(value)}"'


def query(path: str, params: dict[str, Any]) -> str:
    """`path?a=1&b=2` without the empty parameters (escape it with `attr` when it goes in an attribute)."""
    kept = {k: v for k, v in params.items() if v not in (None, "")}
    return f"{path}?{urlencode(kept)}" if kept else path


def first_line(text: str | None, width: int = 120) -> str:
    """The first non-empty line of a request, cut to `width` with `…`."""
    if not text:
        return ""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


def when(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9).astimezone().strftime("%Y-%m-%d %H:%M:%S")


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:.6em 1.2em;display:flex;gap:1.5em;align-items:baseline}
header a{color:#cfd8ff;text-decoration:none}header a.here{color:#fff;font-weight:600}
header .brand{font-weight:700;color:#fff}
main{padding:1em 1.2em;max-width:1400px}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{border-bottom:1px solid #e3e6eb;padding:.35em .5em;text-align:left;vertical-align:top}
th{font-weight:600;background:#eef0f4}
pre{margin:0;white-space:pre-wrap;word-break:break-word;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
code{font:12px ui-monospace,Menlo,Consolas,monospace}
.pass{color:#116b2e;font-weight:600}.fail{color:#b3261e;font-weight:600}.error{color:#8a5a00;font-weight:600}
.chip{display:inline-block;border-radius:3px;padding:0 .35em;margin:0 .2em .2em 0;font-size:12px;background:#eef0f4}
.chip.pass{background:#dff3e4}.chip.fail{background:#fbe2e0}.chip.error{background:#fff1d1}
.flag{font-size:11px;background:#fff1d1;border-radius:3px;padding:0 .3em;margin-left:.3em}
td.when{white-space:nowrap}.muted{color:#6b7280}.calls code{margin-right:.4em}
form.filters{display:flex;gap:.8em;flex-wrap:wrap;align-items:end;margin-bottom:.8em}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:#4b5563}
section{background:#fff;border:1px solid #e3e6eb;border-radius:4px;padding:.8em 1em;margin-bottom:1em}
h1{font-size:20px;margin:.2em 0 .6em}h2{font-size:16px;margin:.2em 0 .5em}h3{font-size:14px;margin:.8em 0 .3em}
tr.bad td{background:#fff6f5}.diff td{font-size:12px}
.note{font-size:12px;color:#6b7280}.pager{margin:.8em 0}
svg.chart rect.bg{fill:#eef0f4}svg.chart rect.ok{fill:#2e9e50}svg.chart rect.no{fill:#d9534f}
textarea{width:100%;font:12px ui-monospace,Menlo,Consolas,monospace}
"""

_NAV = (("runs", "/", "Runs"), ("expectations", "/expectations", "Expectations"))


def layout(title: str, here: str, body: str, script: str = "") -> str:
    """A whole page: `title` (escaped here), the navigation with `here` marked, `body` (already HTML)."""
    nav = "".join(f'<a href="{href}"{" class=here" if key == here else ""}>{label}</a>' for key, href, label in _NAV)
    js = f"<script>{script}</script>" if script else ""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{esc(title)} · toolscore</title><style>{_CSS}</style></head><body>"
        f'<header><span class="brand">toolscore</span>{nav}</header><main>{body}</main>{js}</body></html>'
    )
