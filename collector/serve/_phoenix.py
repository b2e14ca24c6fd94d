"""Scores as Arize Phoenix span annotations: what Phoenix users look at, rather than span attributes.

Phoenix shows evaluations as annotations on a span (its REST API, `POST /v1/span_annotations`), not as the
span's attributes or events, so a score that only rides on the forwarded run span is invisible in its
annotation columns and filters. This sink posts each result as one annotation on the run span:

    Engine.on_scored ─→ PhoenixAnnotations.record (bounded deque, worker thread; never blocks)
        ─(own thread)─→ batch ─→ POST /v1/span_annotations?sync=true ─┬─ 200: sent
                                                                      ├─ 404 (span not there yet): retried
                                                                      ├─ 5xx / unreachable: retried
                                                                      └─ other 4xx: dropped, `rejected`

A run span reaches Phoenix through the forwarder (or the user's Collector) in its own time, often after the
score is ready, so "span not found" is the normal first answer. Phoenix then refuses the whole batch and
names the missing spans: the others are sent again at once, and the named ones wait, each sent again with
a growing pause until `retry_for_s` has passed since it was first tried (a span that never comes, sampled
out downstream, holds up nothing but its own annotations). `sync=true` makes Phoenix say so; without it
Phoenix answers 200 and may drop an annotation whose span never comes, which no counter would show.

The annotation's `identifier` is fixed per expectation and scorer, and Phoenix keeps one annotation per
(name, span, identifier): a run scored again (a replayed trace) updates its annotation rather than adding
a second one. Results from `llm_judge` scorers are annotator kind `LLM`, the others `CODE`.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
import urllib3
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from toolscore.collector.registry import Expectation
from toolscore.scorers._model import AgentRun, Score, ScoreResult

__all__ = ["PhoenixAnnotations", "PhoenixConfig", "PhoenixTelemetry", "annotation"]

_log = logging.getLogger("toolscore.serve.phoenix")

API_KEY_ENV = "PHOENIX_API_KEY"
"""Read for the bearer token when the configuration sets none, as Phoenix's own clients do."""

_FIRST_PAUSE_S = 0.25
_MAX_PAUSE_S = 5.0
_SPAN_ID = re.compile(r"\b[0-9a-f]{16}\b")
_MAX_EXPLANATION_CHARS = 4000
"""Phoenix stores the explanation as text of any length; a long one helps nobody reading a table cell."""


class PhoenixTelemetry(Protocol):
    def annotations(self, n: int, outcome: str) -> None:
        """`n` annotations ended as `outcome`: `sent`, or dropped as `queue_full`, `span_not_found`,
        `rejected`, `unreachable` or `shutdown`."""


class PhoenixConfig(BaseModel):
    """Where `toolscore serve` posts each score as a Phoenix span annotation (off unless enabled)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        default=False, description="Post every score to Phoenix as a span annotation. Default: false."
    )
    endpoint: str = Field(
        default="http://127.0.0.1:6006",
        pattern=r"^https?://",
        description="Phoenix's base URL (the REST API is under `/v1`). Default: http://127.0.0.1:6006.",
    )
    api_key: SecretStr | None = Field(
        default=None,
        description="Bearer token for a Phoenix with authentication on; unset: `PHOENIX_API_KEY`, else none. "
        "Default: null.",
    )
    queue_size: int = Field(
        default=10_000,
        ge=1,
        description="Results waiting to be posted; past it new ones are dropped and counted "
        "(`toolscore.phoenix.annotations`, outcome `queue_full`). Default: 10000.",
    )
    batch_max: int = Field(default=100, ge=1, le=1000, description="Annotations per request. Default: 100.")
    retry_for_s: float = Field(
        default=60.0,
        gt=0,
        description="How long a batch is sent again while Phoenix has not yet received its run spans or is "
        "unreachable; then it is dropped and counted. Default: 60.",
    )
    timeout_s: float = Field(default=5.0, gt=0, description="Per-request timeout. Default: 5.")


def annotation(
    run: AgentRun, expectation: Expectation, result: ScoreResult, agent_version: str | None = None
) -> dict[str, Any]:
    """One result as Phoenix's `SpanAnnotationData`: named `<expectation>.<scorer>`, on the run span; the run's
    agent version, when it has one, in the metadata (`toolscore.agent.version`)."""
    kind = "CODE"
    for scorer in expectation.scorers:
        if scorer.name == result.name and scorer.spec.get("type") == "llm_judge":
            kind = "LLM"
    metadata: dict[str, Any] = {
        "toolscore.expectation.name": expectation.name,
        "toolscore.expectation.version": expectation.version,
        "gen_ai.evaluation.name": result.name,
    }
    if isinstance(result, Score):
        outcome: dict[str, Any] = {
            "score": result.value,
            "label": result.label,
            "explanation": result.explanation[:_MAX_EXPLANATION_CHARS],
        }
    else:
        outcome = {"label": "error", "explanation": result.message[:_MAX_EXPLANATION_CHARS]}
        metadata["error.type"] = result.error_type
    if run.incomplete:
        metadata["toolscore.run.incomplete"] = True
    if agent_version:
        metadata["toolscore.agent.version"] = agent_version
    return {
        "span_id": run.span_id,
        "name": f"{expectation.name}.{result.name}",
        "annotator_kind": kind,
        "result": outcome,
        "metadata": metadata,
        "identifier": "toolscore",
    }


@dataclass(slots=True, eq=False)  # compared by identity: two equal annotations are two items
class _Item:
    annotation: dict[str, Any]
    give_up: float = 0.0
    """Monotonic time after which it is dropped; set when it is first sent."""
    due: float = 0.0
    """When it may be sent again after "span not found"."""
    pause: float = _FIRST_PAUSE_S


class PhoenixAnnotations:
    """The sink: `record` is the `Engine.on_scored` callback; one thread posts what gathered."""

    def __init__(self, config: PhoenixConfig, telemetry: PhoenixTelemetry | None = None) -> None:
        self.config = config
        self.telemetry = telemetry
        self.url = config.endpoint.rstrip("/") + "/v1/span_annotations?sync=true"
        key = config.api_key.get_secret_value() if config.api_key is not None else os.environ.get(API_KEY_ENV)
        self._headers = {"Content-Type": "application/json"}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._http = urllib3.PoolManager(
            maxsize=1, timeout=urllib3.Timeout(total=config.timeout_s), retries=False, block=False
        )
        self._pending: deque[_Item] = deque()
        self._waiting: list[_Item] = []
        """Annotations whose run span Phoenix did not have yet, each sent again when due."""
        self._wake = threading.Event()
        self._stopping = False
        self._deadline: float | None = None
        """Set at close: nothing is sent again after it."""
        self._cut_off = 0
        """Annotations dropped because close's deadline came first."""
        self._idle = threading.Event()
        """Set while nothing is pending or waiting: what `flush` waits for."""
        self._idle.set()
        self._idle_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="toolscore-phoenix", daemon=True)
        self._thread.start()

    def record(
        self, run: AgentRun, expectation: Expectation, result: ScoreResult, agent_version: str | None = None
    ) -> None:
        """Queue one result (the `Engine.on_scored` callback); drops it (counted) when the queue is full or the
        sink is closed."""
        if self._stopping or len(self._pending) + len(self._waiting) >= self.config.queue_size:
            self._count(1, "shutdown" if self._stopping else "queue_full")
            return
        item = _Item(annotation(run, expectation, result, agent_version))
        with self._idle_lock:  # so the thread never marks idle between this append and the clear
            self._pending.append(item)
            self._idle.clear()
        self._wake.set()

    def flush(self, timeout_s: float) -> bool:
        """Wait until everything recorded so far has been sent or dropped; False on timeout."""
        self._wake.set()
        return self._idle.wait(timeout_s)

    def close(self, timeout_s: float = 5.0) -> bool:
        """Send what is queued within `timeout_s`; what Phoenix has not taken by then is dropped, counted.
        False when anything was cut off."""
        self._deadline = time.monotonic() + timeout_s
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout_s + self.config.timeout_s)
        self._http.clear()
        return not self._thread.is_alive() and not self._pending and not self._waiting and not self._cut_off

    def _count(self, n: int, outcome: str) -> None:
        if n and self.telemetry is not None:
            self.telemetry.annotations(n, outcome)

    def _run(self) -> None:
        while True:
            try:
                if not self._step(time.monotonic()):
                    return
            except Exception:  # the thread must outlive any bug, or scores would pile up unsent
                _log.exception("posting annotations to Phoenix failed")

    def _step(self, now: float) -> bool:
        """Send one batch, or wait for work; False once closed and empty."""
        if self._deadline is not None and now >= self._deadline:
            self._drop_all()
            return False
        batch = [item for item in self._waiting if item.due <= now][: self.config.batch_max]
        if batch:
            taken = {id(item) for item in batch}
            self._waiting = [item for item in self._waiting if id(item) not in taken]
        while self._pending and len(batch) < self.config.batch_max:
            item = self._pending.popleft()
            item.give_up = item.give_up or now + self.config.retry_for_s
            batch.append(item)
        if batch:
            self._send(batch, now)
            return True
        if not self._waiting:
            with self._idle_lock:
                if not self._pending:
                    self._idle.set()
            if self._stopping and not self._pending:
                return False
        wait = min((item.due for item in self._waiting), default=now + 1.0) - now
        if self._deadline is not None:
            wait = min(wait, self._deadline - now)
        self._wake.wait(max(0.0, wait))
        self._wake.clear()
        return True

    def _send(self, batch: list[_Item], now: float) -> None:
        status, why = self._post(orjson.dumps({"data": [item.annotation for item in batch]}))
        if status == 200:
            self._count(len(batch), "sent")
            return
        if status == 404:  # "Spans with IDs a, b do not exist.": the others go again at once
            named = set(_SPAN_ID.findall(why))
            missing = [item for item in batch if item.annotation["span_id"] in named]
            rest = [item for item in batch if item.annotation["span_id"] not in named] if missing else []
            self._pending.extendleft(reversed(rest))
            self._later(missing or batch, now, "span_not_found")
        elif status is None or status >= 500 or status == 429:
            self._later(batch, now, "unreachable")
            if self._stopping is False:
                time.sleep(min(_MAX_PAUSE_S, batch[0].pause))  # Phoenix is down: don't hammer it
        else:
            _log.warning("Phoenix refused %d annotations (HTTP %d): %s", len(batch), status, why)
            self._count(len(batch), "rejected")

    def _later(self, items: list[_Item], now: float, outcome: str) -> None:
        dropped = 0
        for item in items:
            if now + item.pause > item.give_up:
                dropped += 1
                continue
            item.due, item.pause = now + item.pause, min(item.pause * 2, _MAX_PAUSE_S)
            self._waiting.append(item)
        if dropped:
            _log.warning("dropped %d annotations after %gs (%s)", dropped, self.config.retry_for_s, outcome)
            self._count(dropped, outcome)

    def _drop_all(self) -> None:
        left = len(self._pending) + len(self._waiting)
        self._pending.clear()
        self._waiting.clear()
        self._cut_off += left
        self._count(left, "shutdown")
        self._idle.set()

    def _post(self, body: bytes) -> tuple[int | None, str]:
        try:
            response = self._http.request("POST", self.url, body=body, headers=self._headers, preload_content=True)
        except urllib3.exceptions.HTTPError as error:
            return None, f"{type(error).__name__}: {error}"
        return response.status, response.data[:4096].decode("utf-8", "replace")
