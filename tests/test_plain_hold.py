"""`PlainHold`'s release rules against a plain per-trace model, on a clock the test moves.

The hold indexes a request by its traces and gives the request two deadlines; a trace seen in a second request
gets deadlines of its own. Whatever the bookkeeping, the rule is per trace (the module docstring of `_hold`):
a trace goes on once its root has come and no span of it for `settle_ms`, or `hold_ms` after its first held
span; a request goes on whole when every trace in it went on without being taken; a trace taken for the engine
splits the requests it is in, and their other traces then go on as single spans. The model below is that rule
written per trace, and random sequences of requests, takes and clock moves must get from the hold exactly what
the model releases, at the same steps.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.pipeline_builders import Recording
from toolscore.collector.serve._hold import PlainHold, _Out

SETTLE_NS = 100
HOLD_NS = 1_000


class _Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


class _Manual(PlainHold):
    """The hold without its release thread: the test says when it looks (`due`), on its own clock."""

    def _run(self) -> None:
        return None

    def due(self) -> None:
        out = _Out()
        with self._cond:
            self._due(self._clock(), out)
        self._send(out)


@dataclass
class _Request:
    data: bytes
    spans: list[tuple[bytes, str]]
    """(trace id, span name) per span."""
    roots: set[bytes]


@dataclass
class _ModelTrace:
    first: int
    last: int
    root: bool
    requests: list[int] = field(default_factory=list)


class _Model:
    """The rule per trace, with no shortcut."""

    def __init__(self) -> None:
        self.traces: dict[bytes, _ModelTrace] = {}
        self.requests: list[_Request] = []
        self.left: list[set[bytes]] = []
        """Per request, its traces not gone yet."""
        self.split: list[bool] = []

    def hold(self, request: _Request, now: int) -> None:
        index = len(self.requests)
        self.requests.append(request)
        self.left.append({trace_id for trace_id, _ in request.spans})
        self.split.append(False)
        for trace_id in self.left[index]:
            trace = self.traces.setdefault(trace_id, _ModelTrace(now, now, False))
            trace.last = now
            trace.root = trace.root or trace_id in request.roots
            trace.requests.append(index)

    def _spans(self, index: int, trace_id: bytes) -> list[str]:
        return [name for tid, name in self.requests[index].spans if tid == trace_id]

    def _leave(self, trace_id: bytes, taken: bool, whole: list[bytes], spans: list[str]) -> list[str]:
        trace = self.traces.pop(trace_id)
        mine: list[str] = []
        for index in trace.requests:
            if taken and not self.split[index]:
                self.split[index] = True  # split: its traces that went before went whole with... nothing
                spans += [
                    name for tid, name in self.requests[index].spans if tid not in self.left[index] and tid != trace_id
                ]
            if self.split[index]:
                mine += self._spans(index, trace_id)
            self.left[index].discard(trace_id)
            if not self.left[index] and not self.split[index]:
                whole.append(self.requests[index].data)
        return mine

    def due(self, now: int) -> tuple[list[bytes], list[str]]:
        whole: list[bytes] = []
        spans: list[str] = []
        for trace_id in [
            trace_id
            for trace_id, trace in self.traces.items()
            if (trace.root and trace.last + SETTLE_NS <= now) or trace.first + HOLD_NS <= now
        ]:
            spans += self._leave(trace_id, False, whole, spans)
        return whole, spans

    def take(self, trace_ids: list[bytes]) -> tuple[list[str], list[str]]:
        """(the taken spans, the spans of other traces that a split let go)"""
        taken: list[str] = []
        let_go: list[str] = []
        whole: list[bytes] = []
        for trace_id in trace_ids:
            if trace_id in self.traces:
                taken += self._leave(trace_id, True, whole, let_go)
        assert not whole
        return taken, let_go


def _split_of(requests: dict[bytes, _Request]) -> Any:
    def split(data: bytes) -> list[tuple[bytes, Any]]:
        return [(trace_id, (name, None, None)) for trace_id, name in requests[data].spans]

    return split


class _Driver:
    """The hold and the model side by side, given the same requests, takes and clock moves."""

    def __init__(self, rng: random.Random, max_bytes: int = 1 << 40) -> None:
        self.rng = rng
        self.clock = _Clock()
        self.whole: list[bytes] = []
        self.spans: list[Any] = []
        self.taken: list[str] = []
        self.requests: dict[bytes, _Request] = {}
        self.hold = _Manual(
            settle_ms=SETTLE_NS / 1e6,
            hold_ms=HOLD_NS / 1e6,
            max_bytes=max_bytes,
            forward=lambda data, n: self.whole.append(data),
            release=self.spans.extend,
            split=_split_of(self.requests),
            telemetry=Recording(),
            clock=self.clock,
        )
        self.model = _Model()
        self.names = iter(range(10**9))

    def send(self, pool: list[bytes], data: bytes) -> None:
        rng = self.rng
        request = _Request(data, [], set())
        for trace_id in rng.sample(pool, rng.randint(1, min(6, len(pool)))):
            request.spans += [(trace_id, f"s{next(self.names)}") for _ in range(rng.randint(1, 3))]
            if rng.random() < 0.4:
                request.roots.add(trace_id)
        rng.shuffle(request.spans)
        self.requests[data] = request
        counts = Counter(trace_id for trace_id, _ in request.spans)
        self.hold.hold_request(data, dict(counts), set(request.roots), len(request.spans))
        self.model.hold(request, self.clock.now)

    def take(self, pool: list[bytes]) -> None:
        wanted = self.rng.sample(pool, self.rng.randint(1, 2))
        model = self.model
        assert self.hold.held(wanted) == sum(
            len(model._spans(index, trace_id))
            for trace_id in wanted
            if trace_id in model.traces
            for index in model.traces[trace_id].requests
        )
        before = len(self.spans)
        taken = [carrier[0] for carrier in self.hold.take(wanted)]
        want_taken, let_go = model.take(wanted)
        assert Counter(taken) == Counter(want_taken)
        assert Counter(carrier[0] for carrier in self.spans[before:]) == Counter(let_go)
        self.taken += taken

    def advance(self) -> None:
        self.clock.now += self.rng.choice((1, 10, 50, 99, 100, 101, 400, 1_000))
        before_whole, before_spans = len(self.whole), len(self.spans)
        self.hold.due()
        want_whole, want_spans = self.model.due(self.clock.now)
        assert Counter(self.whole[before_whole:]) == Counter(want_whole)
        assert Counter(carrier[0] for carrier in self.spans[before_spans:]) == Counter(want_spans)

    def went_once(self) -> bool:
        """Each span went exactly once: whole, alone or to the engine."""
        every = Counter(name for request in self.requests.values() for _, name in request.spans)
        went = Counter(name for data in self.whole for _, name in self.requests[data].spans)
        went.update(carrier[0] for carrier in self.spans)
        went.update(self.taken)
        return went == every


@pytest.mark.parametrize("seed", range(40))
def test_the_hold_releases_what_the_per_trace_rule_releases_at_the_same_steps(seed: int) -> None:
    rng = random.Random(seed)
    driver = _Driver(rng)
    pool = [bytes([seed, k]) * 8 for k in range(rng.choice((3, 8, 30)))]
    try:
        for step in range(200):
            action = rng.random()
            if action < 0.45:
                driver.send(pool, f"request {seed}/{step}".encode())
            elif action < 0.55:
                driver.take(pool)
            else:
                driver.advance()
            assert {trace_id for trace_id in pool if trace_id in driver.hold} == set(driver.model.traces), step
        driver.hold.flush()
        assert driver.hold.held_bytes == 0
        assert not any(trace_id in driver.hold for trace_id in pool)
    finally:
        driver.hold.close()
    assert driver.went_once()


def test_a_trace_in_two_requests_keeps_its_first_span_time_when_the_first_request_is_evicted() -> None:
    """Evicting the oldest request takes it out of its traces; a trace held in a later request too still goes
    `hold_ms` after its first span, not never."""
    clock = _Clock()
    whole: list[bytes] = []
    requests = {
        b"first": _Request(b"first", [(b"t" * 16, "a"), (b"u" * 16, "b")], set()),
        b"second": _Request(b"second" + b"x" * 100, [(b"t" * 16, "c")], set()),
    }
    hold = _Manual(
        settle_ms=SETTLE_NS / 1e6,
        hold_ms=HOLD_NS / 1e6,
        max_bytes=800,
        forward=lambda data, n: whole.append(data),
        release=lambda carriers: None,
        split=_split_of(requests),
        telemetry=Recording(),
        clock=clock,
    )
    try:
        hold.hold_request(b"first", {b"t" * 16: 1, b"u" * 16: 1}, set(), 2)
        clock.now = 10
        hold.hold_request(requests[b"second"].data, {b"t" * 16: 1}, set(), 1)
        assert whole == [b"first"]  # past max_bytes: the oldest went on whole, counted dropped
        assert b"t" * 16 in hold
        assert b"u" * 16 not in hold
        clock.now = HOLD_NS - 1
        hold.due()
        assert whole == [b"first"]
        clock.now = HOLD_NS  # hold_ms after the trace's first span, in the evicted request
        hold.due()
        assert whole == [b"first", requests[b"second"].data]
        assert hold.held_bytes == 0
    finally:
        hold.close()
