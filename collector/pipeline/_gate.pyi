"""Types of the compiled gate and span decoder (`_gate.c`); `span_gate` and `span_decoder` build them."""

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

def configure_decoder(
    span_type: type,
    context_type: type,
    attributes_type: type,
    record_type: type,
    kinds: tuple[object, ...],
    statuses: tuple[object, ...],
    resource_attributes: Callable[[object], object],
    fallback: Callable[[object], object],
    /,
) -> None: ...
def decode_readable(span: object, /) -> object: ...
