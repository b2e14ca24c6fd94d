"""Types of the compiled gate (`_gate.c`); `span_gate` builds it."""

from collections.abc import Callable, Iterator, Mapping

class SpanGate:
    def __init__(
        self,
        span_type: type,
        attributes_type: type,
        agent_ids: Mapping[int, None],
        stop_scopes: frozenset[str],
        keys: frozenset[str],
        passed: Callable[..., object],
        counted: Iterator[object],
        slow: Callable[..., None],
        failed: Callable[[BaseException], object],
    ) -> None: ...
    def __call__(self, *args: object, **kwargs: object) -> None: ...
