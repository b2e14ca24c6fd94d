from typing import Any

from toolscore.collector.spans import SpanEvent, SpanRecord

def configure(record: type[SpanRecord], event: type[SpanEvent], /) -> None: ...
def decode_spans(data: bytes | bytearray | memoryview, /) -> list[SpanRecord] | None: ...
def decode_span_entry(
    entry: bytes | bytearray | memoryview, resource: dict[str, Any], scope: str, /
) -> SpanRecord | None: ...
def plain_index(data: bytes | bytearray | memoryview, /) -> tuple[dict[bytes, int], set[bytes], int, int] | None: ...
def checked_table(
    data: bytes | bytearray | memoryview, keys: tuple[bytes, ...], scopes: tuple[bytes, ...], /
) -> tuple[list[tuple[int, int]], list[bytes], list[int], bytes, int] | None: ...
def request_index(
    data: bytes | bytearray | memoryview, keys: tuple[bytes, ...], scopes: tuple[bytes, ...], limit: int = ..., /
) -> (
    tuple[bool, tuple[dict[bytes, int], set[bytes], int, int]]
    | tuple[bool, tuple[list[tuple[int, int]], list[bytes], list[int], bytes, int]]
    | None
): ...
def span_table(
    data: bytes | bytearray | memoryview, keys: tuple[bytes, ...] = ..., scopes: tuple[bytes, ...] = ..., /
) -> tuple[list[tuple[int, int]], list[bytes]] | tuple[list[tuple[int, int]], list[bytes], list[int], bytes] | None: ...
def score_record(
    time_ns: int,
    severity: int,
    head: bytes,
    value: float,
    label: str,
    explanation: str,
    ids: bytes,
    name: bytes,
    /,
) -> bytes | None: ...
