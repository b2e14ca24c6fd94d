"""The compiled gate (`pipeline.span_gate`) passes on exactly the spans the Python `on_end` passes on unread.

The gate is held to the Python decision on every capture's spans (as the SDK hands them to processors), the
mixed load's HTTP and database spans, and spans of every odd shape (attributes not frozen, not the SDK's type,
no context, a str subclass for a key, a key that is not a str). Whatever it does not pass on it hands to the
Python `on_end` once, with the call as it came. It runs under `make test-oldest` too: the tests ask for it
with an empty environment, so `TOOLSCORE_PURE_PYTHON` does not turn it off here (the test installs build it;
`tests/test_packaging.py` checks that a machine without a compiler still installs, without it).
"""

from __future__ import annotations

import gc
import logging
import random
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, set_span_in_context

from tests.bench.mixed import generated_spans
from tests.pipeline_builders import Recording, registry_with, run_attrs
from tests.test_prefilter import CAPTURES, TRAVEL
from toolscore.collector.pipeline import PipelineConfig, ToolscoreSpanProcessor
from toolscore.collector.pipeline._gate import SpanGate  # the test installs build it (make test, make test-oldest)
from toolscore.collector.pipeline.markers import convention_markers
from toolscore.collector.pipeline.span_gate import span_gate
from toolscore.collector.registry import Registry
from toolscore.collector.sources import read_trace_file
from toolscore.collector.spans import SpanRecord
from toolscore.scorers._accel import PURE_PYTHON_ENV
from toolscore.scorers._llm_judge_trace import JUDGE_SCOPE

MARKERS = convention_markers()
assert MARKERS is not None


def test_the_test_install_builds_the_gate() -> None:
    assert span_gate(**_BASE, agent_ids={}, environ={}) is not None


class _Count:
    """An iterator counting how often it is advanced, as the intake's skip count is."""

    def __init__(self) -> None:
        self.value = 0

    def __iter__(self) -> _Count:
        return self

    def __next__(self) -> int:
        self.value += 1
        return self.value


_BASE: dict[str, Any] = {
    "markers": MARKERS,
    "stop_scopes": frozenset(),
    "passed": print,
    "counted": _Count(),
    "slow": print,
    "failed": print,
}


class _Routes:
    """The gate's four callables, recording what reached each."""

    def __init__(self, agent_ids: dict[int, None] | None = None) -> None:
        self.passed: list[Any] = []
        self.slow: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.counts = _Count()
        self.failures: list[BaseException] = []
        self.agent_ids: dict[int, None] = {} if agent_ids is None else agent_ids
        gate = span_gate(
            agent_ids=self.agent_ids,
            markers=MARKERS,
            stop_scopes=frozenset({JUDGE_SCOPE}),
            passed=self.passed.append,
            counted=self.counts,
            slow=self.decide,
            failed=self.failures.append,
            environ={},
        )
        assert gate is not None
        self.gate = gate

    @property
    def counted(self) -> int:
        return self.counts.value

    def decide(self, *args: Any, **kwargs: Any) -> None:
        self.slow.append((args, kwargs))


def _plain_by_python(span: ReadableSpan, agent_ids: dict[int, None]) -> bool:
    """The Python `on_end`'s decision, spelled out: no agent trace, not the judge's scope, no marker."""
    context, scope = span.context, span.instrumentation_scope
    name = scope.name if scope is not None else None
    if context is None or context.trace_id in agent_ids or name == JUDGE_SCOPE:
        return False
    return not MARKERS.marks(name, span.attributes or {})


def _readable(record: SpanRecord) -> ReadableSpan:
    """The span as `Span.end` hands it to processors: a `ReadableSpan` with the SDK's frozen attributes."""
    context = SpanContext(int(record.trace_id, 16), int(record.span_id, 16), is_remote=False)
    attributes = BoundedAttributes(attributes=_sdk_values(record.attributes), immutable=True)
    return ReadableSpan(
        record.name, context, attributes=attributes, instrumentation_scope=InstrumentationScope(record.scope)
    )


def _sdk_values(attributes: dict[str, Any]) -> dict[str, Any]:
    """The values the SDK keeps (it drops maps and mixed lists); the keys are what the gate reads."""
    return {key: _sdk_value(value) for key, value in attributes.items()}


def _sdk_value(value: Any) -> Any:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return "kept as a string" if value is None or isinstance(value, (dict, list)) else value


def _odd_spans() -> list[Any]:
    ctx = SpanContext(0xABC, 0xDEF, is_remote=False)
    scope = InstrumentationScope("opentelemetry.instrumentation.httpx")
    frozen = BoundedAttributes(attributes={"http.request.method": "GET"}, immutable=True)

    class Key(str):
        armed = False

        def __hash__(self) -> int:
            if Key.armed:
                raise AssertionError("no Python code may run while the gate walks a dict")
            return str.__hash__(self)

        def __eq__(self, other: object) -> bool:
            if Key.armed:
                raise AssertionError("no Python code may run while the gate walks a dict")
            return str.__eq__(self, other)

    hostile = BoundedAttributes(attributes={"http.route": "/"}, immutable=True)
    hostile._dict[Key("gen_ai.system")] = "openai"
    Key.armed = True
    not_str = BoundedAttributes(attributes={"http.route": "/"}, immutable=True)
    not_str._dict[7] = "seven"

    class OwnSpan(ReadableSpan):
        pass

    return [
        ReadableSpan("plain", ctx, attributes=frozen, instrumentation_scope=scope),
        ReadableSpan("no scope", ctx, attributes=frozen),
        ReadableSpan("no attributes", ctx, instrumentation_scope=scope),
        ReadableSpan("dict attributes", ctx, attributes={"http.route": "/"}, instrumentation_scope=scope),
        ReadableSpan("marked dict", ctx, attributes={"gen_ai.system": "x"}, instrumentation_scope=scope),
        ReadableSpan(
            "mutable",
            ctx,
            attributes=BoundedAttributes(attributes={"a": 1}, immutable=False),
            instrumentation_scope=scope,
        ),
        ReadableSpan("no context", None, attributes=frozen, instrumentation_scope=scope),
        ReadableSpan("hostile key", ctx, attributes=hostile, instrumentation_scope=scope),
        ReadableSpan("int key", ctx, attributes=not_str, instrumentation_scope=scope),
        ReadableSpan("judge", ctx, attributes=frozen, instrumentation_scope=InstrumentationScope(JUDGE_SCOPE)),
        ReadableSpan("marker scope", ctx, attributes=frozen, instrumentation_scope=InstrumentationScope("gen_ai")),
        ReadableSpan("marker key", ctx, attributes=BoundedAttributes(attributes=run_attrs("t"), immutable=True)),
        OwnSpan("subclass", ctx, attributes=frozen, instrumentation_scope=scope),
        "not a span at all",
    ]


def _battery() -> list[Any]:
    spans = [_readable(record) for capture in CAPTURES for record in read_trace_file(capture)]
    mixed, _ = generated_spans(0.1, 2_000)
    return spans + list(mixed) + _odd_spans()


def _sure(span: object) -> bool:
    """Whether the gate decides `span` itself: the SDK's own type and attributes with exact-str keys."""
    if type(span) is not ReadableSpan:
        return False
    held = span._attributes
    return type(held) is BoundedAttributes and all(type(key) is str for key in held._dict)


def test_the_gate_passes_on_exactly_what_the_python_decision_passes_on() -> None:
    battery = _battery()
    routes = _Routes()
    for span in battery[::7]:  # some traces are agent traces already
        if isinstance(span, ReadableSpan) and span.context is not None:
            routes.agent_ids[span.context.trace_id] = None
    expected = [span for span in battery if _sure(span) and _plain_by_python(span, routes.agent_ids)]
    for span in battery:
        assert routes.gate(span) is None
    assert routes.passed == expected
    assert routes.counted == len(expected)
    rest = [span for span in battery if not any(span is kept for kept in expected)]
    assert [args for args, _ in routes.slow] == [(span,) for span in rest]  # each once, in order, as called
    assert len(expected) > 300  # both ways taken often
    assert len(rest) > 300
    assert not routes.failures


def _random_span(rng: random.Random, trace_ids: list[int]) -> ReadableSpan:
    """A span whose keys and scope come near the markers: marker keys, their prefixes and extensions, look-alikes
    of the same length and first letter, non-ASCII keys, the empty key; scopes likewise."""
    markers = sorted(MARKERS.keys)
    near = [*markers, *(k[:-1] for k in markers), *(k + "x" for k in markers), *(k.upper() for k in markers)]
    near += ["g" * len(markers[0]), "http.route", "db.system.name", "é" + markers[0][1:], "ключ", "", "gen_ai"]
    keys = rng.sample(near, rng.randint(0, 8)) if rng.random() < 0.7 else []
    scopes = [*sorted(MARKERS.scopes), JUDGE_SCOPE, "opentelemetry.instrumentation.httpx", "gen_ai.", "GEN_AI", ""]
    scope = None if rng.random() < 0.1 else InstrumentationScope(rng.choice(scopes))
    context = SpanContext(rng.choice(trace_ids), rng.getrandbits(64) or 1, is_remote=False)
    attributes = BoundedAttributes(attributes={key: rng.choice(["v", 1, 2.5, True, ("a", "b")]) for key in keys})
    return ReadableSpan("random", context, attributes=attributes, instrumentation_scope=scope)


@pytest.mark.parametrize("seed", range(5))
def test_random_spans_near_the_markers_are_decided_as_python_decides_them(seed: int) -> None:
    rng = random.Random(seed)
    trace_ids = [rng.getrandbits(128) or 1 for _ in range(20)]
    routes = _Routes(dict.fromkeys(trace_ids[:5]))
    spans = [_random_span(rng, trace_ids) for _ in range(600)]
    for span in spans:
        routes.gate(span)
    expected = [span for span in spans if _plain_by_python(span, routes.agent_ids)]
    assert routes.passed == expected
    assert [args[0] for args, _ in routes.slow] == [span for span in spans if not any(span is e for e in expected)]
    assert 30 < len(expected) < 550  # both ways taken (each new marker makes a random span plain less often)


def test_a_span_the_gate_leaves_would_not_always_be_plain_but_one_it_passes_always_is() -> None:
    """The shapes the gate leaves to Python: some are plain by the Python decision, none it passes is marked."""
    routes = _Routes()
    odd = _odd_spans()
    for span in odd:
        routes.gate(span)
    assert [span.name for span in routes.passed] == ["plain", "no scope", "mutable"]
    left = {args[0].name if isinstance(args[0], ReadableSpan) else args[0] for args, _ in routes.slow}
    assert {"dict attributes", "no attributes", "int key", "subclass"} <= left  # plain, but not sure
    assert {"hostile key", "judge", "marker scope", "marker key", "marked dict", "no context"} <= left


def test_a_trace_becomes_an_agent_trace_for_the_gate_the_moment_it_is_added() -> None:
    routes = _Routes()
    span = _odd_spans()[0]
    routes.gate(span)
    routes.agent_ids[span.context.trace_id] = None
    routes.gate(span)
    assert routes.passed == [span]
    assert routes.slow == [((span,), {})]


def test_calls_of_another_shape_go_to_python_as_they_came() -> None:
    routes = _Routes()
    span = _odd_spans()[0]
    routes.gate(span, "extra")
    routes.gate(span=span)
    routes.gate()
    assert routes.slow == [((span, "extra"), {}), ((), {"span": span}), ((), {})]
    assert not routes.passed


class _BrokenCount(_Count):
    def __next__(self) -> int:
        raise ValueError("the count broke")


@pytest.mark.parametrize("where", ["passed", "counted"])
def test_an_exception_from_next_goes_to_failed_and_the_application_never_sees_it(where: str) -> None:
    routes = _Routes()
    errors: list[Exception] = []

    def broken(span: object) -> None:
        errors.append(ValueError("next broke"))
        raise errors[-1]

    gate = span_gate(
        agent_ids={},
        markers=MARKERS,
        stop_scopes=frozenset(),
        passed=broken if where == "passed" else routes.passed.append,
        counted=_BrokenCount() if where == "counted" else routes.counts,
        slow=routes.decide,
        failed=routes.failures.append,
        environ={},
    )
    assert gate is not None
    assert gate(_odd_spans()[0]) is None
    (failure,) = routes.failures
    assert str(failure) == ("next broke" if where == "passed" else "the count broke")
    assert failure.__traceback__ is not None  # logged with where it was raised
    assert not routes.slow  # not passed a second time by the Python path
    assert not routes.passed


def test_keyboard_interrupt_from_next_is_not_swallowed() -> None:
    def interrupted(span: object) -> None:
        raise KeyboardInterrupt

    gate = span_gate(
        agent_ids={},
        markers=MARKERS,
        stop_scopes=frozenset(),
        passed=interrupted,
        counted=_Count(),
        slow=lambda span: None,
        failed=lambda exc: None,
        environ={},
    )
    assert gate is not None
    with pytest.raises(KeyboardInterrupt):
        gate(_odd_spans()[0])


def test_the_gate_refuses_arguments_of_the_wrong_kind() -> None:
    args: list[Any] = [
        ReadableSpan,
        BoundedAttributes,
        {},
        frozenset(),
        frozenset({"k"}),
        print,
        _Count(),
        print,
        print,
    ]
    SpanGate(*args)
    wrongs = ((2, []), (3, set()), (4, ["k"]), (4, frozenset({1})), (0, "type"), (5, "x"), (6, print), (8, None))
    for index, wrong in wrongs:
        bad = list(args)
        bad[index] = wrong
        with pytest.raises(TypeError):
            SpanGate(*bad)


def test_the_environment_or_a_mapping_of_another_kind_turns_the_gate_off() -> None:
    assert span_gate(**_BASE, agent_ids={}, environ={PURE_PYTHON_ENV: "1"}) is None
    assert span_gate(**_BASE, agent_ids={}, environ={PURE_PYTHON_ENV: "0"}) is not None
    assert span_gate(**_BASE, agent_ids=weakref.WeakValueDictionary(), environ={}) is None


class _Next(SpanProcessor):
    def __init__(self) -> None:
        self.ended: list[ReadableSpan] = []
        self.started = 0

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.started += 1

    def on_end(self, span: ReadableSpan) -> None:
        self.ended.append(span)


@pytest.fixture
def registry() -> Iterator[Registry]:
    with registry_with(TRAVEL) as held:
        yield held


def _processor(
    monkeypatch: pytest.MonkeyPatch, registry: Registry, gated: bool, **config: Any
) -> tuple[ToolscoreSpanProcessor, _Next, Recording]:
    monkeypatch.delenv(PURE_PYTHON_ENV, raising=False)
    if not gated:
        monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    nxt, telemetry = _Next(), Recording()
    processor = ToolscoreSpanProcessor(registry, nxt, PipelineConfig(**config), telemetry)
    return processor, nxt, telemetry


def test_the_processor_with_its_gate_passes_on_and_counts_what_it_does_without_it(
    monkeypatch: pytest.MonkeyPatch, registry: Registry
) -> None:
    battery = [span for span in _battery() if isinstance(span, ReadableSpan) and span.name != "hostile key"]
    seen = {}
    for gated in (True, False):
        # nothing settles or is refused before shutdown scores it all: the two passes cannot differ in timing
        processor, nxt, telemetry = _processor(
            monkeypatch, registry, gated, settle_ms=60_000, max_hold_ms=60_000, queue_size=10_000
        )
        assert ("on_end" in vars(processor)) is gated
        for span in battery:
            processor.on_end(span)
        processor.shutdown()
        unchanged = {id(span) for span in nxt.ended} & {id(span) for span in battery}
        seen[gated] = (unchanged, len(nxt.ended), dict(telemetry.counts), dict(telemetry.outcomes))
    assert seen[True] == seen[False]
    assert len(seen[True][0]) > 1_000


def test_the_gate_is_not_installed_where_it_would_change_behaviour(
    monkeypatch: pytest.MonkeyPatch, registry: Registry
) -> None:
    unfiltered, _, _ = _processor(monkeypatch, registry, True, prefilter=False)
    assert "on_end" not in vars(unfiltered)
    unfiltered.shutdown()

    class Overriding(ToolscoreSpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            super().on_end(span)

    overriding = Overriding(registry, _Next(), PipelineConfig(), Recording())
    assert "on_end" not in vars(overriding)
    assert "on_start" in vars(overriding)  # not overridden: still next's own
    overriding.shutdown()


def test_after_shutdown_every_span_goes_straight_on_uncounted(
    monkeypatch: pytest.MonkeyPatch, registry: Registry
) -> None:
    processor, nxt, telemetry = _processor(monkeypatch, registry, True)
    processor.shutdown()
    assert "on_end" not in vars(processor)
    span = _odd_spans()[0]
    processor.on_end(span)
    assert nxt.ended == [span]
    assert telemetry.counts.get("received", 0) == 0


def test_on_start_is_nexts_own(monkeypatch: pytest.MonkeyPatch, registry: Registry) -> None:
    processor, nxt, _ = _processor(monkeypatch, registry, True)
    processor.on_start(_odd_spans()[0])  # type: ignore[arg-type]
    assert nxt.started == 1
    assert processor.on_start == nxt.on_start
    processor.shutdown()


def test_a_failing_next_is_logged_not_raised(
    monkeypatch: pytest.MonkeyPatch, registry: Registry, caplog: pytest.LogCaptureFixture
) -> None:
    class Failing(_Next):
        def on_end(self, span: ReadableSpan) -> None:
            raise RuntimeError("exporter queue broke")

    monkeypatch.delenv(PURE_PYTHON_ENV, raising=False)
    processor = ToolscoreSpanProcessor(registry, Failing(), PipelineConfig(), Recording())
    assert "on_end" in vars(processor)
    with caplog.at_level(logging.ERROR, logger="toolscore.pipeline"):
        processor.on_end(_odd_spans()[0])
    assert "failed on span end" in caplog.text
    assert "exporter queue broke" in caplog.text
    processor.shutdown()


def test_a_dropped_processor_with_its_gate_is_collected(monkeypatch: pytest.MonkeyPatch, registry: Registry) -> None:
    processor, _, _ = _processor(monkeypatch, registry, True)
    processor.engine.shutdown(5)  # the worker stopped; the gate stays installed: it and its processor form a cycle
    assert "on_end" in vars(processor)
    ref = weakref.ref(processor)
    del processor
    gc.collect()
    assert ref() is None


def test_the_gate_runs_from_the_sdk(monkeypatch: pytest.MonkeyPatch, registry: Registry) -> None:
    """Through a real provider: the plain spans reach `next` from the gate, the run's span through Python."""
    decided: list[str] = []
    python_on_end = ToolscoreSpanProcessor.on_end

    def recorded(self: ToolscoreSpanProcessor, span: ReadableSpan) -> None:
        decided.append(span.name)
        python_on_end(self, span)

    monkeypatch.setattr(ToolscoreSpanProcessor, "on_end", recorded)
    processor, nxt, telemetry = _processor(monkeypatch, registry, True, settle_ms=5)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    provider.get_tracer("opentelemetry.instrumentation.fastapi").start_span("GET /health").end()
    agent = provider.get_tracer("agent-app")
    run = agent.start_span("invoke_agent travel", attributes=run_attrs("travel"))
    agent.start_span("SELECT", set_span_in_context(run), attributes={"db.system.name": "x"}).end()
    run.end()
    assert processor.force_flush(5_000)
    provider.shutdown()
    assert decided == ["invoke_agent travel"]  # the health check and the SELECT, which ended first: the gate's
    assert sorted(span.name for span in nxt.ended) == ["GET /health", "SELECT", "invoke_agent travel"]
    assert telemetry.counts["received"] == telemetry.counts["passed"] == 3
    # nothing an agent convention knows is under the run (no model response): it is flagged, not scored
    assert telemetry.outcomes == {"incomplete": 1}
