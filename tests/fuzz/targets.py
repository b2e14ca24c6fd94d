"""One fuzz target per reader of untrusted bytes, and the files of tests/testdata that seed its corpus.

A target feeds the bytes to the reader and lets through only the reader's own refusal (`BadPayload`,
`SpanDecodeError`, `InvalidExpectation`): any other exception, a hang or a crash is a finding. The targets are
plain functions, so `tests/test_fuzz_targets.py` runs them on their seeds in `make test` (no atheris needed)
and they cannot rot between fuzzing sessions.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["TARGETS", "Target"]

TESTDATA = Path(__file__).resolve().parent.parent / "testdata"
_MAX_SPANS = 65536  # receiver.max_spans_per_request's default


def otlp_protobuf(data: bytes) -> None:
    """The OTLP/protobuf body as the receivers read it: the span count on the wire, the parse, the wire walk
    that locates a parse error, and the span entries the forwarder re-frames."""
    from toolscore.collector.serve._encode import span_entries
    from toolscore.collector.serve.receivers._otlp_export import BadPayload, parse_proto_request

    try:
        request = parse_proto_request(data, _MAX_SPANS)
    except BadPayload:
        return
    entries = span_entries(data)
    spans = sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
    assert entries is None or len(entries) == spans, (len(entries), spans)


def otlp_json(data: bytes) -> None:
    """The OTLP/JSON body as the HTTP receiver reads it, and as a trace file's JSON is read."""
    from toolscore.collector.serve.receivers._otlp_export import BadPayload
    from toolscore.collector.serve.receivers._otlp_json_request import request_from_json
    from toolscore.collector.sources.errors import SpanDecodeError
    from toolscore.collector.sources.otlp_json import spans_from_json_bytes

    with contextlib.suppress(BadPayload):
        request_from_json(data, _MAX_SPANS)
    with contextlib.suppress(SpanDecodeError):
        spans_from_json_bytes(data)


def wire_accel(data: bytes) -> None:
    """The compiled span decoder against the pure-Python path: the same records, or it leaves them to it; and
    `serve`'s compiled request walks (`plain_index`, `request_index`, `span_table`, `checked_table` and the carriers
    read from the bytes they validate) against the parsed request."""
    from toolscore.collector.serve._prefilter import PlainRequest, parsed_traces, span_offsets
    from toolscore.collector.sources._accel import load
    from toolscore.collector.sources.errors import SpanDecodeError
    from toolscore.collector.sources.otlp_proto import ids_ok, parse_trace_export, spans_from_request

    compiled = load({})
    if compiled is None:
        return
    fast = compiled.decode_spans(data)
    index = compiled.plain_index(data)
    checked = compiled.checked_table(data, *_markers())
    try:
        request = parse_trace_export(data)
    except SpanDecodeError as exc:
        answers = (("the compiled decoder", fast), ("plain_index", index), ("checked_table", checked))
        took = [name for name, answer in answers if answer is not None]
        if took:
            raise AssertionError(f"{' and '.join(took)} took bytes the pure path refuses: {exc}") from None
        return
    if fast is not None:
        assert repr(fast) == repr(spans_from_request(request))  # repr: a NaN equals a NaN
    if index is not None:
        assert PlainRequest(*index) == parsed_traces(request)
        markers = _markers()
        shows = any(
            (ss.scope.name.encode() in markers[1] and ss.spans)
            or any(kv.key.encode() in markers[0] for s in ss.spans for kv in s.attributes)
            for rs in request.resource_spans
            for ss in rs.scope_spans
        )
        read = compiled.request_index(data, *markers)
        assert read is not None
        assert read == ((True, checked) if shows else (False, index))
    table = compiled.span_table(data)
    if table is not None:
        spans = [(ss.scope.name, span) for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]
        assert table == (span_offsets(data), [span.trace_id for _, span in spans])
        keys, scopes = _markers()
        offsets, ids, marked, flags = compiled.span_table(data, keys, scopes)
        assert (offsets, ids) == table
        shows = {
            i
            for i, (scope, span) in enumerate(spans)
            if scope.encode() in scopes or any(kv.key.encode() in keys for kv in span.attributes)
        }
        assert shows <= set(marked)  # a superset where fields repeat (the runtime merges them)
        assert list(flags) == [(0 if span.parent_span_id else 1) | (2 if ids_ok(span) else 0) for _, span in spans]
    assert (checked is None) == (index is None)
    if checked is not None:
        _check_walked(compiled, data, request, checked, index)


def equal_accel(data: bytes) -> None:
    """The scorers' compiled JSON equality and flexible-mode key against the pure-Python functions, on JSON
    documents read from the bytes (split at the first NUL: two documents; and the first read again with its
    integers as floats, a look-alike): the same answers, or the same exception."""
    import json

    from tests.accel_checks import outcome
    from toolscore.scorers._accel import load
    from toolscore.scorers._json_equality import python_json_equal
    from toolscore.scorers._trajectory_evalite import python_freeze

    compiled = load({})
    assert compiled is not None, "the install did not build scorers/_equal.c"
    first, _, second = data.partition(b"\0")
    try:
        docs = [json.loads(first), json.loads(second or first), json.loads(first, parse_int=float)]
    except (ValueError, RecursionError):
        return
    for a in docs:
        assert outcome(compiled.freeze, a) == outcome(python_freeze, a)
        for b in docs:
            assert outcome(compiled.json_equal, a, b) == outcome(python_json_equal, a, b)


def _check_walked(compiled: Any, data: bytes, request: Any, checked: tuple[Any, ...], index: tuple[Any, ...]) -> None:
    """`checked_table` reads as `span_table` does, and every span's carrier read from the bytes is the parsed one
    (`compiled`: the module, loaded whatever `TOOLSCORE_PURE_PYTHON` says, as `make test-oldest` sets it)."""
    from toolscore.collector.serve._carrier import decode_carrier
    from toolscore.collector.serve._prefilter import SpanPlan
    from toolscore.collector.serve._walked import bytes_carriers, parsed_carriers

    *table, blocks = checked
    assert tuple(table) == compiled.span_table(data, *_markers())
    assert blocks == index[3]
    offsets, ids, _, flags = table
    plan = SpanPlan([True] * len(ids), offsets, ids, flags)

    def view(carrier: Any) -> tuple[Any, ...]:
        _, block, entry = carrier
        scope, resource = block.message, block.resource.message
        record = repr(decode_carrier(carrier))  # repr: a NaN equals a NaN
        return (record, bytes(entry), scope.scope, scope.schema_url, resource.resource, resource.schema_url)

    assert [view(c) for c in bytes_carriers(data, plan)] == [view(c) for c in parsed_carriers(request, data, plan)]


@functools.cache
def _markers() -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    """The pre-filter's markers as the compiled walks take them."""
    from toolscore.collector.pipeline.markers import convention_markers

    markers = convention_markers()
    assert markers is not None
    return tuple(k.encode() for k in markers.keys), tuple(s.encode() for s in markers.scopes)


@functools.cache
def _files() -> Path:
    """A directory for the file target's inputs, made on first use and removed at exit."""
    path = Path(tempfile.mkdtemp(prefix="toolscore-fuzz-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def expectation_file(data: bytes) -> None:
    """An expectation file (YAML or JSON) as `toolscore expectations apply` and `registry.files` read it."""
    from toolscore.collector.registry import InvalidExpectation
    from toolscore.collector.registry._files import load_file

    path = _files() / f"{os.getpid()}.yaml"
    path.write_bytes(data)
    with contextlib.suppress(InvalidExpectation):
        load_file(path)


@dataclass(frozen=True)
class Target:
    name: str
    run: Callable[[bytes], None]
    seeds: Callable[[], list[Path]]


def _glob(*patterns: str) -> Callable[[], list[Path]]:
    return lambda: sorted(p for pattern in patterns for p in TESTDATA.glob(pattern) if p.is_file())


TARGETS = {
    t.name: t
    for t in (
        Target("otlp_protobuf", otlp_protobuf, _glob("traces/*/*.pb", "serve/**/*.pb")),
        Target("wire_accel", wire_accel, _glob("traces/*/*.pb", "serve/**/*.pb")),
        Target("otlp_json", otlp_json, _glob("traces/*/*.json", "serve/**/*.json")),
        Target("equal_accel", equal_accel, _glob("truth/*/*.json", "traces/*/*.json")),
        Target(
            "expectation_file",
            expectation_file,
            _glob("registry/**/*.yaml", "registry/**/*.json", "cli_expectations/**/*.yaml"),
        ),
    )
}
