"""Traceloop OpenLLMetry: `traceloop.span.kind` entity spans and legacy indexed LLM attributes.

OpenLLMetry's entity spans wrap a tool's input in an envelope that depends on who made the span:
the SDK decorators record `{"args": [...], "kwargs": {...}}`, the LangChain instrumentation records
the callback's `{"input_str", "inputs", "kwargs": {"tool_call_id"}, ...}`. Both are unwrapped by
`envelopes.unwrap_envelope`, with every other convention's envelopes. A tool span's envelope is handed
to extraction with its unwrapper (`ToolRead.unwrap`) rather than decoded here: only extraction knows
`max_args_bytes`, and an envelope over it is kept as raw text, cut, like any other oversized arguments,
instead of being decoded whole first.

OpenLLMetry's LlamaIndex instrumentation (scope `opentelemetry.instrumentation.llamaindex`, >= 0.10.20 of
llama-index-core) is a LlamaIndex span handler: every span LlamaIndex's dispatcher opens becomes an entity
span, `workflow` when it has no LlamaIndex parent and `task` below (`dispatcher_wrapper.py`
`OpenLLMetrySpanHandler.new_span`). It never writes `tool` or `agent`, so its spans are read by their own
rules (`_llamaindex_role`): a workflow's `call_tool` step is the tool call, a nested workflow run
(`run.task`) a run, the root `workflow` span the place a run is inferred at (`inferred_run`), since a
workflow's run and any other top-level LlamaIndex call (a query engine's query) both give
`<Class>.workflow` there.

OpenLLMetry's model spans carry no `traceloop.span.kind`; those of its OpenAI Agents SDK processor and of its
`openai` client instrumentation are recognised by their scopes. The client instrumentation's Responses API span
(`openai.response`) lists each `function_call` output item's own `id` (`fc_...`) as the tool call's id, in
`gen_ai.output.messages` and in the older `gen_ai.completion.0.tool_calls.<j>.id` alike
(`v1/responses_wrappers.py`: `"id": block_dict.get("id")`), never its `call_id`, which is what the tool's
result answers and what every other span calls the call: its calls are read without an id. Under the Agents
SDK that span is the same response the SDK's own `openai.response` span records one layer up (with the real
call ids): `runs` reads such a model span layer as one response. In a hand-written loop, no layer: such a call
takes the id the run's next request repeats it under and answers (`model_calls._with_repeated_ids`), or, when
none fits, leaves its run flagged incomplete (`model_calls.outcome_unknown`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from toolscore.collector.extract.conventions.base import (
    NOT_CAPTURED,
    Gate,
    IssuedCall,
    IssuedCalls,
    Read,
    Role,
    RunInfo,
    ToolRead,
)
from toolscore.collector.extract.conventions.common import (
    error_of,
    genai_issued_calls,
    indexed_issued_calls,
    json_list,
    load_json,
    message_text,
    string,
)
from toolscore.collector.extract.conventions.envelopes import unwrap_envelope
from toolscore.collector.extract.conventions.genai import (
    ARGS_KEYS,
    INFERENCE_OPERATIONS,
    OPERATION,
    RESULT_KEYS,
    openai_agents_repr_calls,
)
from toolscore.collector.extract.conventions.langchain_agent import CREATE_AGENT, MODEL_NODE, node_response
from toolscore.collector.spans import SpanRecord

__all__ = ["TraceloopExtractor"]

# --- Names read (traceloop/openllmetry opentelemetry-semantic-conventions-ai) ----------------------
# recognised by  traceloop.span.kind, or llm.request.type (legacy LLM spans)
# traceloop.span.kind = tool      tool call: gen_ai.tool.name, else traceloop.entity.name;
#                                 arguments gen_ai.tool.call.arguments, else traceloop.entity.input
#                                 (envelopes within max_args_bytes unwrapped: `inputs`, or decorator
#                                 `kwargs`/`args`; larger ones kept raw and cut);
#                                 call id gen_ai.tool.call.id, else envelope kwargs.tool_call_id;
#                                 result gen_ai.tool.call.result, else traceloop.entity.output
# traceloop.span.kind = agent     run: gen_ai.agent.name, else traceloop.entity.name;
#                                 traceloop.entity.input / traceloop.entity.output
# traceloop.span.kind = handoff  the OpenAI Agents SDK's handoff (`<from> → <to>.handoff`, under the
#                                 handing-off agent's span): a call of the handoff tool, whose name, id
#                                 and arguments only the model response that issued it holds
# LangChain create_agent's `execute_task model` node (task; ls_integration langchain_create_agent in its entity
#                                 input) whose traceloop.entity.output update answers structured-output calls:
#                                 the model response its chat span is a layer of (`langchain_agent`)
# traceloop.span.kind = workflow | task | unknown: OTHER (LangGraph's `<name>.workflow` span also
#                                 says gen_ai.operation.name=invoke_agent under the real
#                                 `invoke_agent` span; reading it as a run would split the run)
# CrewAI (scope opentelemetry.instrumentation.crewai[.instrumentation]): `<role>.agent` (Agent.execute_task)
#                                 says traceloop.span.kind=agent and is the run; `crewai.workflow`
#                                 (Crew.kickoff) says gen_ai.operation.name=invoke_agent with no
#                                 traceloop.span.kind: the crew, OTHER (read as a run by the OTel GenAI
#                                 fallback, it would be a second, empty run around the agents'); its
#                                 `<model>.llm` spans (LLM.call) are left to the fallback (chat spans)
# LLM spans (llm.request.type = chat | completion, or gen_ai.operation.name = chat | text_completion |
# generate_content on a span of SCOPES: the Agents SDK's `openai.response`, the client's `openai.chat`,
# `openai.response`):
#   v0.4x  gen_ai.completion.<i>.tool_calls.<j>.id | name | arguments
#   v0.5x  gen_ai.output.messages (GenAI JSON parts)
#   OTel contrib's opentelemetry-instrumentation-openai-agents-v2 writes its `chat <model>` spans in the same
#          scope (`opentelemetry.instrumentation.openai_agents`), its calls as `str(item)` text parts, no
#          `tool_call` part: read by `genai.openai_agents_repr_calls` when the messages list no `tool_call`
#          (its other spans, with no traceloop.span.kind, go to the GenAI fallback: see `genai`)
#   Responses API client span (scope opentelemetry.instrumentation.openai.v1, `openai.response`): the
#          ids listed are output item ids, not call ids: read as no id
#   tools offered: llm.request.functions.<i>.name | description | parameters (JSON text), or
#          gen_ai.tool.definitions
# --- LlamaIndex (scope opentelemetry.instrumentation.llamaindex, dispatcher_wrapper.py) -------------------
# span names     `<Class>.workflow` (no LlamaIndex parent), `<Class>.task` (a step: the class that defines it,
#                `BaseWorkflowAgent.task`, the method is not in the name), `run.task` (a workflow's run under
#                another LlamaIndex span: the only span entered with a Workflow instance, so the only one
#                named after its method); traceloop.entity.name = the span name
# call_tool step task span with tool.name, tool.arguments (JSON of the model's tool_kwargs; written with or
#                without content capture): a tool call, the model's arguments (no injected `ctx`);
#                traceloop.entity.output = ToolCallResult JSON {tool_name, tool_kwargs, tool_id (the call id),
#                tool_output: {..., raw_output, is_error}, return_direct} (content capture only). A tool that
#                raised is is_error true (LlamaIndex answers the model with the error text; the tool's own
#                `FunctionTool.task` span is never ended, so never exported); so is a tool the agent was not
#                offered ("Tool <name> not found", no tool span under the step)
# FunctionTool.task  the tool's own `acall` under its call_tool step, entity.input {"kwargs": {...}}: OTHER
# run            `run.task`: a run; a root `workflow` span: OTHER, a run inferred there is named by its steps
# agent name     the steps' traceloop.entity.output: top-level "current_agent_name" (init_run's AgentInput,
#                setup_agent's AgentSetup, run_agent_step / parse_agent_output's AgentOutput)
# LLM            a task span with gen_ai.operation.name=chat (an LLM class other than `OpenAI`, whose calls
#                are left to opentelemetry-instrumentation-openai's `openai.chat` spans): gen_ai.output.messages

KIND: Final = "traceloop.span.kind"
ENTITY_NAME: Final = "traceloop.entity.name"
ENTITY_INPUT: Final = "traceloop.entity.input"
ENTITY_OUTPUT: Final = "traceloop.entity.output"
REQUEST_TYPE: Final = "llm.request.type"
HANDOFF: Final = "handoff"
AGENTS_SCOPE: Final = "opentelemetry.instrumentation.openai_agents"
"""OpenLLMetry's OpenAI Agents SDK processor (`opentelemetry-instrumentation-openai-agents`)."""
OPENAI_SCOPE: Final = "opentelemetry.instrumentation.openai.v1"
"""OpenLLMetry's `openai` client instrumentation (`opentelemetry-instrumentation-openai`, openai >= 1)."""
SCOPES: Final = frozenset({AGENTS_SCOPE, OPENAI_SCOPE})
RESPONSES_SPAN: Final = "openai.response"
"""The client instrumentation's Responses API span (`v1/responses_wrappers.py` SPAN_NAME)."""
FUNCTIONS: Final = "llm.request.functions"
TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
LLAMAINDEX_SCOPE: Final = "opentelemetry.instrumentation.llamaindex"
LLAMAINDEX_TOOL_NAME: Final = "tool.name"
LLAMAINDEX_TOOL_ARGS: Final = "tool.arguments"
LLAMAINDEX_NESTED_RUN: Final = "run.task"
"""A workflow's run under another LlamaIndex span (`f"{method_name}.{kind}"` for a Workflow instance)."""
_WORKFLOW_SUFFIX: Final = ".workflow"
HEADERS: Final = "gen_ai.headers"
"""The client instrumentation's record of the request's extra headers (`str(extra_headers)`, shared/__init__.py)."""
_TRACEPARENT: Final = re.compile(r"traceparent['\"]?\s*[:=]\s*['\"]?[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-")
_CURRENT_AGENT: Final = '"current_agent_name"'
CREWAI_SCOPES: Final = frozenset(
    {"opentelemetry.instrumentation.crewai.instrumentation", "opentelemetry.instrumentation.crewai"}
)
"""OpenLLMetry's CrewAI instrumentation: `get_tracer(__name__)` in its `instrumentation` module (0.62.4), and the
package's own name, under which wrappers that add the async path 0.62.4 lacks (`Crew.akickoff`) write the same spans."""


def _first(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    return next((attrs[key] for key in keys if key in attrs), None)


def _llamaindex_role(span: SpanRecord, kind: Any) -> Role:
    """A LlamaIndex dispatcher span's role: the `call_tool` step (it alone carries `tool.name`) is a tool
    call, `run.task` a nested workflow run, a task span that records a chat call (`gen_ai.operation.name`)
    a model response; every other span (the root `workflow` span included) is OTHER."""
    attrs = span.attributes
    if LLAMAINDEX_TOOL_NAME in attrs:
        return Role.TOOL
    if kind == "task" and span.name == LLAMAINDEX_NESTED_RUN:
        return Role.RUN
    if attrs.get("gen_ai.operation.name") == "chat":
        return Role.LLM
    return Role.OTHER


def _llamaindex_tool(span: SpanRecord) -> ToolRead:
    """A `call_tool` step's call: `tool.name`, `tool.arguments`; the call id, result and outcome from its
    ToolCallResult output (`tool_id`, `tool_output`, `tool_output.is_error`)."""
    attrs = span.attributes
    output = load_json(attrs.get(ENTITY_OUTPUT))
    output = output if isinstance(output, Mapping) else {}
    tool_output = output.get("tool_output")
    tool_output = tool_output if isinstance(tool_output, Mapping) else {}
    args = attrs.get(LLAMAINDEX_TOOL_ARGS, output.get("tool_kwargs", NOT_CAPTURED))
    call_id = output.get("tool_id")
    error, error_type = error_of(span, failed=tool_output.get("is_error") is True)
    return ToolRead(
        name=string(attrs, LLAMAINDEX_TOOL_NAME) or span.name,
        args=NOT_CAPTURED if args is None else args,
        call_id=call_id if isinstance(call_id, str) and call_id else None,
        result=tool_output.get("raw_output", tool_output.get("content")) if tool_output else None,
        error=error,
        error_type=error_type,
        description=attrs.get("tool.description"),
    )


def _llamaindex_agent(span: SpanRecord) -> str | None:
    """The agent a LlamaIndex agent workflow's step works for: the top-level `current_agent_name` of the step's
    output event (AgentInput, AgentSetup, AgentOutput, as JSON); the first step that has it, in start order,
    names the agent the workflow started with (its root agent)."""
    output = span.attributes.get(ENTITY_OUTPUT)
    if not isinstance(output, str) or _CURRENT_AGENT not in output:
        return None
    decoded = load_json(output)
    name = decoded.get("current_agent_name") if isinstance(decoded, Mapping) else None
    return name if isinstance(name, str) and name else None


LANGCHAIN_SCOPE: Final = "opentelemetry.instrumentation.langchain"


def _answering_model_node(span: SpanRecord) -> bool:
    """A LangChain `create_agent` model node (`execute_task model`, its metadata in the entity input) whose output
    answers structured-output calls (see `langchain_agent`): the model response its chat span is a layer of."""
    if span.scope != LANGCHAIN_SCOPE or span.attributes.get(ENTITY_NAME) != MODEL_NODE:
        return False
    entity_input = span.attributes.get(ENTITY_INPUT)
    if not (isinstance(entity_input, str) and CREATE_AGENT in entity_input):
        return False
    return node_response(span.attributes.get(ENTITY_OUTPUT)) is not None


class TraceloopExtractor:
    """Spans of Traceloop OpenLLMetry."""

    name = "traceloop"
    gate = Gate(keys=frozenset({KIND, REQUEST_TYPE}), scopes=SCOPES | CREWAI_SCOPES)
    issued_text = "gen_ai.output.messages"
    tool_keys = (f"{FUNCTIONS}.0.name", TOOL_DEFINITIONS)

    def classify(self, span: SpanRecord) -> Role | None:
        """Entity kind `tool` is a tool call and `agent` a run; workflows and tasks are neither.

        A handoff is a tool call (of the handoff tool the model called). A legacy LLM span
        (`llm.request.type`), or an inference span of OpenLLMetry's Agents SDK processor or `openai` client
        instrumentation (`SCOPES`), is read for the calls it issued; the scopes' other spans are left to the
        other conventions. The CrewAI instrumentation's crew span (`crewai.workflow`, `Crew.kickoff`) says
        `invoke_agent` without an entity kind: it is no run, the agents' `<role>.agent` spans below it are.
        LlamaIndex's spans are read by their own rules (`_llamaindex_role`).
        """
        attrs = span.attributes
        kind = attrs.get(KIND)
        if kind is None:
            if span.scope in CREWAI_SCOPES and attrs.get("gen_ai.operation.name") == "invoke_agent":
                return Role.OTHER
            request_type = attrs.get(REQUEST_TYPE)
            if request_type in ("chat", "completion"):
                return Role.LLM
            if span.scope in SCOPES and attrs.get(OPERATION) in INFERENCE_OPERATIONS:
                return Role.LLM
            return None
        if span.scope == LLAMAINDEX_SCOPE:
            return _llamaindex_role(span, kind)
        if kind in ("tool", HANDOFF):
            return Role.TOOL
        if kind == "agent":
            return Role.RUN
        if kind == "task" and _answering_model_node(span):
            return Role.LLM
        return Role.OTHER

    def read(self, span: SpanRecord, role: Role) -> Read:
        attrs = span.attributes
        if span.scope == LLAMAINDEX_SCOPE and role is not Role.LLM:
            if role is Role.TOOL:
                return _llamaindex_tool(span)
            return RunInfo(agent_name=string(attrs, ENTITY_NAME), named_below=_llamaindex_agent)
        if role is Role.TOOL:
            if attrs.get(KIND) == HANDOFF:
                return ToolRead(name=None, handoff=True)
            raw = _first(attrs, (*ARGS_KEYS, ENTITY_INPUT))
            error, error_type = error_of(span)
            return ToolRead(
                name=string(attrs, "gen_ai.tool.name") or string(attrs, ENTITY_NAME) or span.name,
                args=NOT_CAPTURED if raw is None else raw,
                call_id=string(attrs, "gen_ai.tool.call.id"),
                result=_first(attrs, (*RESULT_KEYS, ENTITY_OUTPUT)),
                error=error,
                error_type=error_type,
                unwrap=None if raw is None else unwrap_envelope,  # once the envelope is known to fit the cap
            )
        if role is Role.RUN:
            raw_input = attrs.get(ENTITY_INPUT)
            return RunInfo(
                agent_name=string(attrs, "gen_ai.agent.name") or string(attrs, ENTITY_NAME),
                input=None if raw_input is None else message_text(unwrap_envelope(raw_input)[0], "user"),
                output=message_text(attrs.get(ENTITY_OUTPUT), "assistant"),
            )
        if span.scope == LANGCHAIN_SCOPE and attrs.get(KIND) == "task":  # a create_agent model node (classify)
            return node_response(attrs.get(ENTITY_OUTPUT)) or IssuedCalls()
        if "gen_ai.output.messages" in attrs:
            calls = genai_issued_calls(attrs["gen_ai.output.messages"])
            if not calls and span.scope == AGENTS_SCOPE:  # OTel contrib's processor, same scope: `str(item)` parts
                calls = openai_agents_repr_calls(attrs["gen_ai.output.messages"])
        else:
            calls = indexed_issued_calls(attrs, "gen_ai.completion", ".tool_calls", ("id", "name", "arguments"))
        if span.scope == OPENAI_SCOPE and span.name == RESPONSES_SPAN:  # item ids, not call ids: see the docstring
            calls = [IssuedCall(None, call.name, call.args) for call in calls]
        return IssuedCalls(calls)

    def sent_for(self, span: SpanRecord) -> str | None:
        """The LangChain model span an `openai` client span recorded again: the span whose `traceparent` the request
        carried (`gen_ai.headers`), in the same trace.

        OpenLLMetry's LangChain instrumentation injects its model span's context into the OpenAI request's
        `extra_headers` (`_OpenAITracingWrapper`), and its callback handler detaches that span's context before the
        request, attaching only `SUPPRESS_LANGUAGE_MODEL_INSTRUMENTATION_KEY` (`callback_handler.py`). The client
        instrumentation's Chat Completions wrapper honours that key and writes nothing; its Responses API wrapper
        (`v1/responses_wrappers.py`) checks only `_SUPPRESS_INSTRUMENTATION_KEY`, so a `ChatOpenAI(use_responses_api=
        True)` call gets an `openai.response` span too, parented beside LangChain's `ChatOpenAI.chat` span, and with
        the request's headers, which name it. The two are one response. The span id is looked up in the span's own
        trace, so the header's trace id is not compared: a pipeline that gives a trace new ids (a replay, a test's
        copies) rewrites the span's, not the text of its attributes.
        """
        if span.scope != OPENAI_SCOPE:
            return None
        headers = span.attributes.get(HEADERS)
        if not isinstance(headers, str) or "traceparent" not in headers:
            return None
        found = _TRACEPARENT.search(headers)
        return None if found is None else found.group(2)

    def inferred_run(self, span: SpanRecord) -> RunInfo | None:
        """A run inferred at a LlamaIndex root `<Class>.workflow` span: named by its steps (`current_agent_name`),
        else after the class."""
        if span.scope != LLAMAINDEX_SCOPE or span.attributes.get(KIND) != "workflow":
            return None
        name = span.name[: -len(_WORKFLOW_SUFFIX)] if span.name.endswith(_WORKFLOW_SUFFIX) else span.name
        return RunInfo(agent_name=name or None, named_below=_llamaindex_agent)

    def ends_before_its_work(self, span: SpanRecord) -> bool:
        """A LlamaIndex root `workflow` span: the instrumentation ends a `Workflow.run` span when `run` returns its
        handler, before the workflow's steps have run (`prepare_to_exit_span` ends it, leaving its context attached
        so the steps are its children). Any LlamaIndex root is `workflow`, and the span does not tell a
        `Workflow`'s from another class's, so every such root is taken as ending early: a trace then finishes
        when it goes idle, later but whole, rather than early and short."""
        return span.scope == LLAMAINDEX_SCOPE and span.attributes.get(KIND) == "workflow"

    def read_tools(self, span: SpanRecord, role: Role) -> list[Any]:
        """`llm.request.functions.<i>.*` (the legacy flattened request), or `gen_ai.tool.definitions`."""
        attrs = span.attributes
        if TOOL_DEFINITIONS in attrs:
            return json_list(attrs[TOOL_DEFINITIONS])
        tools: list[Any] = []
        for i in range(256):
            prefix = f"{FUNCTIONS}.{i}."
            name = attrs.get(prefix + "name")
            if name is None:
                break
            tools.append(
                {
                    "name": name,
                    "description": attrs.get(prefix + "description"),
                    "parameters": attrs.get(prefix + "parameters"),
                }
            )
        return tools
