"""The order in which the model issued a run's tool calls.

Rule: a run's calls are sorted by

1. the start of their *batch*: the calls one model response issued together, when the trace records
   that response (an LLM span listing its tool calls), start when the first of their tool spans starts;
   a batch with no tool span at all (its calls are known only from the response, see `model_calls`)
   starts when its model span ends, when the response was complete; a call whose response is not
   recorded is a batch of its own, starting at its own start time;
2. the call's position in that model response (the model's order, which start times cannot give:
   parallel calls start in the same millisecond, or in whatever order the executor picked);
3. the call's own start time;
4. the call id, then the span id (a stable order for calls nothing else tells apart).

A tool span is tied to the response that issued it by call id (the latest response that started
before it and lists that id, since ids can repeat across responses); a tool span without one
(OpenInference records none) is tied to the latest response of the same run that started before it
and lists an unclaimed call with the same name and equal arguments, else (for arguments the tool bound itself,
`ToolRead.args_parsed`: MLflow's `@mlflow.trace` fills in the function's defaults) arguments the tool's hold, else
the same name; a handoff
span (no tool name) takes the first unclaimed call of that response.

Each call also gets the model message that issued it (`ToolCall.message_index`, see `message_indices`):
the number of the run's model responses that started at or before its response (the one it is tied to)
or, untied, before the call itself. An agent loop runs a response's calls before it asks the model again,
so the calls between two responses are the earlier one's, whether they ran in parallel or one by one;
no response has to be read for it. Parallel calls of one response then share a message, as agentevals'
strict mode needs (the calls inside one message are a set). A run with no model span states no message.

Model responses are read for the order only when they can change it (they are read anyway, once,
for the calls no tool span recorded: see `model_calls`): when two of the run's calls
overlap in time or start together, or a call lacks its call id, its name (handoffs) or JSON
arguments (LangChain records a one-parameter tool's bare value). Calls that ran strictly one after
another were issued in that order (a framework cannot start a call the model has not issued yet),
so their start times already give rule 1-3.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolscore.collector.extract.conventions.base import NOT_CAPTURED, IssuedCall, ToolRead
from toolscore.collector.extract.conventions.common import load_json
from toolscore.collector.spans import SpanRecord

__all__ = [
    "IssuedBatch",
    "PendingCall",
    "batch_order",
    "in_start_order",
    "message_indices",
    "needs_model_responses",
    "order_calls",
    "same_tool_name",
    "sort_tied",
    "tie_calls",
]


@dataclass(slots=True)
class PendingCall:
    """A tool span of one run, waiting to be ordered."""

    span: SpanRecord
    read: ToolRead
    issued: IssuedCall | None = None
    batch: str | None = None
    index: int = 0
    model_only: bool = False
    """No tool span recorded the call: `span` is the model span whose response issued it (see `model_calls`)."""


@dataclass(slots=True)
class IssuedBatch:
    """The tool calls one model response (LLM span) of the run issued, in the model's order."""

    span: SpanRecord
    calls: list[IssuedCall]
    output_tools: frozenset[str] = frozenset()
    """See `IssuedCalls.output_tools`."""


def _span_order(span: SpanRecord) -> tuple[int, str]:
    return span.start_ns, span.span_id


def batch_order(batch: IssuedBatch) -> tuple[int, str]:
    return batch.span.start_ns, batch.span.span_id


def _unissued_order(call: PendingCall) -> tuple[float, int, int, str, str]:
    start = call.span.start_ns
    return start, 0, start, call.read.call_id or "", call.span.span_id


def _claim(call: PendingCall, batch: IssuedBatch, index: int, used: set[tuple[str, int]]) -> None:
    used.add((batch.span.span_id, index))
    call.issued, call.batch, call.index = batch.calls[index], batch.span.span_id, index


def _match_by_id(pending: list[PendingCall], batches: list[IssuedBatch], used: set[tuple[str, int]]) -> None:
    """Tie each call to a response listing its id: the latest that started before it, else the first free.

    Ids repeat across responses (providers that number calls per response, `call_0`, ...; a call run
    twice), so the first response listing an id is not enough. Calls claim in start order, not arrival
    order, so that the same spans always give the same ties.

    A call whose id only a response already claimed, one that started before it, is that call run again (a
    retry middleware runs the tool once more for the same call: LangChain's `ToolRetryMiddleware`): it is tied
    to the same issued call, as a call of its own, since the tool ran again.
    """
    by_id: dict[str, list[tuple[IssuedBatch, int]]] = {}
    for batch in batches:  # in start order
        for index, issued in enumerate(batch.calls):
            if issued.call_id is not None:
                by_id.setdefault(issued.call_id, []).append((batch, index))
    for call in sorted(pending, key=lambda c: _span_order(c.span)):
        slots = by_id.get(call.read.call_id) if call.read.call_id else None
        if not slots:
            continue
        free = [(b, i) for b, i in slots if (b.span.span_id, i) not in used]
        before = [(b, i) for b, i in free if b.span.start_ns <= call.span.start_ns]
        if before or free:
            batch, index = before[-1] if before else free[0]
            _claim(call, batch, index, used)
        elif again := [(b, i) for b, i in slots if b.span.start_ns <= call.span.start_ns]:
            _claim(call, *again[-1], used)


def _sanitized(name: str) -> str:
    return "_".join("".join(c if c.isalnum() else " " for c in name.lower()).split())


def same_tool_name(issued: str | None, recorded: str | None) -> bool:
    """Whether a model's call names the tool a tool span records: the same name, or the same once both are
    lower-cased with every run of other characters made one `_` (CrewAI offers the model `delegate_work_to_coworker`
    for its tool `Delegate work to coworker`: providers allow only `[a-zA-Z0-9_-]` in tool names)."""
    if issued == recorded:
        return True
    return issued is not None and recorded is not None and _sanitized(issued) == _sanitized(recorded)


def _same_args(a: Any, b: Any) -> bool:
    """Equal as JSON values; arguments nested too deeply for `==` (it recurses) count as different."""
    if a is None or b is None:
        return False
    try:
        return bool(load_json(a) == load_json(b))
    except RecursionError:  # arguments decode up to 1,024 levels deep (orjson), past the recursion limit
        return False


def _args_within(issued: Any, parsed: Any) -> bool:
    """Whether every argument the model gave has the same value in the arguments the tool received: a tool whose
    span records its arguments after binding them (`ToolRead.args_parsed`: MLflow's `@mlflow.trace` fills in the
    function's defaults) holds the model's arguments and its own defaults."""
    if issued is None or parsed is None:
        return False
    try:
        given, received = load_json(issued), load_json(parsed)
        return (
            isinstance(given, dict)
            and isinstance(received, dict)
            and all(key in received and received[key] == value for key, value in given.items())
        )
    except RecursionError:
        return False


def _find(call: PendingCall, batch: IssuedBatch, used: set[tuple[str, int]]) -> int | None:
    free = [i for i in range(len(batch.calls)) if (batch.span.span_id, i) not in used]
    if call.read.handoff:
        return free[0] if free else None
    named = [i for i in free if same_tool_name(batch.calls[i].name, call.read.name)]
    for index in named:
        if _same_args(batch.calls[index].args, call.read.args):
            return index
    if call.read.args_parsed:
        for index in named:
            if _args_within(batch.calls[index].args, call.read.args):
                return index
    return named[0] if named else None


def _match_by_content(pending: list[PendingCall], batches: list[IssuedBatch], used: set[tuple[str, int]]) -> None:
    """Tie each call without an id to the latest response before it listing a free call of its name (its arguments
    first); then a call still untied to an issued call already claimed with the same name and arguments, in the
    latest response before it: that call run again (a retry middleware's attempt, see `_match_by_id`)."""
    unmatched = [c for c in pending if c.batch is None and not c.read.call_id]
    unmatched.sort(key=lambda c: (c.read.handoff, *_span_order(c.span)))
    latest_first = sorted(batches, key=batch_order, reverse=True)
    for call in unmatched:
        for batch in latest_first:
            if batch.span.start_ns > call.span.start_ns:
                continue
            index = _find(call, batch, used)
            if index is not None:
                _claim(call, batch, index, used)
                break
    for call in unmatched:
        if call.batch is not None or call.read.handoff:
            continue
        for batch in latest_first:
            if batch.span.start_ns > call.span.start_ns:
                continue
            again = [
                i
                for i, issued in enumerate(batch.calls)
                if issued.name == call.read.name and _same_args(issued.args, call.read.args)
            ]
            if again:
                _claim(call, batch, again[0], used)
                break


def _incomplete(read: ToolRead) -> bool:
    """Whether the model response may hold what the tool span lacks: call id, name, JSON arguments, or the
    model's own arguments for arguments the tool's schema parsed (`ToolRead.args_parsed`)."""
    args = read.args
    if args is NOT_CAPTURED or not read.call_id or read.handoff or read.args_parsed:
        return True
    if not isinstance(args, str) or args[:1] in ("{", "["):
        return False
    return args.lstrip()[:1] not in ("{", "[")


def in_start_order(pending: list[PendingCall]) -> list[PendingCall]:
    """The calls by start time (rules 1 and 3 when no model response is read), ties by call id and span id."""
    return sorted(pending, key=_unissued_order)


def needs_model_responses(calls: list[PendingCall]) -> bool:
    """Whether the run's model responses could change its calls: their order or their missing values.

    `calls` are `in_start_order`: two calls overlap exactly when one starts before its predecessor ends
    or with it (equal starts compare so whatever broke their tie).
    """
    previous: SpanRecord | None = None
    for call in calls:
        read = call.read
        # `_incomplete`'s usual answer, inlined: JSON text arguments (not parsed ones), a call id, no handoff
        args = read.args
        plain = not (read.handoff or read.args_parsed)
        complete = plain and args.__class__ is str and args[:1] in ("{", "[") and read.call_id
        if not complete and _incomplete(read):
            return True
        span = call.span
        if previous is not None and (span.start_ns <= previous.start_ns or span.start_ns < previous.end_ns):
            return True
        previous = span
    return False


def tie_calls(pending: list[PendingCall], batches: list[IssuedBatch]) -> set[tuple[str, int]]:
    """Tie each call to the response that issued it (see the module docstring); the (model span id, position)
    of every issued call some call claimed. `batches` are in start order (`batch_order`)."""
    used: set[tuple[str, int]] = set()
    _match_by_id(pending, batches, used)
    _match_by_content(pending, batches, used)
    return used


def sort_tied(pending: list[PendingCall], models: Sequence[SpanRecord] = ()) -> list[PendingCall]:
    """Calls already tied (`tie_calls`), model-only calls among them, in issue order (rules 1-4).

    A batch no tool span ran starts when its response was complete: its model span's end, or the start of the run's
    next model span (`models`: the run's responses) when that is earlier. The next request is sent once the response
    is in, so its start bounds the response's completion where the span's own end does not: OpenLIT's LangChain chat
    span under an async graph ends with the agent's root chain, not at `on_llm_end` (which fails to reset its
    context token there and leaves the span to the parent's clean-up).
    """
    batch_start: dict[str, float] = {}
    for call in pending:
        if call.batch is not None and not call.model_only:
            batch_start[call.batch] = min(batch_start.get(call.batch, math.inf), call.span.start_ns)
    starts = sorted(span.start_ns for span in models)

    def complete(span: SpanRecord) -> float:
        found = bisect_right(starts, span.start_ns)
        return min(span.end_ns, starts[found]) if found < len(starts) else span.end_ns

    def key(call: PendingCall) -> tuple[float, int, int, str, str]:
        if call.batch is None:
            start: float = call.span.start_ns
        else:  # a batch no tool span ran starts when its response was complete (see above)
            start = batch_start.get(call.batch, complete(call.span))
        call_id = call.read.call_id or (call.issued.call_id if call.issued else None) or ""
        return start, call.index, call.span.start_ns, call_id, "" if call.model_only else call.span.span_id

    return sorted(pending, key=key)


def order_calls(pending: list[PendingCall], batches: list[IssuedBatch]) -> list[PendingCall]:
    """The run's calls in issue order (see the module docstring), each tied to its issuing response."""
    if not batches:  # every call is a batch of its own: rules 1 and 3 are its start, rule 2 is 0
        return in_start_order(pending)
    tie_calls(pending, sorted(batches, key=batch_order))
    return sort_tied(pending)


def message_indices(ordered: list[PendingCall], models: list[SpanRecord]) -> list[int]:
    """The model message of each of `ordered` (the run's calls in issue order), given the run's model spans
    (see the module docstring); never decreasing along `ordered`, so reading the calls by message keeps
    their issue order."""
    starts = sorted([span.start_ns for span in models])
    response_start: dict[str, int] | None = None  # built only when a call is tied to its response
    indices: list[int] = []
    previous = 0
    for call in ordered:
        batch = call.batch
        if batch:
            if response_start is None:
                response_start = {span.span_id: span.start_ns for span in models}
            anchor = response_start.get(batch, call.span.start_ns)
        else:
            anchor = call.span.start_ns
        found = bisect_right(starts, anchor)
        if found > previous:  # noqa: PLR1730 - a compare, not a builtin call, per call
            previous = found
        indices.append(previous)
    return indices
