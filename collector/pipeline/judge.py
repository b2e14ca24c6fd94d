"""Score, part two: LLM-judge evaluations on an asyncio loop of their own thread, under a budget.

The worker thread never waits on a judge: it `submit`s and carries on; the result comes back through
`deliver` (called on the loop's thread), which the engine turns into a wake-up of its worker. The
budget is three limits: a token bucket of `calls_per_minute` (checked on submit, so a run over
budget is known at once), `max_concurrency` evaluations in flight, and `timeout_s` per evaluation
counted from submission (waiting for a slot included), after which it fails with `judge_timeout`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Callable, Hashable
from typing import Protocol

from opentelemetry.trace import Tracer

from toolscore.collector.pipeline.config import JudgeBudgetConfig
from toolscore.scorers._model import AgentRun, ScoreFailure, ScoreResult

__all__ = ["AsyncScorer", "JudgePool", "TokenBucket"]


class AsyncScorer(Protocol):
    scorer_name: str

    async def ascore(self, run: AgentRun, *, tracer: Tracer | None = None) -> ScoreResult: ...


class TokenBucket:
    """`rate_per_minute` tokens a minute, at most one minute's worth banked; one thread only."""

    def __init__(self, rate_per_minute: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = rate_per_minute
        self.tokens = rate_per_minute
        self._per_s = rate_per_minute / 60.0
        self._clock = clock
        self._last = clock()

    def take(self) -> bool:
        now = self._clock()
        self.tokens = min(self.capacity, self.tokens + (now - self._last) * self._per_s)
        self._last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class JudgePool:
    """Runs `ascore` of judge scorers off the worker thread; `deliver(key, result)` gets every result once."""

    def __init__(
        self,
        config: JudgeBudgetConfig,
        deliver: Callable[[Hashable, ScoreResult], None],
        tracer: Tracer | None = None,
    ) -> None:
        """`tracer`: where each judge request's `chat` span goes (default: the global provider's)."""
        self.config = config
        self._tracer = tracer
        self._deliver = deliver
        self._bucket = TokenBucket(config.calls_per_minute)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._slots: asyncio.Semaphore | None = None
        self._futures: set[concurrent.futures.Future[None]] = set()
        self._lock = threading.Lock()

    def submit(self, key: Hashable, scorer: AsyncScorer, run: AgentRun) -> ScoreFailure | None:
        """Start one evaluation; a `judge_over_budget` failure (returned, not delivered) when over budget."""
        if not self._bucket.take():
            return ScoreFailure(
                name=scorer.scorer_name,
                error_type="judge_over_budget",
                message=f"over the judge budget of {self.config.calls_per_minute:g} calls per minute",
            )
        loop = self._ensure_loop()
        future = asyncio.run_coroutine_threadsafe(self._evaluate(key, scorer, run), loop)
        with self._lock:
            self._futures.add(future)
        future.add_done_callback(self._forget)
        return None

    def _forget(self, future: concurrent.futures.Future[None]) -> None:
        with self._lock:
            self._futures.discard(future)

    def in_flight(self) -> int:
        with self._lock:
            return len(self._futures)

    async def _evaluate(self, key: Hashable, scorer: AsyncScorer, run: AgentRun) -> None:
        assert self._slots is not None
        try:
            result = await asyncio.wait_for(self._limited(scorer, run), self.config.timeout_s)
        except TimeoutError:
            result = ScoreFailure(
                name=scorer.scorer_name,
                error_type="judge_timeout",
                message=f"no verdict within the pipeline's {self.config.timeout_s:g} s judge timeout",
            )
        except asyncio.CancelledError:
            result = ScoreFailure(name=scorer.scorer_name, error_type="judge_cancelled", message="pipeline shut down")
            self._deliver(key, result)
            raise
        except Exception as exc:  # ascore never raises by contract; a third-party scorer might
            result = ScoreFailure(
                name=scorer.scorer_name, error_type="judge_error", message=f"{type(exc).__name__}: {exc}"
            )
        self._deliver(key, result)

    async def _limited(self, scorer: AsyncScorer, run: AgentRun) -> ScoreResult:
        assert self._slots is not None
        async with self._slots:
            return await scorer.ascore(run, tracer=self._tracer)

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is not None:
            return self._loop
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            self._slots = asyncio.Semaphore(self.config.max_concurrency)
            loop.call_soon(ready.set)
            loop.run_forever()

        self._thread = threading.Thread(target=run, name="toolscore-judge", daemon=True)
        self._thread.start()
        ready.wait()
        self._loop = loop
        return loop

    def close(self, timeout_s: float) -> None:
        """Cancel every task on the loop (judges get a `judge_cancelled` result; litellm's own background
        tasks end too, as `asyncio.run` would end them), then stop and close the loop."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
            asyncio.run_coroutine_threadsafe(_cancel_all(), loop).result(max(timeout_s, 0.1))
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=max(timeout_s, 0.1))
        if not thread.is_alive():
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
        self._loop = self._thread = None

    def __repr__(self) -> str:
        return f"JudgePool(in_flight={self.in_flight()}, tokens={self._bucket.tokens:.1f})"


async def _cancel_all() -> None:
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
