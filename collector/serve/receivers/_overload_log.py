"""Overload refusals in the log: a WARNING now and then for as long as the receivers turn senders away.

An overload answer (gRPC RESOURCE_EXHAUSTED with `RetryInfo`, HTTP 429 with `Retry-After`, and gRPC's
answer past `grpc_max_concurrent_calls`) is pushback the sender retries, and each one is counted
(`toolscore.refusals`). Sustained, it means spans arrive faster than they are scored or forwarded, which
an operator has to act on, so it is logged like the other refusals, through the receiver's `LimitedLog`:
one line per refusal reason every 10 s, saying how many refusals it stands for and the state of the queues
that decided them, at WARNING (INFO for `shutdown`, expected while the collector stops).

Under overload the refusals come by the thousand a second, and each costs the sender's retry anyway: the
limiter is asked first, and the line (the sender's address, the queues' state) is only made when it is due.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from toolscore.collector.serve._limited_log import LimitedLog

__all__ = ["log_overload"]

_UNNAMED = "overloaded"
"""The key of an overload refusal whose ingest did not name its reason."""


def log_overload(
    log: LimitedLog,
    receiver: str,
    *,
    reason: str,
    peer: Callable[[], str],
    answer: str,
    retry_after_s: float,
    state: Callable[[], str],
) -> None:
    """Log an overload refusal under `reason` when a line of it is due; `peer` and `state` are asked only then.

    `receiver`: `OTLP/gRPC` or `OTLP/HTTP`; `answer`: the status sent (`429`, `RESOURCE_EXHAUSTED`).
    """
    reason = reason or _UNNAMED
    level = logging.INFO if reason == "shutdown" else logging.WARNING
    held = log.take(level, reason)
    if held is None:
        return
    line = "%s export refused from %s: %s, retry in %gs (overloaded: %s; %s)"
    log.emit(level, held, line, receiver, peer(), answer, retry_after_s, reason, state())
