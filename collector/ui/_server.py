"""The page's HTTP server: routes, the bearer-token check, and the write that makes a run an expectation.

    GET  /                     the runs (filters as query parameters; `partial=rows`: the table body alone)
    GET  /api/latest           {"latest": id of the newest run the filters keep}, polled by the live page
    GET  /run/<id>             one run;  GET /run/<id>/expect: the same with the expectation's YAML preview
    POST /run/<id>/expect      writes that expectation through the registry, then shows the expectations
    GET  /expectations         pass rate, mean, runs and last failure per expectation (`window=1h|1d|7d`)
    GET  /expectations/<name>  the version history

Served by `BoundedHTTPServer` (the receivers' bounded threading server). With `ui.bearer_token` set, every
request carries `authorization: Bearer <token>` (checked by `bearer_matches`, as the receivers and the
registry API check it) or the cookie that `/?token=<token>` sets for a browser, which cannot send a header
on a link. The write also needs the form's per-process `csrf` value and, when the browser names one, an
`Origin` of this server: another site's page cannot post to it. Every answer carries a Content-Security-
Policy that runs no script but the page's own (by hash) and loads nothing from anywhere else.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
import secrets
import socket
import threading
import time
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from toolscore.collector.bearer import bearer_matches
from toolscore.collector.extract.privacy import PrivacyConfig
from toolscore.collector.registry import Expectation, InvalidExpectation, Registry
from toolscore.collector.serve._ui_config import UiConfig
from toolscore.collector.serve.receivers._config import split_endpoint
from toolscore.collector.serve.receivers._http_server import BoundedHTTPServer, BoundedRequestHandler
from toolscore.collector.serve.scores import (
    agents,
    expectation_names,
    expectation_trends,
    latest_id,
    parse_since,
    run_by_id,
    runs_page,
)
from toolscore.collector.ui._diff import expectation_version, masked_expectation
from toolscore.collector.ui._expectations_view import WINDOWS, render_expectations, render_history
from toolscore.collector.ui._from_run import FromRun, expectation_from_run
from toolscore.collector.ui._html import esc, layout
from toolscore.collector.ui._run_view import render_run
from toolscore.collector.ui._runs_view import LIVE_JS, render_rows, render_runs, run_filter_of

__all__ = ["UiServer", "start_ui"]

_log = logging.getLogger("toolscore.ui")
_COOKIE = "toolscore_ui"
_RUN = re.compile(r"^/run/(\d{1,18})(/expect)?$")
_MAX_FORM_BYTES = 64 * 1024
_CHOICES_TTL_S = 5.0
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(LIVE_JS.encode()).digest()).decode()
_CSP = (
    f"default-src 'none'; script-src 'sha256-{_SCRIPT_HASH}'; style-src 'unsafe-inline'; connect-src 'self'; "
    "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


@dataclass
class _Context:
    config: UiConfig
    store_path: str
    registry: Registry | None
    csrf: str
    privacy: PrivacyConfig | None = None
    """What the stored runs were masked with: the expected values of a diff are masked alike."""


class _Handler(BoundedRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # the head and the body leave in two writes: without this, Nagle's algorithm holds the body back
        # until the client's delayed ACK of the head, 40 ms on every page a browser keeps a connection for
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("ui: " + format, *args)

    # -- answers ----------------------------------------------------------------------------------------

    def _send(
        self, status: int, body: str, kind: str = "text/html; charset=utf-8", headers: dict[str, str] | None = None
    ) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Content-Security-Policy", _CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _redirect(self, location: str, headers: dict[str, str] | None = None) -> None:
        self._send(303, "", headers={"Location": location, **(headers or {})})

    def _problem(self, status: int, text: str) -> None:
        self._send(status, layout("toolscore", "", f'<h1>{status}</h1><p class="fail">{esc(text)}</p>'))

    # -- auth -------------------------------------------------------------------------------------------

    def _authorized(self, params: dict[str, str]) -> bool | None:
        """True: go on; False: refused (answered); None: a token in the URL was accepted (redirected)."""
        token = self.server.context.config.bearer_token
        if token is None:
            return True
        if bearer_matches(self.headers.get("authorization"), token):
            return True
        try:
            cookie = SimpleCookie(self.headers.get("cookie") or "").get(_COOKIE)
        except CookieError:  # a header it cannot read is no token
            cookie = None
        if cookie is not None and bearer_matches("Bearer " + cookie.value, token):
            return True
        given = params.get("token")
        if given is not None and bearer_matches("Bearer " + given, token):
            cookie_text = f"{_COOKIE}={given}; HttpOnly; SameSite=Strict; Path=/"
            self._redirect(urlsplit(self.path).path or "/", {"Set-Cookie": cookie_text})
            return None
        self._send(
            401,
            layout(
                "unauthorized",
                "",
                "<h1>401</h1><p>this page needs the token (ui.bearer_token): open "
                "<code>/?token=&lt;token&gt;</code> once, or send <code>authorization: Bearer</code></p>",
            ),
            headers={"WWW-Authenticate": "Bearer"},
        )
        return False

    # -- routes -----------------------------------------------------------------------------------------

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        params = _fields(url.query)
        if not self._authorized(params):
            return
        try:
            self._route_get(url.path, params)
        except FileNotFoundError as exc:
            self._problem(503, f"{exc}: nothing scored yet, or `toolscore serve` writes elsewhere (score_store.path)")
        except Exception:
            _log.exception("ui: %s failed", url.path)
            self._problem(500, "the page failed; the collector's log says why")

    def _route_get(self, path: str, params: dict[str, str]) -> None:
        context = self.server.context
        if path == "/":
            self._runs(params)
        elif path == "/api/latest":
            latest = latest_id(context.store_path, self._filter(params)[0])
            self._send(200, json.dumps({"latest": latest}), "application/json")
        elif path == "/expectations":
            self._expectations(params.get("window", "1d"), params.get("applied"))
        elif path.startswith("/expectations/"):
            self._history(path.removeprefix("/expectations/"))
        elif match := _RUN.match(path):
            self._run(int(match.group(1)), params if match.group(2) else None)
        else:
            self._problem(404, f"no page at {path}")

    def _filter(self, params: dict[str, str]) -> tuple[Any, str | None]:
        since, error = None, None
        if params.get("since"):
            try:
                since = parse_since(params["since"])
            except ValueError as exc:
                error = str(exc)
        return run_filter_of(params, since), error

    def _runs(self, params: dict[str, str]) -> None:
        context = self.server.context
        run_filter, error = self._filter(params)
        before = int(params["before"]) if params.get("before", "").isdigit() else None
        page = runs_page(context.store_path, run_filter, before_id=before, limit=context.config.page_size)
        if params.get("partial") == "rows":
            self._send(200, render_rows(page))
            return
        agent_names, names = self.server.choices()
        html = render_runs(
            page,
            params,
            agent_names,
            names,
            page_size=context.config.page_size,
            poll_ms=context.config.poll_interval_ms,
            error=error,
        )
        self._send(200, html)

    def _run(self, row_id: int, choice: dict[str, str] | None, message: str | None = None) -> None:
        context = self.server.context
        run = run_by_id(context.store_path, row_id)
        if run is None:
            self._problem(404, f"run {row_id} is not in the store (retention may have removed it)")
            return
        preview: FromRun | None = None
        if choice is not None and message is None:
            try:
                preview = _build(run, choice)
            except (ValueError, InvalidExpectation) as exc:
                message = str(exc)
        html = render_run(
            run,
            lambda name, version: masked_expectation(
                expectation_version(context.registry, name, version), context.privacy
            ),
            trace_url=context.config.trace_url,
            csrf=context.csrf,
            can_write=context.registry is not None,
            preview=preview,
            choice=choice,
            message=message,
        )
        self._send(200 if message is None else 400, html)

    def _expectations(self, window: str, applied: str | None) -> None:
        context = self.server.context
        window = window if window in WINDOWS else "1d"
        now = time.time_ns()
        trends = expectation_trends(context.store_path, now - WINDOWS[window] * 10**9, now)
        current: dict[str, Expectation] = {}
        if context.registry is not None:
            current = {e.name: e for e in context.registry.list()}
        message = f"wrote expectation {applied}: the next run like it is scored against it" if applied else None
        self._send(200, render_expectations(trends, current, window, message))

    def _history(self, name: str) -> None:
        registry = self.server.context.registry
        if registry is None:
            self._problem(404, "no registry: the version history lives there")
            return
        import yaml

        changes = registry.history_changes(name)
        versions = [
            (c.version, c.kind, yaml.safe_dump(c.expectation.to_dict(), sort_keys=False, allow_unicode=True))
            for c in reversed(changes)
        ]
        self._send(200, render_history(name, versions))

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        if not self._authorized({}):
            return
        match = _RUN.match(url.path)
        if match is None or not match.group(2):
            self._problem(404, f"nothing to post to at {url.path}")
            return
        context = self.server.context
        length = int(self.headers.get("content-length") or 0)
        if length > _MAX_FORM_BYTES:
            self._problem(413, "form too large")
            return
        form = _fields(self.rfile.read(length).decode("utf-8", "replace"))
        origin = self.headers.get("origin")
        host = self.headers.get("host")
        if not secrets.compare_digest(form.get("csrf", ""), context.csrf) or (
            origin not in (None, "null") and urlsplit(origin).netloc != host
        ):
            self._problem(403, "this form was not sent from this page")
            return
        if context.registry is None:
            self._problem(409, "no registry to write to")
            return
        row_id = int(match.group(1))
        run = run_by_id(context.store_path, row_id)
        if run is None:
            self._problem(404, f"run {row_id} is not in the store")
            return
        try:
            built = _build(run, form)
            written = context.registry.put(built.expectation)
        except Exception as exc:  # invalid, or the name taken by another expectation's version: said on the page
            self._run(row_id, form, message=f"not written: {exc}")
            return
        _log.info(
            "ui: wrote expectation %s v%d from run %s/%s", written.name, written.version, run.trace_id, run.span_id
        )
        self._redirect(f"/expectations?applied={written.name}")


def _fields(text: str) -> dict[str, str]:
    """A query or form's fields, the last of each name; the attributes chosen to match on (`match_attribute`,
    one per checkbox) joined by newlines under `match_attributes` (a key holds no newline: `_run_values`)."""
    pairs = parse_qsl(text)
    fields = dict(pairs)
    fields.pop("match_attribute", None)
    chosen = [value for key, value in pairs if key == "match_attribute" and value and "\n" not in value]
    if chosen:
        fields["match_attributes"] = "\n".join(chosen)
    return fields


def _build(run: Any, choice: dict[str, str]) -> FromRun:
    return expectation_from_run(
        run,
        name=choice.get("name") or None,
        mode=choice.get("mode", "strict"),
        args_mode=choice.get("args_mode", "subset"),
        match_input=choice.get("match_input") == "1",
        match_attributes=tuple(key for key in choice.get("match_attributes", "").split("\n") if key),
    )


class _Server(BoundedHTTPServer):
    def __init__(self, host: str, port: int, context: _Context) -> None:
        super().__init__(host, port, _Handler, max_connections=32, idle_timeout_s=30.0, request_timeout_s=10.0)
        self.context = context
        self._choices: tuple[float, list[str], list[str]] | None = None
        self._choices_lock = threading.Lock()

    def choices(self) -> tuple[list[str], list[str]]:
        """The filter's agents and expectations, read at most every `_CHOICES_TTL_S`: each read walks the
        whole store, which a page that polls or pages need not repeat."""
        with self._choices_lock:
            cached = self._choices
            if cached is None or time.monotonic() - cached[0] > _CHOICES_TTL_S:
                path = self.context.store_path
                cached = self._choices = (time.monotonic(), agents(path), expectation_names(path))
            return cached[1], cached[2]


@dataclass
class UiServer:
    """The running page; `url` is what the ready line links, `stop` ends it (idempotent)."""

    url: str
    port: int
    _server: _Server
    _thread: threading.Thread

    def stop(self, grace_s: float = 1.0) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._server.drain(grace_s)
            self._server.server_close()
            self._thread.join(grace_s)


def start_ui(
    config: UiConfig, store_path: str, registry: Registry | None = None, privacy: PrivacyConfig | None = None
) -> UiServer:
    """Serve the page for the score store at `store_path`; `registry` gives diffs, history and the write."""
    host, port = split_endpoint(config.endpoint)
    server = _Server(host, port, _Context(config, store_path, registry, secrets.token_urlsafe(24), privacy))
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="toolscore-ui", daemon=True
    )
    thread.start()
    bound = int(server.server_address[1])
    shown = f"[{host}]" if ":" in host else host
    return UiServer(f"http://{shown}:{bound}/", bound, server, thread)
