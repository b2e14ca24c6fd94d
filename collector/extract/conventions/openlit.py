"""OpenLIT (`openlit.init()`): its OTel GenAI spans, read where they say less, or other, than the names suggest.

OpenLIT writes `gen_ai.*` spans that the GenAI fallback would mostly read, but not all of them mean what
their operation says, so its spans are recognised by their instrumentation scope and read here:

- Its OpenAI Agents SDK `TracingProcessor` maps every SDK span type it does not know to `invoke_agent`
  (`get_operation_type`'s default), so the SDK's per-run `task` and per-turn `turn` spans (openai-agents
  0.20+) become nameless `invoke_agent` spans, and a handoff, a guardrail and a custom span become
  `invoke_agent <name>` spans: read as runs they would split each run into one per turn and add a run per
  handoff. Only the SDK's agent spans carry `gen_ai.agent.id` (`_set_agent_attributes`): those are runs.
- Its `openai` client instrumentation lists a Responses API response's calls with the output item's `id`
  (`fc_...`), which no tool span or tool result carries, as the `tool_call` part ids, and the `call_id`s
  only in the comma-joined `gen_ai.tool.call.id`. A non-streamed Responses API span keeps the *last*
  `function_call` item of the response only (`process_response_response` reassigns the list per item): it cannot
  say how many calls the response issued, so its calls are not read.
- Its manual tracing (`openlit.start_trace(name)`, `@openlit.trace`, scope `openlit`) is how a hand-written
  agent loop marks its runs: `start_trace` is a run.
- LangGraph (`openlit.instrumentation.langgraph`): a graph run is the `invoke_workflow <graph>` span its
  `Pregel.invoke`/`ainvoke`/`stream`/`astream` wrappers open (`gen_ai.workflow.name`); they suppress themselves
  inside a running graph (`_LANGGRAPH_SUPPRESS_KEY`), so a graph invoked by a tool of another graph has no run
  span (its run is inferred under the tool span). Its `StateGraph.add_node` wrapper opens `invoke_agent <node>`
  with `gen_ai.agent.id` = the node's name for every *step* of every node but tool nodes: no run.
- LangChain (`openlit.instrumentation.langchain`, its callback handler): a chain becomes `invoke_agent <name>`
  (with `gen_ai.agent.id` = its LangChain run id) when its name or class path contains "agent"
  (`detect_observation_type`): the graph's root chain when the graph is so named, but also every step of
  `create_react_agent`'s `agent` node, so no run either. Under a tool span these chain spans are steps
  (`is_step`): a graph a tool invoked, which has no run span, is one run inferred at the tool span, not one per
  step. Its chat spans are ended by `on_llm_end`, which under `ainvoke`/`astream` raises first (resetting its
  `_framework_llm_span_active` context token, made in another context) and swallows the error, so they end only when
  a parent span's `_end_span` ends its children: the root chain's when the graph's name says "agent", a tool's for a
  graph the tool ran, and none for a top-level graph named otherwise, whose chat spans are never exported (their
  httpx children are, with a missing parent). Nothing on the run span tells `ainvoke` from `invoke`, so a LangGraph
  run with no model span of its own is flagged incomplete (`RunInfo.needs_model`): read from its tool spans alone,
  it would miss the calls no tool ran. A tool span's `gen_ai.tool.call.arguments` is `str()` of the arguments (a
  Python repr, read with `ast.literal_eval`, and the model's own text wins); its `gen_ai.tool.call.id` starts as
  the LangChain run id and becomes the model's call id only when the tool returns a `ToolMessage` (`on_tool_end`),
  so a failed call carries the run id: only an id the result names (`tool_call_id='...'`) is kept. Its chat spans
  list every call with its id (LangChain's `tool_calls`, Chat Completions and Responses API alike).
- CrewAI (`openlit.instrumentation.crewai`, wrappers of CrewAI methods): a run is `Task._execute_core`'s
  `invoke_agent <role>` or `Agent.kickoff`'s, the only spans with `gen_ai.agent.id` (`_set_task_attributes`,
  `_set_agent_attributes`; the span name is made before the task runs, so a hierarchical crew's manager task is
  `invoke_agent agent`, its attributes naming the manager). Its `Flow._execute_method` wrapper writes
  `invoke_agent <method>` for every step of every Flow, CrewAI's own agent executor (an `AgentExecutor` flow
  under each run) included: no run. A tool span is `BaseTool.run`'s `execute_tool <tool name>` (CrewAI's name,
  not the sanitized one the model calls), its arguments `json.dumps` of the keyword arguments, no call id; the
  `@tool` decorator's `Tool` overrides `run`, so such tools have no span (their calls are in the model's output
  only). CrewAI's delegation tools run the coworker inside their span (no run span of its own): their
  arguments' `coworker` names the run inferred there. The run span's `gen_ai.tool.definitions`
  (`_set_tool_definitions`) are not the tools the model was offered: the agent's `tools` (not the task's own tools
  nor the delegation tools CrewAI adds, which it offers instead), cut at ten, under CrewAI's names (the model calls
  `sanitize_tool_name`'s: `Get Weather` is `get_weather`). As a catalog they would make a model-only call of a tool
  the model had a failure (`unknown_tool`): not read. CrewAI answers a call of a tool it lacks `Tool not found`,
  which says it (`model_calls.CREWAI_REFUSAL`).
- smolagents (`openlit.instrumentation.smolagents`): a run is `MultiStepAgent.run`'s `invoke_agent <agent>`, with
  `gen_ai.agent.id`; its steps are `invoke_agent <agent> step_<n>` without one: no runs. A tool span's
  `gen_ai.tool.call.id` is a tool argument named like an id, else a fresh uuid4 (`_resolve_tool_call_id`), never
  the model's call id: not read (the call is matched to the model's by name and arguments).
- Agno (`openlit.instrumentation.agno`, wrappers of Agno methods): a run is `Agent.run`/`arun`/`continue_run`'s
  `invoke_agent <agent>`, or a team's `Team.run`/`arun` `invoke_workflow <team>` (`gen_ai.workflow.name`,
  `gen_ai.agno.team.agents`); a `Workflow`'s `invoke_workflow` (no team members) is not a run (its agents' runs
  are). A tool span is `FunctionCall.execute`'s `execute_tool <tool>` with `gen_ai.tool.call.id` = Agno's call id
  (the model's, on Chat Completions) and `gen_ai.tool.call.arguments` (content capture only); a failure Agno
  caught is status ERROR with `error.type` = the error's *message* (read as `_OTHER`). The sync `Agent.run`/
  `Team.run` wrapper ends its span when `run` returns: a streamed run returns an iterator, so the span ends
  before the run starts, without `gen_ai.response.id` (the run id of the `RunOutput` it would have returned),
  and the run's model and tool spans, made as the caller iterates, are not under it (roots of other traces, or
  under whatever span the caller has current): such a run is flagged incomplete, and a tool span with no run
  span above it is dropped rather than made a run of its own (`ToolRead.needs_run`). `arun(stream=True)` is
  wrapped whole (its span stays open while the caller iterates).
- pydantic-ai (`openlit.instrumentation.pydantic_ai`): a run is `Agent.run`'s `execute_task <agent>` (`run_sync`'s
  `invoke_agent <agent>` around it has operation `execute_task` too: one run, two layers). Its graph-node wrappers
  (`Agent.iter`, `UserPromptNode.run`, `ModelRequestNode.run`, `CallToolsNode.run`) open their span around the
  *creation* of a coroutine, so it ends before the node runs: `invoke_workflow`, `user_prompt_processing`,
  `model_request` and `execute_tool <model>` spans of a few microseconds, the last one per model response (text
  answers too), with no tool name, arguments or id: not tools. There are no tool spans: the calls are the `openai`
  chat spans' (model-only), their outcomes the tool messages of the next request (see `model_calls`: pydantic-ai's
  retry prompt says a call failed). pydantic-ai's output tool (`final_result`, `final_result_<type>` with several
  output types: `_output.py`) is listed there like any call, and nothing on OpenLIT's spans says it is one: the
  request's tool definitions (pydantic-ai's `kind='output'`, its description `The final response which ends this
  conversation`) go to OpenLIT's inference event only, not to the span, on Chat Completions. So only the name tells:
  a call so named of a pydantic-ai run is its structured answer, not counted (`output_tools_of`; an agent's own tool
  named so would be missed, an output tool named otherwise (`ToolOutput(name=...)`) read as the agent's call).
"""

from __future__ import annotations

import ast
import re
from typing import Any, Final

from toolscore.collector.extract.conventions.base import (
    Gate,
    IssuedCall,
    IssuedCalls,
    Read,
    Role,
    RunInfo,
    ToolRead,
)
from toolscore.collector.extract.conventions.common import (
    ERROR_TYPE_OTHER,
    genai_issued_calls,
    load_json,
    message_text,
    string,
)
from toolscore.collector.extract.conventions.genai import (
    EXECUTE_TOOL,
    INVOKE_AGENT,
    OPERATION,
    OUTPUT_MESSAGES,
    TOOL_NAME,
    read_genai_run,
    read_genai_tool,
    read_genai_tools,
)
from toolscore.collector.spans import SpanRecord, StatusCode

__all__ = ["OpenLITExtractor"]

# --- Names read (openlit 1.45 Python SDK; scopes are its tracers' module names) --------------------
# scope openlit                 manual tracing (openlit/__init__.py):
#   start_trace(name)           span `<name>`, no GenAI operation; `TracedSpan.set_result` writes the result
#                               to gen_ai.output.messages (plain text): RUN, named by the span
#   @openlit.trace              span `<function>` with function.args / function.kwargs (Python reprs) and the
#                               return value in gen_ai.output.messages: not recognised (any function at all);
#                               when the function raises, neither is set, but the exception is recorded twice
#                               (`record_exception`, then `start_as_current_span`'s exit): not recognised either
# scope openlit.instrumentation.openai_agents   (its TracingProcessor, processor.py / utils.py)
#   invoke_workflow <trace>     the SDK trace: OTHER
#   invoke_agent <agent>        the SDK agent span: gen_ai.agent.name, gen_ai.agent.id (only this span type
#                               has it), gen_ai.tool.definitions (names only): RUN
#   invoke_agent <to_agent>     a handoff (gen_ai.agent.name = the target, gen_ai.agent.source), a guardrail or
#                               custom span (gen_ai.agent.name), or an SDK span type OpenLIT does not know
#                               (`task`, `turn`: span `invoke_agent`, no name): OTHER
#   execute_tool <tool>         a function span: gen_ai.tool.name, gen_ai.tool.call.arguments (the SDK's JSON
#                               text), gen_ai.tool.call.result; no call id; a failure: status ERROR and
#                               error.type = the SDK error's *message* (error type `_OTHER`): TOOL
#   execute_tool mcp_list_tools an MCP server's tool listing (gen_ai.tool.name=mcp_list_tools): OTHER
#   create_agent <agent>, chat: OTHER (the SDK's response/generation spans are skipped: its openai
#                               instrumentation writes the model calls)
# scope openlit.instrumentation.openai   (utils.py; operation chat, `chat <model>`)
#   calls                       gen_ai.output.messages parts {"type": "tool_call", "id", "name",
#                               "arguments" (decoded)}, also comma-joined in gen_ai.tool.name /
#                               gen_ai.tool.call.id / gen_ai.tool.args
#   openai.api.type=responses   part ids are output item ids (fc_...): the call ids are gen_ai.tool.call.id's,
#                               in the same order; gen_ai.request.stream=false: only the last function_call
#                               of the response is listed: its calls are not read
#   tools offered               gen_ai.tool.definitions (Responses API with chat-format tools only)
# scope openlit.instrumentation.langgraph   (langgraph.py, async_langgraph.py, utils.py)
#   invoke_workflow <graph>     Pregel.invoke/ainvoke ([...] stream: `invoke_workflow <graph> stream`):
#                               gen_ai.workflow.name, gen_ai.output.messages (the assistant texts, JSON parts);
#                               none for a graph run inside another (suppressed): RUN, named by the workflow;
#                               incomplete when no model span of its own is under it (chat spans lost, see notes)
#   invoke_agent <node>         a step of a node (StateGraph.add_node wrapper; gen_ai.agent.id = node name): OTHER
#   create_agent <graph>, retrieval graph_state, invoke_workflow checkpoint_* (no workflow name): OTHER
# scope openlit.instrumentation.langchain   (__init__.py: OpenLITCallbackHandler; utils.py common_chat_logic)
#   invoke_agent <chain>        a chain whose name/class path says "agent" (a graph's root chain, every step of
#                               its `agent` node): OTHER
#   invoke_workflow <chain>     a top-level chain outside a LangGraph wrapper: OTHER
#   execute_tool <tool>         gen_ai.tool.call.arguments = str(tool input) (Python repr), gen_ai.tool.call.id
#                               = run id, replaced by the ToolMessage's tool_call_id on_tool_end,
#                               gen_ai.tool.call.result = str(output); a failure: status ERROR, error.type =
#                               the exception's class name, the run id stays: TOOL
#   chat <model>                gen_ai.output.messages tool_call parts {"id", "name", "arguments" (JSON
#                               text)} from the message's tool_calls: LLM
# scope openlit.instrumentation.crewai   (crewai.py general_wrap, utils.py process_crewai_response)
#   invoke_agent <role>         Task._execute_core (`invoke_agent agent` when the task had no agent yet, as a
#                               hierarchical crew's) or Agent.kickoff: gen_ai.agent.name (role), gen_ai.agent.id,
#                               gen_ai.input.messages (the task description), gen_ai.output.messages;
#                               gen_ai.tool.definitions = agent.tools[:10] under CrewAI's names: not read: RUN
#   invoke_agent <method>       Flow._execute_method, every step of a Flow (CrewAI's AgentExecutor too); no
#                               gen_ai.agent.id: OTHER
#   execute_tool <tool>         BaseTool.run: gen_ai.tool.name (CrewAI's name), gen_ai.tool.call.arguments =
#                               json.dumps(kwargs) (or of the positional arguments), gen_ai.tool.call.result =
#                               str(result), no call id; a failure: status ERROR (handle_exception): TOOL
#   invoke_workflow <crew|flow> Crew.kickoff, Flow.kickoff (AgentExecutor), create_agent <role>: OTHER
# scope openlit.instrumentation.smolagents   (smolagents.py, utils.py)
#   invoke_agent <agent>        MultiStepAgent.run: gen_ai.agent.name, gen_ai.agent.id (id() of the agent): RUN
#   invoke_agent <agent> step_N a step (ToolCallingAgent._step_stream; gen_ai.smolagents.step_number), no
#                               gen_ai.agent.id: OTHER
#   execute_tool <tool>         ToolCallingAgent.execute_tool_call (or Tool.__call__): gen_ai.tool.name,
#                               gen_ai.tool.call.arguments (JSON), gen_ai.tool.call.result; gen_ai.tool.call.id
#                               = `_resolve_tool_call_id`: a tool argument named tool_call_id/id/call_id/
#                               tool_use_id, else a fresh uuid4, never the model's id: not read. final_answer is
#                               smolagents' built-in final tool: TOOL
#   create_agent <agent>        MultiStepAgent.__init__: OTHER
# scope openlit.instrumentation.agno   (__init__.py, agno.py general_wrap, async_agno.py, utils.py)
#   invoke_agent <agent>        Agent.run / arun / continue_run / acontinue_run: gen_ai.agent.name, gen_ai.agent.id
#                               (the agent's id, when it has one), gen_ai.tool.definitions (names, descriptions),
#                               gen_ai.output.messages, gen_ai.response.id = the RunOutput's run_id: RUN. Sync
#                               wrapper, stream=True: the span ends when run returns its iterator, no
#                               gen_ai.response.id, the run's spans are not under it: RUN, incomplete
#   invoke_workflow <team>      Team.run / arun: gen_ai.workflow.name, gen_ai.agno.team.agents (member names, JSON),
#                               gen_ai.response.id (TeamRunOutput.run_id): RUN (incomplete as above when streamed
#                               through the sync wrapper)
#   invoke_workflow <workflow>  Workflow.run_workflow / arun (no gen_ai.agno.team.agents): OTHER
#   execute_tool <tool>         FunctionCall.execute / aexecute: gen_ai.tool.name, gen_ai.tool.call.id (Agno's
#                               FunctionCall.call_id: the model's id on Chat Completions, the output item id fc_...
#                               on the Responses API), gen_ai.tool.call.arguments (JSON, content capture only),
#                               gen_ai.tool.call.result; a failure Agno caught (FunctionExecutionResult status
#                               failure): status ERROR, error.type = its error *message*; one that raised
#                               (handle_exception): error.type = the class name and an exception event: TOOL
#   create_agent <agent>        Agent.__init__ (a trace of its own): OTHER
# scope openlit.instrumentation.pydantic_ai   (__init__.py, pydantic_ai.py, async_pydantic_ai.py, utils.py)
#   execute_task <agent>        Agent.run (common_agent_run_async): gen_ai.operation.name execute_task,
#                               gen_ai.agent.name, gen_ai.output.messages = the answer as plain text: RUN
#   invoke_agent <agent>        Agent.run_sync (common_agent_run), operation execute_task too, around Agent.run's
#                               span (same agent: one run, folded as a layer): RUN
#   invoke_workflow, user_prompt_processing, model_request, execute_tool <model>
#                               Agent.iter and the graph nodes (common_graph_execution, common_internal_node): spans
#                               ended when the wrapped coroutine is created, before it runs; execute_tool is
#                               CallToolsNode (one per model response), no gen_ai.tool.*: OTHER
#   create_agent <agent>        Agent.__init__: OTHER
#   (openai chat spans)         the calls; `final_result`, `final_result_<type>` are pydantic-ai's output tools
#                               (told by name only: no tool definitions on the span): not calls of the run
# other openlit.instrumentation.* scopes: not claimed here (the GenAI fallback reads them)

SCOPE_MANUAL: Final = "openlit"
SCOPE_AGENTS: Final = "openlit.instrumentation.openai_agents"
SCOPE_OPENAI: Final = "openlit.instrumentation.openai"
MANUAL_FUNCTION_KEYS: Final = ("function.args", "function.kwargs")
AGENT_ID: Final = "gen_ai.agent.id"
MCP_LIST_TOOLS: Final = "mcp_list_tools"
API_TYPE: Final = "openai.api.type"
STREAMED: Final = "gen_ai.request.stream"
FLAT_CALL_IDS: Final = "gen_ai.tool.call.id"
CHAT: Final = "chat"
SCOPE_LANGGRAPH: Final = "openlit.instrumentation.langgraph"
SCOPE_LANGCHAIN: Final = "openlit.instrumentation.langchain"
SCOPE_CREWAI: Final = "openlit.instrumentation.crewai"
SCOPE_SMOLAGENTS: Final = "openlit.instrumentation.smolagents"
SCOPE_AGNO: Final = "openlit.instrumentation.agno"
AGNO_TEAM_MEMBERS: Final = "gen_ai.agno.team.agents"
"""Set on a `Team.run`/`arun` span only (`_set_team_attributes`): tells a team's run from a `Workflow`'s span."""
RESPONSE_ID: Final = "gen_ai.response.id"
SCOPE_PYDANTIC_AI: Final = "openlit.instrumentation.pydantic_ai"
EXECUTE_TASK: Final = "execute_task"
"""The operation of OpenLIT's `Agent.run`/`run_sync` spans (pydantic-ai), whatever the span's name."""
AGENT_NAME: Final = "gen_ai.agent.name"
SMOLAGENTS_FINAL: Final = "final_answer"
"""smolagents' built-in tool that ends a run: a real call, flagged `final`."""
CREWAI_DELEGATION_TOOLS: Final = frozenset({"Delegate work to coworker", "Ask question to coworker"})
"""CrewAI's tools that run a coworker agent inside their span (`allow_delegation=True`); `coworker` names it."""
INVOKE_WORKFLOW: Final = "invoke_workflow"
WORKFLOW_NAME: Final = "gen_ai.workflow.name"
TOOL_RESULT: Final = "gen_ai.tool.call.result"
MAX_REPR_CHARS: Final = 1 << 16
"""Longer Python reprs are left as text (the model's arguments stand in) rather than evaluated."""
PYDANTIC_AI_OUTPUT_TOOL: Final = re.compile(r"final_result(?:_[A-Za-z0-9_-]+)?")
"""pydantic-ai's output tool names (`_output.py`, `OutputToolset.build`): `DEFAULT_OUTPUT_TOOL_NAME` `final_result`,
with several output types `final_result_<type name>` (sanitized by `TOOL_NAME_SANITIZER`), a clash `..._<n>`. OpenLIT's
spans hold no tool definitions on Chat Completions (only its inference event does), so the name alone tells."""
_ID_IN_RESULT: Final = re.compile(r"""tool_call_id=(?:'([^']*)'|"([^"]*)")""")


def read_openlit_issued(span: SpanRecord) -> IssuedCalls:
    """The calls one of OpenLIT's `openai` model spans lists, in the model's order (see the module's notes)."""
    attrs = span.attributes
    calls = genai_issued_calls(attrs.get(OUTPUT_MESSAGES))
    if attrs.get(API_TYPE) != "responses" or not calls:
        return IssuedCalls(calls)
    if attrs.get(STREAMED) is not True:
        return IssuedCalls(partial=True)  # the last function_call only: how many the response issued is unknown
    flat = string(attrs, FLAT_CALL_IDS)
    ids: list[str | None] = [i.strip() or None for i in flat.split(",")] if flat else []
    if len(ids) != len(calls):
        ids = [None] * len(calls)  # not the item ids: no tool span or tool result carries those
    return IssuedCalls([IssuedCall(call_id, call.name, call.args) for call, call_id in zip(calls, ids, strict=True)])


def _repr_args(text: Any) -> Any:
    """A LangChain tool input as OpenLIT records it (`str()` of the dict the model's arguments decoded to): the
    dict again, or the text as it was (not a dict literal, too long, or cut by OpenLIT's content limit)."""
    if not isinstance(text, str) or not text.startswith("{") or len(text) > MAX_REPR_CHARS:
        return text
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text
    return value if isinstance(value, dict) else text


def read_langchain_tool(span: SpanRecord) -> ToolRead:
    """An `execute_tool` span of OpenLIT's LangChain callback handler (see the module's notes)."""
    read = read_genai_tool(span)
    read.args = _repr_args(read.args)
    read.args_parsed = True  # LangChain's decoded arguments: the model response's own text wins
    result = span.attributes.get(TOOL_RESULT)
    named = _ID_IN_RESULT.search(result) if isinstance(result, str) else None
    if read.call_id is not None and (named is None or read.call_id not in named.groups()):
        read.call_id = None  # the LangChain run id (a failure, or a tool that returned no ToolMessage)
    return read


def read_crewai_tool(span: SpanRecord) -> ToolRead:
    """A `BaseTool.run` span of OpenLIT's CrewAI wrappers (see the module's notes)."""
    read = read_genai_tool(span)
    if read.name in CREWAI_DELEGATION_TOOLS:
        args = load_json(read.args)
        coworker = args.get("coworker") if isinstance(args, dict) else None
        read.delegates_to = coworker if isinstance(coworker, str) and coworker else None
    return read


def read_smolagents_tool(span: SpanRecord) -> ToolRead:
    """An `execute_tool` span of OpenLIT's smolagents wrappers (see the module's notes): its call id is none."""
    read = read_genai_tool(span)
    read.call_id = None  # `_resolve_tool_call_id`: an argument named id/call_id/..., else a fresh uuid4
    read.final = read.name == SMOLAGENTS_FINAL
    return read


def read_agno_tool(span: SpanRecord) -> ToolRead:
    """An `execute_tool` span of OpenLIT's Agno wrappers (see the module's notes)."""
    read = read_genai_tool(span)
    if read.error and not any(event.name == "exception" for event in span.events):
        read.error_type = ERROR_TYPE_OTHER  # the message of the error Agno caught, not a type
    read.needs_run = True  # opened only inside a wrapped run: none above means that run's span had ended
    return read


def read_agno_run(span: SpanRecord) -> RunInfo:
    """An Agno agent or team run span (see the module's notes): incomplete when its wrapper ended it before the run
    (a streamed run through the sync wrapper: no run id, and no error that would explain its absence)."""
    attrs = span.attributes
    info = _workflow_run(span) if attrs.get(OPERATION) == INVOKE_WORKFLOW else read_genai_run(span)
    info.incomplete = RESPONSE_ID not in attrs and span.status_code != StatusCode.ERROR
    return info


def read_pydantic_ai_run(span: SpanRecord) -> RunInfo:
    """`Agent.run`/`run_sync`'s span (see the module's notes): the answer is plain text, not GenAI messages."""
    attrs = span.attributes
    output = attrs.get(OUTPUT_MESSAGES)
    return RunInfo(agent_name=string(attrs, AGENT_NAME), output=output if isinstance(output, str) and output else None)


def _workflow_run(span: SpanRecord) -> RunInfo:
    attrs = span.attributes
    return RunInfo(
        agent_name=string(attrs, WORKFLOW_NAME), output=message_text(attrs.get(OUTPUT_MESSAGES), "assistant")
    )


def read_langgraph_run(span: SpanRecord) -> RunInfo:
    """A LangGraph wrapper's `invoke_workflow <graph>` run (see the module's notes): its chat spans may never have
    been exported, so a run with none of its own is flagged incomplete (`RunInfo.needs_model`)."""
    info = _workflow_run(span)
    info.needs_model = True
    return info


def _manual_run(span: SpanRecord) -> RunInfo:
    output = span.attributes.get(OUTPUT_MESSAGES)
    return RunInfo(agent_name=span.name or None, output=output if isinstance(output, str) and output else None)


class OpenLITExtractor:
    """Spans of OpenLIT's OpenAI Agents SDK processor, its `openai`, LangGraph, LangChain, CrewAI, smolagents, Agno
    and pydantic-ai instrumentations and its manual tracing."""

    name = "openlit"
    gate = Gate(
        scopes=frozenset(
            {
                SCOPE_MANUAL,
                SCOPE_AGENTS,
                SCOPE_OPENAI,
                SCOPE_LANGGRAPH,
                SCOPE_LANGCHAIN,
                SCOPE_CREWAI,
                SCOPE_SMOLAGENTS,
                SCOPE_AGNO,
                SCOPE_PYDANTIC_AI,
            }
        )
    )
    partial_responses = True
    """A non-streamed Responses API span lists one call of several (`IssuedCalls.partial`)."""
    tool_keys = ("gen_ai.tool.definitions",)

    def classify(self, span: SpanRecord) -> Role | None:
        attrs = span.attributes
        scope = span.scope
        if scope == SCOPE_OPENAI:
            return Role.LLM if attrs.get(OPERATION) == CHAT else None
        if scope == SCOPE_AGENTS:
            operation = attrs.get(OPERATION)
            if operation == INVOKE_AGENT:
                return Role.RUN if AGENT_ID in attrs else Role.OTHER
            if operation == EXECUTE_TOOL:
                return Role.OTHER if attrs.get(TOOL_NAME) == MCP_LIST_TOOLS else Role.TOOL
            return Role.OTHER
        if scope == SCOPE_LANGCHAIN:
            operation = attrs.get(OPERATION)
            if operation == EXECUTE_TOOL:
                return Role.TOOL
            return Role.LLM if operation == CHAT else Role.OTHER
        if scope in (SCOPE_CREWAI, SCOPE_SMOLAGENTS):
            operation = attrs.get(OPERATION)
            if operation == INVOKE_AGENT:
                return Role.RUN if AGENT_ID in attrs else Role.OTHER  # else a Flow method's or a smolagents step
            return Role.TOOL if operation == EXECUTE_TOOL else Role.OTHER
        if scope == SCOPE_AGNO:
            operation = attrs.get(OPERATION)
            if operation == INVOKE_AGENT or (operation == INVOKE_WORKFLOW and AGNO_TEAM_MEMBERS in attrs):
                return Role.RUN
            return Role.TOOL if operation == EXECUTE_TOOL else Role.OTHER
        if scope == SCOPE_PYDANTIC_AI:
            return Role.RUN if attrs.get(OPERATION) == EXECUTE_TASK else Role.OTHER
        if scope == SCOPE_LANGGRAPH:
            if attrs.get(OPERATION) == INVOKE_WORKFLOW and string(attrs, WORKFLOW_NAME) is not None:
                return Role.RUN
            return Role.OTHER
        if scope == SCOPE_MANUAL:
            if any(key in attrs for key in MANUAL_FUNCTION_KEYS) or OPERATION in attrs:
                return None
            if sum(event.name == "exception" for event in span.events) > 1:
                return None  # a failed `@openlit.trace` span: it records the exception, then its `with` again
            return Role.RUN
        return None

    def is_step(self, span: SpanRecord) -> bool:
        """A LangChain chain span (`invoke_agent`/`invoke_workflow` of the callback handler): under a tool span,
        one step of the graph the tool ran (a node such as `create_react_agent`'s `agent`, or the graph's root
        chain when its name says "agent"; the handler writes both alike), so the tool span stands for that run.
        Likewise a CrewAI flow or flow-method span (no run: see `classify`) under CrewAI's delegation tool, which
        runs the coworker through `Agent.execute_task` (not wrapped) and so its `AgentExecutor` flow."""
        scope = span.scope
        if scope == SCOPE_CREWAI:
            # CrewAI's own `AgentExecutor` flow and its method steps, under the delegation tool that ran a coworker
            operation = span.attributes.get(OPERATION)
            return operation == INVOKE_WORKFLOW or (operation == INVOKE_AGENT and AGENT_ID not in span.attributes)
        return scope == SCOPE_LANGCHAIN and span.attributes.get(OPERATION) in (INVOKE_AGENT, INVOKE_WORKFLOW)

    def read(self, span: SpanRecord, role: Role) -> Read:
        scope = span.scope
        if role is Role.LLM:
            return (
                read_openlit_issued(span)
                if scope == SCOPE_OPENAI
                else IssuedCalls(genai_issued_calls(span.attributes.get(OUTPUT_MESSAGES)))
            )
        if role is Role.RUN:
            if scope == SCOPE_LANGGRAPH:
                return read_langgraph_run(span)
            if scope == SCOPE_AGNO:
                return read_agno_run(span)
            if scope == SCOPE_PYDANTIC_AI:
                return read_pydantic_ai_run(span)
            return _manual_run(span) if scope == SCOPE_MANUAL else read_genai_run(span)
        if scope == SCOPE_LANGCHAIN:
            return read_langchain_tool(span)
        if scope == SCOPE_CREWAI:
            return read_crewai_tool(span)
        if scope == SCOPE_SMOLAGENTS:
            return read_smolagents_tool(span)
        if scope == SCOPE_AGNO:
            return read_agno_tool(span)
        read = read_genai_tool(span)
        if read.error:  # the SDK error's message, not a type
            read.error_type = ERROR_TYPE_OTHER
        return read

    def output_tools_of(self, span: SpanRecord, names: list[str | None]) -> frozenset[str]:
        """Of the names a response of the run `span` called, pydantic-ai's output tools (see the module's notes): a
        call of theirs is the run's structured answer, not a call of the agent's (`IssuedCalls.output_tools`)."""
        if span.scope != SCOPE_PYDANTIC_AI:
            return frozenset()
        return frozenset(n for n in names if isinstance(n, str) and PYDANTIC_AI_OUTPUT_TOOL.fullmatch(n))

    def read_tools(self, span: SpanRecord, role: Role) -> list[Any]:
        if span.scope == SCOPE_CREWAI:
            return []  # not the tools the model was offered (see the module's notes)
        return read_genai_tools(span, role)
