"""Spans → agent runs, each with its tool calls in the order the model issued them.

Rules, applied per trace:

- **Roles.** Each span is classified once by the first convention that recognises it (see
  `conventions`): a run (one agent invocation), a tool call, a model response, or nothing.
- **Runs.** Every run span is a run, with or without calls. A tool call belongs to its nearest run
  ancestor. When the walk up from a call meets another tool span first, the call was made by
  something that tool invoked (an uninstrumented sub-agent): the child of that tool span on the path
  stands in as an *inferred* run. When it meets no run at all, the inferred run is the topmost
  ancestor that a convention recognises (a LangGraph graph span under an application's own span);
  failing that, the trace root, or the topmost ancestor that has arrived when the root has not. Inferred runs
  exist only when they own a call, or a model response that was offered tools below a recognised span or a
  tool span (an agent that answered without calling a tool: `_add_model_runs`); `ExtractConfig.infer_runs`
  turns them off, and a tool span whose convention says its call belongs to a run span or none
  (`ToolRead.needs_run`: its run's span ended before it) is dropped rather than made one. Nested agents are runs of
  their own; the enclosing run keeps the call that invoked the sub-agent, and `parent_span_id` links them.
- **Layers.** A tool span under a tool span of the same name (and call id, when both carry one), with no
  run span between them, is the same call traced one layer down (an MCP client and server under the
  framework's tool span): see `layers`. It is folded into the call, neither a call nor an inferred run.
- **Model response layers.** A model span under another model span, with no run or tool span between
  them, is the same model request traced one layer down (an agent SDK traces the response it asked for,
  and the client library's instrumentation the HTTP call inside it: OpenLLMetry's Agents SDK processor and
  its `openai` instrumentation). Together they are one response of the run, the outermost span's: one
  model message, whose calls are the ones the outermost span lists, or, when it lists none, those of its
  latest layer that did not fail and lists some (the layers' tool definitions and tool results are read
  too). Read as responses of their own, every call would be listed twice. A model span may also say which
  response it recorded again when the tree does not (`Extractor.sent_for`: OpenLLMetry's `openai` client span of a
  LangChain model call, a sibling of LangChain's own span, names it by the `traceparent` LangChain sent): it is
  a layer of that response. Model spans of one run side by side that carry the same `gen_ai.response.id` are
  layers too, of the first to start (the `anthropic` client's own span beside OpenLLMetry's `anthropic.chat`).
- **Run layers.** A run span whose parent is a run span naming the same agent is that run traced twice, by two
  instrumentations (AutoGen's own `invoke_agent` around OpenInference's AGENT span; OpenInference's ADK
  `agent_run` around ADK's `invoke_agent`): the innermost span is the run, the ones above it are folded into it
  (counted as `run_layer`). The innermost, because its run then depends on its own subtree alone, as
  `rebuild_under` needs: a layer above learns it is one from its child, which ends (and arrives) first.
- **Order.** See `order`: batch start, position in the model response, start time, call id,
  span id.
- **Tools offered.** Each run's catalog of tools, from its run span, model spans and, for a tool they
  do not define, its tool spans: see `catalog`.
- **Model-only calls.** A call a model response of the run lists and no tool span of the run claims is
  a call of the run too, marked `model_only`: see `model_calls`. A run with such a call whose outcome cannot be
  read (no call id, while the run answered a call it cannot attribute) is flagged incomplete
  (`model_calls.outcome_unknown`). A handoff span names no tool (`ToolRead.handoff`): the response that issued it
  does. When no response of the run lists it (content capture off), the call is unnamed and its run is flagged
  incomplete. So is a run span at its trace's root with no recognised span under it (`_blind`): its responses
  were lost; and a run whose convention says its responses can be lost without a sign, when it has none of its own
  (`RunInfo.needs_model`).
- **Idempotence.** Spans may arrive in any order and more than once: the first delivery of a
  (trace id, span id) is kept and the others are counted. Runs come out sorted by (trace id, run
  start, span id), so the same spans always give the same runs.
- **Robustness.** A span no convention knows is skipped; a trace with no known span counts
  `unknown_convention`; a span a convention fails to read counts `read_error:<convention>`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolscore.collector.extract.catalog import defines_tools, run_tools
from toolscore.collector.extract.config import ExtractConfig, ExtractStats
from toolscore.collector.extract.conventions import (
    EXTRACTORS,
    Dispatch,
    Extractor,
    IssuedCalls,
    Role,
    RunInfo,
    ToolRead,
    dispatch_for,
)
from toolscore.collector.extract.conventions.common import error_of
from toolscore.collector.extract.layers import fold_layers, same_call
from toolscore.collector.extract.model_calls import (
    all_claimed,
    build_model_call,
    model_only_calls,
    outcome_unknown,
    skim_claimed,
    stopped_for_tools,
    unread_claimer,
    with_outcomes,
)
from toolscore.collector.extract.order import (
    IssuedBatch,
    PendingCall,
    batch_order,
    in_start_order,
    message_indices,
    needs_model_responses,
    sort_tied,
    tie_calls,
)
from toolscore.collector.extract.privacy import mask_run
from toolscore.collector.extract.values import agent_run, build_call, capped_attributes, capped_info, unwrapped
from toolscore.collector.spans import SpanRecord, StatusCode
from toolscore.scorers._model import AgentRun

__all__ = ["ClassifiedSpan", "classify_span", "rebuild_classified", "rebuild_runs", "rebuild_under"]

_log = logging.getLogger(__name__)


@dataclass(slots=True)
class ClassifiedSpan:
    """A span with the convention that recognised it and the role it gave it (both None: no convention did).

    Kept by callers that classify spans as they arrive (the pipeline's trace store), so that every
    later rebuild of their trace reads the classification instead of asking the extractors again.
    """

    span: SpanRecord
    extractor: Extractor | None
    role: Role | None

    def ask(self, hook: str, *args: Any) -> Any:
        """What its convention's optional hook `hook` (an `Extractor` method a convention may lack:
        `ends_before_its_work`, `is_step`, `sent_for`, `call_id_above`, `inferred_run`, `output_tools_of`) answers
        for the span (and `args`); None when the convention has no such hook."""
        answer = getattr(self.extractor, hook, None)
        return None if answer is None else answer(self.span, *args)


@dataclass(slots=True)
class _Run:
    node: ClassifiedSpan
    inferred: bool
    calls: list[PendingCall] = field(default_factory=list)
    convention: str | None = None


RESPONSE_ID = "gen_ai.response.id"
"""The model's id of a response (OTel GenAI): two model spans of a run that carry the same one record one response."""

_UNKNOWN: tuple[None, None] = (None, None)
_NO_MODELS: list[ClassifiedSpan] = []  # never appended to: the empty list `_models` and `_children` hand out

# Role members as module constants: in Python 3.11 every `Role.X` goes through `EnumType.__getattr__`'s
# lookup hook (about 60 ns, ten times a global), and these are read per span.
_RUN, _TOOL, _LLM = Role.RUN, Role.TOOL, Role.LLM


def _classify(span: SpanRecord, dispatch: Dispatch) -> ClassifiedSpan:
    return ClassifiedSpan(span, *(dispatch.classify(span) or _UNKNOWN))


def classify_span(span: SpanRecord, extractors: tuple[Extractor, ...] = EXTRACTORS) -> ClassifiedSpan:
    """The span with its convention and role, as `rebuild_runs` classifies it."""
    return _classify(span, dispatch_for(extractors))


def rebuild_runs(
    spans: Iterable[SpanRecord],
    config: ExtractConfig | None = None,
    stats: ExtractStats | None = None,
    *,
    extractors: tuple[Extractor, ...] = EXTRACTORS,
) -> list[AgentRun]:
    """The agent runs in `spans` (see the module docstring for the rules); never raises on bad spans."""
    classify = dispatch_for(extractors).classify  # `_classify`, inlined: one call less per span
    return rebuild_classified([ClassifiedSpan(span, *(classify(span) or _UNKNOWN)) for span in spans], config, stats)


def rebuild_classified(
    spans: Iterable[ClassifiedSpan], config: ExtractConfig | None = None, stats: ExtractStats | None = None
) -> list[AgentRun]:
    """`rebuild_runs` over spans already classified (by `classify_span`, with the same extractors)."""
    config = config if config is not None else ExtractConfig()
    stats = stats if stats is not None else ExtractStats()
    traces: dict[str, dict[str, ClassifiedSpan]] = {}
    received = duplicates = 0
    for node in spans:
        received += 1
        span = node.span
        nodes = traces.get(span.trace_id)
        if nodes is None:
            nodes = traces[span.trace_id] = {}
        elif span.span_id in nodes:
            duplicates += 1
            continue
        nodes[span.span_id] = node
    stats.spans += received
    stats.duplicate_spans += duplicates
    runs: list[AgentRun] = []
    for trace_id in sorted(traces):
        stats.traces += 1
        runs.extend(_TraceRuns(traces[trace_id], config, stats).build())
    return runs


def rebuild_under(
    nodes: Mapping[str, ClassifiedSpan],
    top: str,
    config: ExtractConfig | None = None,
    stats: ExtractStats | None = None,
) -> list[AgentRun]:
    """The runs `rebuild_classified` gives for one trace's `nodes` (by span id) at or under the run span `top`,
    reading only the spans under it.

    For a pending trace whose runs settle one at a time (a chat session traced as one trace, a run per
    turn), so that each settle reads its own run's spans rather than every span of the trace again. The
    same runs, because a run span's run depends on its subtree alone: a tool or model span belongs to the
    first run span on its way up, or to an inferred run at a span on that way (the child of a tool span
    met first, or the topmost span), so the runs at or under `top` own only spans under it, and every walk
    up from those spans stops at `top` at the latest. Spans whose parent is missing are not under `top` and
    do not change its runs (they stand for inferred runs of their own). Above `top`, only its own
    `parent_span_id` is read, from all of `nodes`. The order of `nodes` is kept (an inferred run's
    convention is its first call's). Stats count the spans under `top` and one trace. The one exception is a
    run span with nothing under it whose work hangs beside it (`_TraceRuns._empty_run_beside`): its runs come
    from the whole trace's.
    """
    config = config if config is not None else ExtractConfig()
    stats = stats if stats is not None else ExtractStats()
    node = nodes[top]
    if node.role is not _RUN:
        raise ValueError(f"span {top} is no run span: the runs under it can depend on spans above it")
    under = _under(nodes, top)
    if len(under) == 1 and _TraceRuns(nodes, config, ExtractStats()).has_body_beside(node):
        return _runs_from(_TraceRuns(nodes, config, stats).build(), top)
    stats.spans += len(under)
    stats.traces += 1
    parent = _TraceRuns(nodes, config, ExtractStats())._parent_run(node)  # its reads are not this rebuild's
    return _TraceRuns(under, config, stats, top=(top, parent)).build()


def _runs_from(runs: list[AgentRun], top: str) -> list[AgentRun]:
    """The runs of `runs` that are `top`'s or nested in it, by their `parent_span_id` links, in their order."""
    parents = {run.span_id: run.parent_span_id for run in runs}
    kept = []
    for run in runs:
        current: str | None = run.span_id
        for _ in range(len(runs) + 1):
            if current is None or current == top:
                break
            current = parents.get(current)
        if current == top:
            kept.append(run)
    return kept


def _under(nodes: Mapping[str, ClassifiedSpan], top: str) -> dict[str, ClassifiedSpan]:
    """The spans of `nodes` at or under `top`, in the order of `nodes`; each span's way up is walked once."""
    inside: dict[str | None, bool] = {top: True, None: False}
    under: dict[str, ClassifiedSpan] = {}
    for span_id, node in nodes.items():
        verdict = inside.get(span_id)
        if verdict is None:
            path: dict[str, None] = {}
            current: str | None = span_id
            while (verdict := inside.get(current)) is None:
                assert current is not None  # None is in `inside`
                above = nodes.get(current) if current not in path else None
                if above is None:  # a parent not arrived, or a cycle of parents that does not pass `top`
                    verdict = False
                    break
                path[current] = None
                parent_id = above.span.parent_id
                current = parent_id if parent_id != current else None
            inside.update(dict.fromkeys(path, verdict))
        if verdict:
            under[span_id] = node
    return under


class _TraceRuns:
    """The runs of one trace, from its classified spans (`top`: a run span whose parent run is known, and
    whose ancestors are not among `nodes`)."""

    def __init__(
        self,
        nodes: Mapping[str, ClassifiedSpan],
        config: ExtractConfig,
        stats: ExtractStats,
        top: tuple[str, str | None] | None = None,
    ) -> None:
        self.nodes, self.config, self.stats, self.top = nodes, config, stats, top
        self.runs: dict[str, _Run] = {}
        self.llm_nodes: list[ClassifiedSpan] = []
        self.models_by_run: dict[str, list[ClassifiedSpan]] | None = None
        self.layers: dict[str, str] = {}
        """Tool spans folded into a call seen at a layer above them, with that call's span id (see `layers`)."""
        self.layers_known = False
        """Whether `layers` is computed (the calls are added), or must be looked up (`_call_of`)."""
        self.children: dict[str, list[ClassifiedSpan]] | None = None
        """Spans by parent span id, built on first use (`_children`)."""
        self.inferred_models: list[tuple[ClassifiedSpan, ClassifiedSpan]] = []
        """Model responses with no run span above them, each with the span its run is inferred at."""
        self.model_layers: dict[str, list[ClassifiedSpan]] = {}
        """Model spans that are a layer of a response (see the module docstring), by the outermost span's id."""
        self.claimers: dict[str, list[PendingCall]] = {}
        """Tool spans that are no call of their run yet claim the call they ran (see `model_calls`), by run."""
        self.run_layers: dict[str, str] = {}
        """Run spans folded into the run they are a layer of (see *Run layers* above), with that run's span id."""

    def _parent(self, node: ClassifiedSpan) -> ClassifiedSpan | None:
        parent_id = node.span.parent_id
        return self.nodes.get(parent_id) if parent_id and parent_id != node.span.span_id else None

    def _owner(self, node: ClassifiedSpan) -> tuple[ClassifiedSpan, bool]:
        """The run a tool or model span belongs to, and whether that run is inferred.

        Below a tool span (something the tool ran: a sub-agent without a run span of its own), the run is the
        tool span's child on the way up, the sub-agent's own root; or the tool span itself when that child is a
        tool or model span, or a span its convention calls one step of a run (`Extractor.is_step`), so that a
        sub-agent whose steps sit right under the tool span (CrewAI's delegated coworker, the node steps of a
        LangGraph graph traced by OpenLIT) is one run, not one per step.
        """
        child, current, claimed = node, self._parent(node), None
        for _ in range(len(self.nodes)):
            if current is None:
                break
            if current.role is _RUN:
                return current, False
            if current.role is _TOOL:
                if child.role is _TOOL or child.role is _LLM or child.ask("is_step"):
                    return current, True
                twin = self._empty_run_beside(child, current)
                return (twin, False) if twin is not None else (child, True)
            if current.role is not None:
                claimed = current
            child, current = current, self._parent(current)
        return (claimed or child), True

    def _empty_run_beside(self, body: ClassifiedSpan, tool: ClassifiedSpan) -> ClassifiedSpan | None:
        """A run span with no span under it, beside `body` under `tool`, open while `body` starts and naming the
        same agent: the run `body` holds the work of.

        OpenLLMetry opens `invoke_agent <sub>` for a graph invoked inside a tool but parents the graph's own spans
        to the tool's run, so they hang beside that span, under an `execute_task <sub>` span, not under it.
        """
        start, name = body.span.start_ns, body.span.attributes.get("traceloop.entity.name")
        for run in self._children(tool.span.span_id):
            span = run.span
            if run.role is not _RUN or self._children(span.span_id) or not span.start_ns <= start <= span.end_ns:
                continue
            agent = span.attributes.get("gen_ai.agent.name")
            if name is None or agent is None or agent == name:
                return run
        return None

    def has_body_beside(self, run: ClassifiedSpan) -> bool:
        """Whether the run span `run` stands for work that hangs beside it (see `_empty_run_beside`)."""
        tool = self._parent(run)
        if tool is None or tool.role is not _TOOL:
            return False
        siblings = self._children(tool.span.span_id)
        return any(self._empty_run_beside(sibling, tool) is run for sibling in siblings if sibling.role is not _RUN)

    def _children(self, span_id: str) -> list[ClassifiedSpan]:
        """The spans whose parent is `span_id`, from an index of the trace built on first use."""
        if self.children is None:
            self.children = {}
            for node in self.nodes.values():
                if node.span.parent_id:
                    self.children.setdefault(node.span.parent_id, []).append(node)
        return self.children.get(span_id, _NO_MODELS)

    def _step_error(self, model_span: SpanRecord) -> str | None:
        """The error type of the span around a model response, when it is no run span and ended in error."""
        step = self.nodes.get(model_span.parent_id or "")
        if step is None or step.role is _RUN or step.span.status_code != StatusCode.ERROR:
            return None
        return error_of(step.span)[1]

    def _tool_of(self, owner: ClassifiedSpan) -> ClassifiedSpan | None:
        """The tool span an inferred run stands under (its parent) or for (itself), if any (see `_owner`)."""
        if owner.role is _TOOL:
            return owner
        parent = self._parent(owner)
        return parent if parent is not None and parent.role is _TOOL else None

    def _read(self, node: ClassifiedSpan) -> object:
        extractor, role = node.extractor, node.role
        if extractor is None or role is None:
            return None
        try:
            read = extractor.read(node.span, role)
            if read.__class__ is ToolRead and read.call_id is None and (parent := self._parent(node)) is not None:
                read.call_id = node.ask("call_id_above", parent.span)
            if read.__class__ is ToolRead and read.unwrap is not None:
                # Unwrapped here, within the same guard: a malformed envelope is this span's read error.
                return unwrapped(read, self.config.max_args_bytes)
            return read
        except Exception:  # a malformed span costs its own data only
            _log.debug("%s could not read span %s", extractor.name, node.span.span_id, exc_info=True)
            self.stats.read_failed(node.span, extractor.name)
            return None

    def build(self) -> list[AgentRun]:
        tools: list[ClassifiedSpan] = []
        conventions: list[str] = []
        for node in self.nodes.values():
            role = node.role
            if role is None:
                continue
            if node.extractor is not None:
                conventions.append(node.extractor.name)
            if role is _RUN:
                self.runs[node.span.span_id] = _Run(node, inferred=False)
            elif role is _TOOL:
                tools.append(node)
            elif role is _LLM:
                self.llm_nodes.append(node)
        if not conventions:
            self.stats.skip("unknown_convention")
            return []
        self.stats.by_convention.update(conventions)
        if len(self.runs) > 1:
            self._fold_run_layers()
        self._add_calls(tools)
        if self.llm_nodes and self.config.infer_runs:
            self._add_model_runs()
        built = [self._finish(run) for run in self.runs.values()]
        if self.config.privacy.active:  # the one masking step: before any run is scored, stored or written
            built = [mask_run(run, self.config.privacy) for run in built]
        if len(built) > 1:
            built.sort(key=lambda r: (r.start_ns or 0, r.span_id))
        return built

    def _models(self, run: _Run) -> list[ClassifiedSpan]:
        """The run's model responses, assigned to their runs on first use."""
        by_run = self.models_by_run
        if by_run is None:
            by_run = self._assign_models()
        return by_run.get(run.node.span.span_id, _NO_MODELS)

    def _assign_models(self) -> dict[str, list[ClassifiedSpan]]:
        """Every model response by its run (`models_by_run`), and the inferred runs' ones, with their owners."""
        by_run: dict[str, list[ClassifiedSpan]] = {}
        self.models_by_run, nodes = by_run, self.nodes
        self.inferred_models, self.model_layers = [], {}
        for node in self.llm_nodes:
            sent_for = self._sent_for(node)
            if sent_for is not None:
                self.model_layers.setdefault(sent_for.span.span_id, []).append(node)
                continue
            parent = nodes.get(node.span.parent_id or "")  # mostly the run span: `_owner`'s first step
            if parent is not None and parent.role is _RUN:
                owner, inferred = parent, False
            else:
                response = self._response_of(node)
                if response is not None:
                    self.model_layers.setdefault(response.span.span_id, []).append(node)
                    continue
                owner, inferred = self._owner(node)
            owner_id = self._run_id(owner.span.span_id)
            found = by_run.get(owner_id)
            if found is None:
                by_run[owner_id] = [node]
            else:
                found.append(node)
            if inferred:
                self.inferred_models.append((node, owner))
        for owner_id, models in by_run.items():
            if len(models) > 1:
                by_run[owner_id] = self._fold_same_responses(models)
        return by_run

    def _sent_for(self, node: ClassifiedSpan) -> ClassifiedSpan | None:
        """The response the model span `node` recorded again, named by its convention (`Extractor.sent_for`: the
        model span whose trace context the request carried) rather than by the tree, or None. Only another model
        span that is no layer itself is such a response (then `node` is one of its layers)."""
        span_id = node.ask("sent_for")
        if not span_id or span_id == node.span.span_id:
            return None
        found = self.nodes.get(span_id)
        if found is None or found.role is not _LLM or found.ask("sent_for"):
            return None
        return self._response_of(found) or found

    def _fold_same_responses(self, models: list[ClassifiedSpan]) -> list[ClassifiedSpan]:
        """`models` (one run's responses) less those that record a response another of them records too (the same
        `gen_ai.response.id`), which become layers of the first one to start (`model_layers`).

        Two tracers may record one request side by side rather than one inside the other: the `anthropic` client's
        own tracing (scope `com.anthropic.sdk.python`) opens its span beside OpenLLMetry's `anthropic.chat`, which is
        never made current, and both carry the message's id. Read as two responses, each call they list would be
        two calls."""
        ids = [node.span.attributes.get(RESPONSE_ID) for node in models]
        named = [i for i in ids if i.__class__ is str and i]
        if len(set(named)) == len(named):  # the common case, no response recorded twice: no sort, no copy
            return models
        first: dict[str, ClassifiedSpan] = {}
        for node in sorted(models, key=lambda n: (n.span.start_ns, n.span.span_id)):
            response_id = node.span.attributes.get(RESPONSE_ID)
            if response_id.__class__ is str and response_id:
                first.setdefault(response_id, node)
        kept = []
        for node in models:
            response_id = node.span.attributes.get(RESPONSE_ID)
            response = first.get(response_id) if response_id.__class__ is str else None
            if response is None or response is node:
                kept.append(node)
            else:
                self.model_layers.setdefault(response.span.span_id, []).append(node)
        return kept

    def _response_of(self, node: ClassifiedSpan) -> ClassifiedSpan | None:
        """The outermost model span above the model span `node` with no run or tool span between them (the
        response `node` is a layer of), or None. A loop of parents ends the walk."""
        found, current = None, self._parent(node)
        for _ in range(len(self.nodes)):
            if current is None or current.role is _RUN or current.role is _TOOL:
                break
            if current.role is _LLM:
                found = current
            current = self._parent(current)
        return found

    def _with_layers(self, models: list[ClassifiedSpan]) -> list[ClassifiedSpan]:
        """`models` and their layers, in start order (the spans a response's tool definitions and results are
        read from)."""
        layers = self.model_layers
        if not layers:
            return models
        spans = models + [layer for node in models for layer in layers.get(node.span.span_id, ())]
        spans.sort(key=lambda node: (node.span.start_ns, node.span.span_id))
        return spans

    def _add_model_runs(self) -> None:
        """Inferred runs with no call: where a model was offered tools, below a span a convention recognised
        (a LangGraph graph's root, a framework's entry step) or below a tool span, and no run is there yet.

        An agent that answers without calling a tool is still a run, the one that must score 0 when a tool
        was expected; a model offered no tools (a chat turn, a RAG answer) is not an agent's run. Nor is a
        model response that is its own owner (the root of its trace, or the topmost span arrived): it is below
        nothing, and one response is one step of an agent's loop, not the loop (CrewAI's `Agent.kickoff` under
        OpenLLMetry, which wraps no span around it, leaves each model call a trace of its own: a run each
        would split the agent into as many runs as it made model calls). A tool span that delegates to a named
        agent (`_delegate_of`) holds that agent's run whether or not its model spans list the tools offered.
        Assigns every model response to its run on the way (`_models`).
        """
        self._assign_models()
        for node, owner in self.inferred_models:
            owner_id = owner.span.span_id
            if (
                owner_id in self.runs
                or owner is node
                or not (self._delegate_of(owner) or any(defines_tools(model) for model in self._with_layers([node])))
            ):
                continue
            if owner.role is not None or self._tool_of(owner) is not None:
                assert node.extractor is not None  # an LLM span was classified by one
                self.runs[owner_id] = _Run(owner, inferred=True, convention=node.extractor.name)

    def _delegate_of(self, owner: ClassifiedSpan) -> str | None:
        """The agent `owner` ran, when it is a tool span its convention says ran a named agent
        (`ToolRead.delegates_to`), else None: the model responses under it are that agent's run even when no span
        says which tools it was offered (OpenLIT's `openai` chat spans do not), and the run is named after it."""
        read = self._read(owner) if owner.role is _TOOL else None
        return (read.delegates_to or None) if isinstance(read, ToolRead) else None

    def _add_calls(self, tools: list[ClassifiedSpan]) -> None:
        """Each tool span's call, in its run, but for the layers of a call (see `layers`).

        A tool span has a tool ancestor with no run span between exactly when its owner is inferred under
        that tool (`_owner` stops at the first run or tool span above it), so one walk up finds both.
        """
        self.layers_known = True
        found: list[tuple[ClassifiedSpan, ToolRead, ClassifiedSpan, bool]] = []
        above: dict[str, str] = {}
        nodes = self.nodes
        for node in tools:
            read = self._read(node)
            if read.__class__ is not ToolRead:
                if node.extractor is not None:  # read, and failed: it still ran a call some response issued
                    self._claim(self._owner(node)[0], PendingCall(node.span, unread_claimer()))
                continue
            parent = nodes.get(node.span.parent_id or "")  # mostly the run span: `_owner`'s first step
            owner, inferred = (parent, False) if parent is not None and parent.role is _RUN else self._owner(node)
            found.append((node, read, owner, inferred))
            if inferred and (tool := self._tool_of(owner)) is not None:
                above[node.span.span_id] = tool.span.span_id
        if not above:  # mostly: no tool span under another, so no layers (one pass, no lookups)
            for node, read, owner, inferred in found:
                self._add_call(node, read, owner, inferred)
            return
        reads = {node.span.span_id: read for node, read, _, _ in found}
        self.layers = fold_layers(reads, above)
        for node, _, owner, inferred in found:
            span_id = node.span.span_id
            if span_id in self.layers:
                self.stats.skip("tool_layer")
            else:
                self._add_call(node, reads[span_id], owner, inferred)  # its arguments may come from a layer

    def _add_call(self, node: ClassifiedSpan, read: ToolRead, owner: ClassifiedSpan, inferred: bool) -> None:
        if read.output_tool and not self.config.include_output_tools:
            self.stats.skip("output_tool")
            self._claim(owner, PendingCall(node.span, read))
            return
        run = self.runs.get(self._run_id(owner.span.span_id))
        if run is None:
            if not (inferred and self.config.infer_runs) or read.needs_run:
                self.stats.calls_dropped("call_without_run", 1, None)
                return
            run = self.runs[owner.span.span_id] = _Run(owner, inferred=True)
        assert node.extractor is not None
        run.convention = run.convention or node.extractor.name
        run.calls.append(PendingCall(node.span, read))

    def _claim(self, owner: ClassifiedSpan, claimer: PendingCall) -> None:
        self.claimers.setdefault(self._run_id(owner.span.span_id), []).append(claimer)

    def _parent_run(self, node: ClassifiedSpan) -> str | None:
        """The run that invoked this one: the run owning the nearest tool span (the call it is a layer of,
        if any) or run span above it; a run that a tool span stands for (see `_owner`) starts at that call."""
        below, current = node, node if node.role is _TOOL else self._parent(node)
        for _ in range(len(self.nodes)):
            if current is None:
                return None
            if current.role is _RUN:
                if not self._same_run(current, below):
                    return current.span.span_id
                if self.top is not None and self.top[0] == current.span.span_id:  # a layer at the top: above it
                    return self.top[1]
            elif current.role is _TOOL:
                return self._run_id(self._owner(self._call_of(current))[0].span.span_id)
            below, current = current, self._parent(current)
        return None

    def _run_id(self, span_id: str) -> str:
        """The run a run span stands for: itself, or the run it is a folded layer of (see *Run layers*)."""
        return self.run_layers.get(span_id, span_id) if self.run_layers else span_id

    def _same_run(self, outer: ClassifiedSpan, inner: ClassifiedSpan) -> bool:
        """Whether the run span `inner`, right under the run span `outer`, is `outer`'s run one layer down: both
        name the same agent (see *Run layers* above)."""
        if inner.role is not _RUN or outer.role is not _RUN:
            return False
        mine, theirs = self._read(inner), self._read(outer)
        if not (isinstance(mine, RunInfo) and isinstance(theirs, RunInfo)):
            return False
        return mine.agent_name is not None and mine.agent_name == theirs.agent_name

    def _fold_run_layers(self) -> None:
        """Take the run spans that are layers of the run right under them out of `runs` (see *Run layers*)."""
        inner_of: dict[str, str] = {}
        for span_id, run in self.runs.items():
            parent = self._parent(run.node)
            if parent is not None and parent.span.span_id in self.runs and self._same_run(parent, run.node):
                inner_of[parent.span.span_id] = span_id
        for outer, below in inner_of.items():
            innermost, seen = below, {outer}
            while innermost in inner_of and innermost not in seen:  # a layer of a layer: the innermost is the run
                seen.add(innermost)
                innermost = inner_of[innermost]
            if innermost not in seen:  # parents that loop (a bad exporter) fold nothing
                self.run_layers[outer] = innermost
        for outer in self.run_layers:
            del self.runs[outer]
            self.stats.skip("run_layer")

    def _call_of(self, tool: ClassifiedSpan) -> ClassifiedSpan:
        """The call a tool span is a layer of (itself when none): from `layers` once the calls are added,
        else (`rebuild_under`'s look above its run span, which adds none) up the same chain `fold_layers`
        follows, reading only the tool spans on it. A loop of parents leaves the span unfolded, as there."""
        if self.layers_known:
            call = self.layers.get(tool.span.span_id)
            return self.nodes[call] if call is not None else tool
        current, seen = tool, {tool.span.span_id}
        while True:
            owner, inferred = self._owner(current)
            above = self._tool_of(owner) if inferred else None
            if above is None:
                return current
            if above.span.span_id in seen:
                return tool
            inner, outer = self._read(current), self._read(above)
            if not (isinstance(inner, ToolRead) and isinstance(outer, ToolRead) and same_call(outer, inner)):
                return current
            seen.add(above.span.span_id)
            current = above

    def _inferred_info(self, node: ClassifiedSpan) -> RunInfo:
        """An inferred run's name: the agent a tool span it stands for delegates to, else what the convention
        that recognised its span says of it (`inferred_run`), else its span's name."""
        if delegate := self._delegate_of(node):
            return RunInfo(agent_name=delegate)
        if node.role is Role.OTHER:
            try:
                info = node.ask("inferred_run")
            except Exception:  # a malformed span costs its own data only
                _log.debug("%s could not describe span %s", node.extractor, node.span.span_id, exc_info=True)
                info = None
            if isinstance(info, RunInfo):
                info.agent_name = info.agent_name or node.span.name
                return info
        return RunInfo(agent_name=node.span.name)

    def _name_below(self, span: SpanRecord, named_below: Callable[[SpanRecord], str | None]) -> str | None:
        """The first name `named_below` finds on the children of the run span `span`, in start order."""
        children = [node.span for node in self._children(span.span_id)]
        for child in sorted(children, key=lambda c: (c.start_ns, c.span_id)):
            try:
                name = named_below(child)
            except Exception:  # a malformed span costs its own data only
                _log.debug("no agent name on span %s", child.span_id, exc_info=True)
                continue
            if name:
                return name
        return None

    def _batches(self, models: list[ClassifiedSpan], run: _Run) -> list[IssuedBatch]:
        """The model responses (of one run) that issued tool calls, in start order. The run's convention may say
        which of the called names are its framework's output tools (`output_tools_of`; not for an inferred run)."""
        batches: list[IssuedBatch] = []
        named = not run.inferred and hasattr(run.node.extractor, "output_tools_of")
        for node in models:
            read = self._read(node)
            if not (isinstance(read, IssuedCalls) and read.calls):
                read = self._layer_calls(node)
            if isinstance(read, IssuedCalls) and read.calls:
                output_tools = read.output_tools
                if named:
                    output_tools = output_tools | run.node.ask("output_tools_of", [call.name for call in read.calls])
                batches.append(IssuedBatch(node.span, read.calls, output_tools))
        batches.sort(key=batch_order)
        return batches

    def _layer_calls(self, node: ClassifiedSpan) -> IssuedCalls | None:
        """The calls of the latest layer of the response `node` that did not fail and lists some (see the
        module docstring), or None."""
        for layer in reversed(self._with_layers([node])):
            if layer is node or layer.span.status_code == StatusCode.ERROR:
                continue
            read = self._read(layer)
            if isinstance(read, IssuedCalls) and read.calls:
                return read
        return None

    def _issue_order(self, run: _Run, ordered: list[PendingCall], needed: bool) -> tuple[list[PendingCall], bool]:
        """The run's calls with its model-only calls (see `model_calls`), and whether they were ordered by
        the model responses (`ordered`, the calls in start order, kept when they need not be)."""
        models = self._models(run)
        if not models:
            return ordered, False
        more = self.claimers.get(run.node.span.span_id) if self.claimers else None
        claimers = run.calls + more if more else run.calls
        if not needed:
            texts: list[str] = []
            layers = self.model_layers
            for node in models:  # `issued_text`, inlined: it runs for every model span
                key = getattr(node.extractor, "issued_text", None)
                text = node.span.attributes.get(key) if key is not None else None
                if text.__class__ is not str or (layers and node.span.span_id in layers):
                    break  # a response with layers may take its calls from them (`_batches`)
                texts.append(text)
            else:
                if skim_claimed(claimers, texts):
                    return ordered, False
        batches = self._batches(models, run)
        if not batches or (not needed and all_claimed(claimers, batches)):
            return ordered, False
        extra = model_only_calls(batches, tie_calls(claimers, batches), self.config, self.stats)
        if not (needed or extra):
            return ordered, False
        self.stats.model_only_calls += len(extra)
        return sort_tied(run.calls + extra, [node.span for node in models]), True

    def _finish(self, run: _Run) -> AgentRun:
        span, config, stats = run.node.span, self.config, self.stats
        ordered, tied = in_start_order(run.calls), False
        if self.llm_nodes:  # a trace without model spans reads none
            ordered, tied = self._issue_order(run, ordered, needs_model_responses(ordered))
        if len(ordered) > config.max_calls_per_run:
            stats.calls_dropped("calls_over_limit", len(ordered) - config.max_calls_per_run, span.span_id)
            ordered = ordered[: config.max_calls_per_run]
        models = self._models(run) if self.llm_nodes else _NO_MODELS
        messages = message_indices(ordered, [node.span for node in models]) if models else [None] * len(ordered)
        short = bool(models) and all(c.model_only for c in ordered) and any(self._partial(node) for node in models)
        # A handoff span names no tool: only the model response that issued it does. Untied, its call is unnamed.
        short = short or any(c.read.handoff and (c.issued is None or not tied) for c in ordered if not c.model_only)
        short = short or (not (models or ordered or run.inferred or span.parent_id) and self._blind(span.span_id))
        calls = tuple(
            [
                build_model_call(c, config, stats, message=message)
                if c.model_only
                else build_call(c.read, c.span, c.issued if tied else None, config, stats, message=message)
                for c, message in zip(ordered, messages, strict=True)
            ]
        )
        info = self._inferred_info(run.node) if run.inferred else self._read(run.node)
        info = info if isinstance(info, RunInfo) else RunInfo()
        if info.named_below is not None:
            info.agent_name = self._name_below(span, info.named_below) or info.agent_name
        info = capped_info(info, config.max_text_bytes)
        extractor = run.node.extractor
        top = self.top
        parent_run = top[1] if top is not None and top[0] == span.span_id else self._parent_run(run.node)
        called = zip(calls, ordered, strict=True)
        read_models = self._with_layers(models)
        tools = run_tools(run.node, read_models, called, max_bytes=config.max_attribute_bytes, stats=stats)
        if tied and any(c.model_only for c in ordered):  # model-only calls come with the model's order only
            step_errors = [self._step_error(c.span) if c.model_only else None for c in ordered]
            model_spans = [node.span for node in read_models]
            calls = with_outcomes(calls, {tool.name for tool in tools}, model_spans, step_errors)
            short = short or outcome_unknown(calls, model_spans)
        stats.runs += 1
        stats.inferred_runs += run.inferred
        stats.calls += len(calls)
        fields: dict[str, Any] = {
            "trace_id": span.trace_id,
            "span_id": span.span_id,
            "agent_name": info.agent_name,
            "input": info.input,
            "output": info.output,
            "calls": calls,
            "attributes": capped_attributes(span.attributes, config.max_attribute_bytes),
            "resource": dict(span.resource),
            "convention": run.convention if run.inferred or extractor is None else extractor.name,
            "inferred": run.inferred,
            "parent_span_id": parent_run,
            "start_ns": span.start_ns or None,
            "available_tools": tools,
        }
        short = short or (info.needs_model and not models)  # its responses may be lost (`RunInfo.needs_model`)
        if short or info.incomplete:  # set only when it differs from its default, as validation would record it
            fields["incomplete"] = True
        return agent_run(fields)

    def _blind(self, span_id: str) -> bool:
        """Whether no span a convention recognises is under a run span: no model response, tool call, other run or
        step. An agent run asks its model at least once, so such a run lost its responses, and maybe its calls with
        them: LiteLLM logs a streamed `litellm.completion` from a worker thread that does not carry the caller's
        context (`CustomStreamWrapper.__next__`: `executor.submit(logging_obj.success_handler, ...)`), and its span
        then starts a trace of its own. Such a run is flagged incomplete rather than read as one that made no call.
        Spans no convention knows (a database query) do not count: a live collector may not keep them. Asked only of
        a run span at its trace's root, where such a run is known to arise (the user's own run span around
        LiteLLM's requests); a run span below one with nothing under it is read as before, as a run that made no
        call. In a live collector, a root run span that settles before the spans under it arrive (it ended before
        them, as autogen-core's `invoke_agent` does around OpenInference's AGENT span) has nothing under it yet
        either, and is flagged the same way: what it lacks cannot be told from what it holds."""
        pending = [span_id]
        while pending:
            for child in self._children(pending.pop()):
                if child.role is not None:
                    return False
                pending.append(child.span.span_id)
        return True

    def _partial(self, node: ClassifiedSpan) -> bool:
        """Whether a model response lists only some of the calls it issued: it says so (`IssuedCalls.partial`,
        read again only for the extractors that can), or it stopped to call tools and none of its layers lists a
        call (`model_calls.stopped_for_tools`: content capture off)."""
        if getattr(node.extractor, "partial_responses", False):
            read = self._read(node)
            if isinstance(read, IssuedCalls) and read.partial:
                return True
        layers = self._with_layers([node])
        if not any(stopped_for_tools(layer.span) for layer in layers):
            return False
        return not any(isinstance(read := self._read(layer), IssuedCalls) and read.calls for layer in layers)
