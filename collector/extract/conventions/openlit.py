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
"""

from __future__ import annotations

from typing import Any, Final

from toolscore.collector.extract.conventions.base import Gate, IssuedCall, IssuedCalls, Read, Role, RunInfo
from toolscore.collector.extract.conventions.common import ERROR_TYPE_OTHER, genai_issued_calls, string
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
from toolscore.collector.spans import SpanRecord

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


def _manual_run(span: SpanRecord) -> RunInfo:
    output = span.attributes.get(OUTPUT_MESSAGES)
    return RunInfo(agent_name=span.name or None, output=output if isinstance(output, str) and output else None)


class OpenLITExtractor:
    """Spans of OpenLIT's OpenAI Agents SDK processor, its `openai` instrumentation and its manual tracing."""

    name = "openlit"
    gate = Gate(scopes=frozenset({SCOPE_MANUAL, SCOPE_AGENTS, SCOPE_OPENAI}))
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
        if scope == SCOPE_MANUAL:
            if any(key in attrs for key in MANUAL_FUNCTION_KEYS) or OPERATION in attrs:
                return None
            if sum(event.name == "exception" for event in span.events) > 1:
                return None  # a failed `@openlit.trace` span: it records the exception, then its `with` again
            return Role.RUN
        return None

    def read(self, span: SpanRecord, role: Role) -> Read:
        if role is Role.LLM:
            return read_openlit_issued(span)
        if role is Role.RUN:
            return _manual_run(span) if span.scope == SCOPE_MANUAL else read_genai_run(span)
        read = read_genai_tool(span)
        if read.error:  # the SDK error's message, not a type
            read.error_type = ERROR_TYPE_OTHER
        return read

    def read_tools(self, span: SpanRecord, role: Role) -> list[Any]:
        return read_genai_tools(span, role)
