"""`Forwarder`: sends export requests downstream from a bounded queue, retrying what the OTLP spec says to.

    submit(request bytes) ─→ queue (≤ queue_max_requests, ≤ queue_max_spans) ─→ sender threads ─→ Transport.send
                         full → counted drop `queue_full`             retryable → backoff with jitter, ≤ max_retry_s
                                                                       exhausted → counted drop `retries_exhausted`
                                                                       refused → counted drop `rejected`

Every span handed to `submit` ends as exactly one of: sent, or dropped with a reason, through the
telemetry; none is lost silently. The pipeline asks `has_room` before accepting a request, so a slow
downstream pushes back on the senders (RESOURCE_EXHAUSTED / 429) before anything has to be dropped.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Protocol

from toolscore.collector.serve._limited_log import LimitedLog
from toolscore.collector.serve.forward._config import ForwardConfig, endpoint_doubt, parse_headers
from toolscore.collector.serve.forward._transport import Attempt, Transport, make_transport
from toolscore.collector.telemetry.base import NoopTelemetry

__all__ = ["ForwardConfig", "ForwardDropReason", "ForwardTelemetry", "Forwarder", "parse_headers"]

_log = logging.getLogger("toolscore.serve.forward")

ForwardDropReason = str
"""Why forwarded spans were lost: ``queue_full``, ``retries_exhausted``, ``rejected``, ``shutdown``."""


class ForwardTelemetry(Protocol):
    """What the forwarder reports (`toolscore.forward.spans`, `toolscore.forward.retries`)."""

    def spans_forwarded(self, n: int) -> None:
        """`n` spans were delivered downstream."""

    def spans_forward_dropped(self, n: int, reason: str) -> None:
        """`n` spans will never reach the downstream; `reason` is a `ForwardDropReason`."""

    def forward_retried(self) -> None:
        """One export attempt failed and will be retried."""


@dataclass(slots=True)
class _Item:
    request: bytes
    spans: int


class Forwarder:
    """Forwards export requests to `config.endpoint`; `submit` is safe from any thread and never blocks.

    `transport` is for tests and benchmarks; by default it is built from the config's protocol.
    """

    def __init__(
        self,
        config: ForwardConfig,
        telemetry: ForwardTelemetry | None = None,
        transport: Transport | None = None,
    ) -> None:
        if not config.enabled and transport is None:
            raise ValueError("ForwardConfig.endpoint is unset: there is nothing to forward to")
        self.config = config
        if config.endpoint and (doubt := endpoint_doubt(config.endpoint, config.protocol)) is not None:
            _log.warning("%s", doubt)
        self.telemetry: ForwardTelemetry = telemetry or NoopTelemetry()
        self._transport = transport or make_transport(config)
        self._queue: deque[_Item] = deque()
        self._queued_spans = 0
        self._in_flight = 0
        self._cond = threading.Condition()
        self._closed = False
        self._stop = threading.Event()
        self._warnings = LimitedLog(_log)
        """Retry and drop warnings, one per kind every 10 s: an outage must not flood the log."""
        self.dropped: Counter[str] = Counter()
        """Spans dropped since start, by reason: the warnings are rate-limited, the total is logged at shutdown."""
        self._threads = [
            threading.Thread(target=self._run, name=f"toolscore-forward-{i}", daemon=True)
            for i in range(config.senders)
        ]
        for thread in self._threads:
            thread.start()

    # -- callers' side -------------------------------------------------------------------------------

    def submit(self, request: bytes, spans: int) -> bool:
        """Queue a serialized `ExportTraceServiceRequest` of `spans` spans; False (and its spans counted as
        dropped) when it does not fit."""
        with self._cond:
            fits = not self._closed and self._fits(spans)
            if fits:
                self._queue.append(_Item(request, spans))
                self._queued_spans += spans
                self._cond.notify()
        if not fits:
            self._drop(spans, "shutdown" if self._closed else "queue_full", "the forward queue is full")
        return fits

    def has_room(self, spans: float = 0) -> bool:
        """Whether a request of `spans` spans would be queued now (the pipeline refuses work otherwise)."""
        with self._cond:
            return not self._closed and self._fits(spans)

    def _fits(self, spans: float) -> bool:
        if not self._queue:
            return True  # an empty queue takes any one request, however large
        config = self.config
        return len(self._queue) < config.queue_max_requests and self._queued_spans + spans <= config.queue_max_spans

    @property
    def queued_spans(self) -> int:
        return self._queued_spans

    @property
    def queued_requests(self) -> int:
        return len(self._queue)

    def flush(self, timeout_s: float) -> bool:
        """Wait until every queued request is delivered or dropped; False if some are still pending."""
        deadline = time.monotonic() + max(timeout_s, 0.0)
        with self._cond:
            while self._queue or self._in_flight:
                left = deadline - time.monotonic()
                if left <= 0 or self._stop.is_set():
                    return False
                self._cond.wait(left)
        return True

    def shutdown(self, timeout_s: float) -> bool:
        """Refuse new requests, deliver the queued ones within `timeout_s`, drop (and count) the rest. Idempotent."""
        start = time.monotonic()
        with self._cond:
            self._closed = True
        flushed = self.flush(timeout_s)
        self._stop.set()
        with self._cond:
            left = list(self._queue)
            self._queue.clear()
            self._queued_spans = 0
            self._cond.notify_all()
        for item in left:
            self._drop(item.spans, "shutdown", "the collector shut down before they could be sent")
        for thread in self._threads:
            thread.join(max(0.0, timeout_s - (time.monotonic() - start)) + 0.1)
        self._transport.close()
        with self._cond:
            dropped = dict(self.dropped)
        if dropped:  # said once, whole: the counters cannot be scraped once the process has gone
            reasons = ", ".join(f"{reason}: {n}" for reason, n in sorted(dropped.items()))
            _log.warning("forwarding dropped %d spans in all since start (%s)", sum(dropped.values()), reasons)
        return flushed and not left

    # -- sender threads ------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stop.is_set():
                    self._cond.wait()
                if not self._queue:
                    return
                item = self._queue.popleft()
                self._queued_spans -= item.spans
                self._in_flight += 1
            try:
                self._deliver(item)
            except Exception:  # never lose the thread; count the spans as what they are: gone
                _log.exception("forwarding failed unexpectedly")
                self._drop(item.spans, "rejected", "an unexpected error")
            finally:
                with self._cond:
                    self._in_flight -= 1
                    self._cond.notify_all()

    def _deliver(self, item: _Item) -> None:
        start = time.monotonic()
        failures = 0
        while True:
            attempt = self._transport.send(item.request, item.spans)
            if attempt.delivered or not attempt.retryable:
                self._settle(item, attempt)
                return
            delay = self._delay(attempt, failures)
            failures += 1
            if time.monotonic() + delay - start > self.config.max_retry_s:
                self._drop(item.spans, "retries_exhausted", attempt.message)
                return
            self.telemetry.forward_retried()
            self._warnings.log(
                logging.WARNING, "retry", "downstream export failed (%s); retrying in %.2fs", attempt.message, delay
            )
            if self._stop.wait(delay):
                self._drop(item.spans, "shutdown", attempt.message)
                return

    def _settle(self, item: _Item, attempt: Attempt) -> None:
        rejected = min(attempt.rejected_spans, item.spans)
        if rejected:
            self._drop(rejected, "rejected", attempt.message or "partial success")
        if attempt.delivered and item.spans > rejected:
            self.telemetry.spans_forwarded(item.spans - rejected)

    def _delay(self, attempt: Attempt, failures: int) -> float:
        if attempt.retry_after_s is not None:
            return attempt.retry_after_s
        config = self.config
        base = min(config.backoff_max_s, config.backoff_initial_s * 2.0 ** min(failures, 60))
        return float(base * random.uniform(0.5, 1.5))  # jitter, not security

    def _drop(self, spans: int, reason: str, why: str) -> None:
        with self._cond:
            self.dropped[reason] += spans
        self.telemetry.spans_forward_dropped(spans, reason)
        self._warnings.log(logging.WARNING, reason, "dropped %d spans (%s): %s", spans, reason, why)
