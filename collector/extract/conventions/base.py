"""The extractor protocol: a predicate that classifies a span, and one method that reads it.

A convention module knows one family of span and attribute names. `classify` is the predicate: it
answers ``None`` for a span that is not in its convention (so the next extractor is asked), and a
`Role` for one that is. `Role.OTHER` claims a span without using it, which is how a convention keeps
a span that another convention would misread (an OpenLLMetry `workflow` span that also says
`gen_ai.operation.name=invoke_agent`) out of the run list. `read` is called only for `RUN`, `TOOL`
and `LLM`, and returns raw values: size caps, JSON parsing and ordering happen once, in
`toolscore.collector.extract.runs`, so every convention behaves the same way there.

Extractors are stateless singletons shared by threads; they read only the attributes they need
straight from `span.attributes` (no copies on the hot path). An extractor may also declare a `gate`
(see `Gate`) so that spans it cannot recognise are not offered to it at all, and `issued_text`: the
attribute whose JSON text, when an LLM span carries it as a string, is what `read` takes the issued
calls from, as OTel GenAI `tool_call` parts. Extraction then skims that text to tell whether all of a
run's issued calls were recorded by its tool spans, without decoding it (see `model_calls`).

The run's tool catalog (`AgentRun.available_tools`, see `catalog`) comes from an optional pair:
`tool_keys`, the attributes of a run or model span that may hold tool definitions, and
`read_tools(span, role)`, asked only about spans carrying one of them, which returns the raw definitions
of the tools offered (each a mapping or its JSON text, shapes in `catalog`). Both optional, like `gate`:
an extractor without them adds no tools. A tool span's own description and schema ride on its
`ToolRead` (`description`, `schema`), read with the rest of the span.

A run inferred at a span that no convention marks as a run (see `runs`) is named after that span, unless
the convention that recognised the span describes it: an optional `inferred_run(span)` returning a
`RunInfo` (or None), asked only about spans it classified `Role.OTHER` that a run is inferred at (OpenLLMetry's
LlamaIndex root `<Class>.workflow` span, which is a workflow's run or any other top-level LlamaIndex call).

An extractor may also have `is_step(span) -> bool`, asked only about a span of its own that is the child of a
tool span on the way up from a call with no run span above it: True when the span is one step of an agent run
(OpenLIT's LangChain chain span for one node step of a graph), never the root of one, so that the run inferred
for what the tool ran is the tool span itself, not one run per step (see `runs._TraceRuns._owner`).

And `ends_before_its_work(span) -> bool`, asked by a live collector about a trace's root span of its own: True
when the instrumentation ends that span before the work under it is done (OpenLLMetry ends LlamaIndex's
`Workflow.run` span when `run` returns its handler, and the workflow's steps run after it, still its children).
Such a root's arrival does not mark its trace's end, so the trace is finished when it goes idle, not when its
root has settled (`toolscore.collector.pipeline`).

And `sent_for(span) -> str | None`, asked about a model span of its own: the span id of another model span whose
request this span recorded again, when the tree does not show it (OpenLLMetry's LangChain instrumentation sends
its model span's `traceparent` with the OpenAI request, while the `openai` client span is parented beside it): the
span is then a layer of that response, not a response of its own (see `runs`, *Model response layers*).

And `call_id_above(span, parent) -> str | None`, asked about a tool span of its own that it read without a call
id, with its parent span: the call id the parent records for the one call it ran (LangGraph's ToolNode runs each
tool call as a task of its own, whose span OpenInference records with that call as its input; a retry middleware
runs the tool again inside the same task, and a failed attempt's tool span has no result to name the call).

And `output_tools_of(span, names) -> frozenset[str]`, asked about a run span of its own with the tool names one of
the run's model responses called: those that are the framework's structured-output tools (see
`IssuedCalls.output_tools`), when only the run span tells which framework made the requests (OpenLIT's pydantic-ai
run, whose model responses are its `openai` client spans, which do not know pydantic-ai).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

from toolscore.collector.spans import SpanRecord

__all__ = [
    "NOT_CAPTURED",
    "Extractor",
    "Gate",
    "IssuedCall",
    "IssuedCalls",
    "Role",
    "RunInfo",
    "ToolRead",
]


class Role(enum.Enum):
    """What a span stands for in an agent run."""

    RUN = "run"
    """One agent invocation: its tool calls are the tool spans below it."""
    TOOL = "tool"
    """One tool execution."""
    LLM = "llm"
    """One model response; read for the order in which it issued tool calls."""
    OTHER = "other"
    """A span of this convention that is none of the above; no other convention is asked."""


class _NotCaptured:
    """Marker for arguments the instrumentation did not record (distinct from ``None`` and ``{}``)."""

    _instance: _NotCaptured | None = None

    def __new__(cls) -> _NotCaptured:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_CAPTURED"


NOT_CAPTURED: Final = _NotCaptured()


@dataclass(slots=True)
class ToolRead:
    """A tool span's raw values, before size caps and JSON parsing.

    `args` is what the span held (JSON text, a decoded value, or `NOT_CAPTURED`). `name` may be None
    only for a handoff (`handoff=True`), whose tool name is recovered from the model response that
    issued it.
    """

    name: str | None
    args: Any = NOT_CAPTURED
    call_id: str | None = None
    result: Any = None
    error: bool = False
    error_type: str | None = None
    handoff: bool = False
    output_tool: bool = False
    """The span runs the framework's structured-output step, not a tool the agent chose (kept only
    with `ExtractConfig.include_output_tools`)."""
    delegates_to: str | None = None
    """The agent a delegation tool hands its work to (CrewAI's `Delegate work to coworker`), which runs inside the
    tool span with no run span of its own: the run inferred there is named after it."""
    final: bool = False
    """The framework's built-in tool that ends a run (smolagents `final_answer`, DSPy `finish`): a real call
    the model chose, kept in the sequence and flagged (`ToolCall.final`), so a scorer can leave it out."""
    unwrap: Callable[[Any], tuple[Any, str | None]] | None = None
    """`args` are a wrapper around the real arguments (an OpenLLMetry envelope): `unwrap(args)` gives them
    and the call id the wrapper carries (None: none). Left to extraction, which unwraps only arguments
    that fit `ExtractConfig.max_args_bytes`, so that an oversized wrapper is cut as raw text and never
    decoded whole; the convention has no config to measure against."""
    args_parsed: bool = False
    """`args` are the tool's input after the framework parsed it with the tool's schema (defaults filled in,
    values coerced), not the model's text (the Vercel AI SDK's `ai.toolCall.args`): the model response that
    issued the call wins when it recorded the call's arguments as text."""
    description: Any = None
    """The tool's own description as the span records it (for the run's catalog, see `catalog`)."""
    schema: Any = None
    """The tool's own parameters schema as the span records it (JSON text or a mapping; `catalog` keeps it
    only when it is a JSON schema object)."""
    failure_recorded: bool = True
    """Whether the span would show the call's failure. False where the instrumentation cannot record one (it sets
    the span OK before it checks the tool's result, and the SDK ignores a later ERROR): `error` False then does
    not say the call succeeded, and a lower layer of the call that failed tells it (see `layers`)."""
    needs_run: bool = False
    """The call belongs to a run span above it or to none: with no run span above, it is dropped
    (`call_without_run`) rather than made an inferred run. Where the instrumentation opens a tool span only inside
    a run it traced, a tool span with no run span above was made after that run's span had ended (OpenLIT's Agno
    wrappers and a streamed `Agent.run`, whose run span says so: `RunInfo.incomplete`), and its call belongs to
    that run, not to one of its own."""


@dataclass(slots=True)
class RunInfo:
    """A run span's description: who ran and on what request, with what final answer."""

    agent_name: str | None = None
    input: str | None = None
    output: str | None = None
    named_below: Callable[[SpanRecord], str | None] | None = None
    """The agent's name is recorded on a span below the run span, not on it (LlamaIndex: the workflow's
    `init_run` step): extraction asks this of the run span's children, in start order, and the first
    name it gives replaces `agent_name`."""
    incomplete: bool = False
    """The run span says the run's work is not under it (OpenLIT's Agno wrapper ended it when a streamed
    `Agent.run` returned its iterator, before the run): the run is flagged incomplete (`AgentRun.incomplete`)
    rather than read as a run that made only the calls found under it."""
    needs_model: bool = False
    """The run's model responses can be lost without a sign (OpenLIT's LangChain handler never ends the chat spans
    of a LangGraph run invoked with `ainvoke` whose graph name lacks "agent"): a run with no model response of its
    own is flagged incomplete (`AgentRun.incomplete`) rather than read from its tool spans alone, which miss the
    calls no tool ran (an agent run asks its model at least once)."""


@dataclass(slots=True, frozen=True)
class IssuedCall:
    """One tool call as a model response listed it (`args` is JSON text or a decoded value)."""

    call_id: str | None
    name: str | None
    args: Any = None
    error_type: str | None = None
    """The response itself says the framework refused the call and ran no tool (its error's type): the Vercel AI
    SDK's streamed step lists an input its schema rejected as `invalid` with the error. A call no tool span
    claims is then a failed call (see `model_calls`)."""


@dataclass(slots=True)
class IssuedCalls:
    """The tool calls one model response issued, in the model's order."""

    calls: list[IssuedCall] = field(default_factory=list)
    output_tools: frozenset[str] = frozenset()
    """Names of the framework's structured-output tools (pydantic-ai's `final_result`), not tools the agent
    chose: a call of theirs no tool span recorded is no call of the run (see `model_calls`)."""
    partial: bool = False
    """The response issued calls this record does not all list (OpenLIT keeps a non-streamed Responses API
    response's last call only): a run whose calls come from its model responses alone is then flagged
    incomplete (`AgentRun.incomplete`) rather than scored as if it made only the calls listed. An extractor
    that can say so has `partial_responses = True` (only its model spans are read again for it)."""


Read = ToolRead | RunInfo | IssuedCalls


@dataclass(slots=True, frozen=True)
class Gate:
    """What a span must show before an extractor can recognise it: a scope in `scopes` or a key in `keys`.

    A necessary condition, not a sufficient one (`classify` still decides), declared as data so that
    `Dispatch` asks each span only the few extractors whose gate it passes instead of all of them.
    An extractor without a gate is asked about every span.
    """

    scopes: frozenset[str] = frozenset()
    keys: frozenset[str] = frozenset()


@runtime_checkable
class Extractor(Protocol):
    """One span convention: a predicate (`classify`) and one method (`read`)."""

    name: str
    """The convention's name, recorded on every run read from it (`AgentRun.convention`)."""

    def classify(self, span: SpanRecord) -> Role | None:
        """The span's role in this convention, or None when the span is not in this convention."""
        ...

    def read(self, span: SpanRecord, role: Role) -> Read:
        """The span's values for `role` (RUN → RunInfo, TOOL → ToolRead, LLM → IssuedCalls)."""
        ...
