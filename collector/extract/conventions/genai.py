"""OpenTelemetry GenAI semantic conventions: `execute_tool`, `invoke_agent` and inference spans.

The generic fallback: frameworks with their own module (pydantic-ai, Google ADK, Strands, Mastra,
OpenLLMetry) are asked first and add what they know; everything else that speaks `gen_ai.*` is read
here, including the Vercel AI SDK 7 `@ai-sdk/otel` `OpenTelemetry` integration (scope `gen_ai`).
"""

from __future__ import annotations

import ast
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
from toolscore.collector.sources.log_events import BODY_KEY
from toolscore.collector.spans import SpanRecord, StatusCode

__all__ = [
    "TOOL_KEYS",
    "GenAIExtractor",
    "openai_agents_repr_calls",
    "read_genai_run",
    "read_genai_tool",
    "read_genai_tools",
    "tool_args",
]

# --- Names read (semantic-conventions v1.38+ / semantic-conventions-genai) -------------------------
# span marker      gen_ai.operation.name = execute_tool | invoke_agent | chat | text_completion |
#                  generate_content (others, e.g. create_agent, invoke_workflow, agent_step: OTHER)
# tool span        gen_ai.tool.name, gen_ai.tool.call.id, gen_ai.tool.call.arguments,
#                  gen_ai.tool.call.result, error.type, status, `exception` event exception.type
# run span         gen_ai.agent.name, gen_ai.input.messages, gen_ai.output.messages
#                  (JSON: [{"role", "parts": [{"type": "text", "content"} | {"type": "tool_call", ...}]}])
# inference span   gen_ai.output.messages parts {"type": "tool_call", "id", "name", "arguments"}
# --- Older spellings ----------------------------------------------------------------------------
# <= v1.37         no gen_ai.tool.call.arguments/result: gen_ai.tool.arguments, gen_ai.tool.input,
#                  gen_ai.tool.result, gen_ai.tool.output (vendor spellings seen before v1.38)
# pre-operation    span named `execute_tool <tool>` with gen_ai.tool.name and no gen_ai.operation.name
# indexed (legacy) gen_ai.completion.<i>.tool_calls.<j>.id | name | arguments on inference spans
# --- Events of the inference span (the default form: log records joined to the span, `log_events`) ---
# gen_ai.choice    body {index, finish_reason, message: {role, content,
#                  tool_calls: [{id, type, function: {name, arguments (JSON text; absent without content capture)}}]}}
#                  (or that map as JSON text: Semantic Kernel logs it through Python's `logging`, the name
#                  in the `event.name` attribute)
# gen_ai.client.inference.operation.details   attribute gen_ai.output.messages (as the span attribute)
# not read         gen_ai.assistant.message: on a chat span it is the input history, the calls of earlier
#                  responses (read, they would count again); gen_ai.user/system/tool.message: inputs
# Agent Framework  (scope `agent_framework`) placeholders on execute_tool spans: arguments "None" when the tool
#                  received none (`json.dumps(kwargs) if kwargs else "None"`), call id "unknown" when it had none
# OpenAI Agents   (scope `opentelemetry.instrumentation.openai_agents`, OTel contrib's
#  contrib v2     opentelemetry-instrumentation-openai-agents-v2 0.1.0, span_processor.py): the SDK trace's root span
#                 (`on_trace_start`, kind SERVER) says invoke_agent too: not a run (OTHER); the agents' own
#                 `invoke_agent <agent>` spans are CLIENT. `execute_tool` spans carry no call id; the `chat` span's
#                 output message writes each non-text output item as a text part `str(item)`
#                 (`_normalize_output_messages_to_role_parts`): a Responses `ResponseFunctionToolCall(arguments=...,
#                 call_id=..., name=..., ...)` repr, or a chat completions message's `model_dump()` dict repr with
#                 `'tool_calls': [{'id', 'function': {'name', 'arguments'}}]`, or (streamed chat completions) the
#                 SDK's `Response` dump dict repr with `function_call` items in `output`: read as Python literals
#                 (`ast`, never evaluated) for the calls' ids and order (`openai_agents_repr_calls`, called by the
#                 `traceloop` reader, which owns the scope's model spans)
# tools offered   gen_ai.tool.definitions (JSON array of {"type": "function", "name", "description",
#                 "parameters"}) on inference and agent spans; gen_ai.tool.description on tool spans

OPERATION: Final = "gen_ai.operation.name"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
ARGS_KEYS: Final = ("gen_ai.tool.call.arguments", "gen_ai.tool.arguments", "gen_ai.tool.input")
RESULT_KEYS: Final = ("gen_ai.tool.call.result", "gen_ai.tool.result", "gen_ai.tool.output")
AGENT_NAME: Final = "gen_ai.agent.name"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
LEGACY_COMPLETION: Final = "gen_ai.completion"
CHOICE_EVENT: Final = "gen_ai.choice"
DETAILS_EVENT: Final = "gen_ai.client.inference.operation.details"
INFERENCE_OPERATIONS: Final = frozenset({"chat", "text_completion", "generate_content"})
TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
TOOL_DESCRIPTION: Final = "gen_ai.tool.description"
TOOL_KEYS: Final = (TOOL_DEFINITIONS,)
EXECUTE_TOOL: Final = "execute_tool"
# Role members as module constants, read per span (see `runs`: each `Role.X` costs a lookup hook on Python 3.11).
_RUN, _TOOL, _LLM, _OTHER = Role.RUN, Role.TOOL, Role.LLM, Role.OTHER
INVOKE_AGENT: Final = "invoke_agent"
AGENT_FRAMEWORK_SCOPE: Final = "agent_framework"
"""Microsoft Agent Framework's tracer (`agent_framework.observability.get_tracer()`)."""
AGENT_FRAMEWORK_NO_ARGS: Final = "None"
"""Agent Framework's `gen_ai.tool.call.arguments` for a tool that received no arguments (Python's text, not JSON)."""
OPENAI_AGENTS_SCOPE: Final = "opentelemetry.instrumentation.openai_agents"
"""The OpenAI Agents SDK's instrumentations: OTel contrib's `-v2` (read here) and OpenLLMetry's (`traceloop`)."""
SPAN_KIND_SERVER: Final = 2
AGENT_HANDOFF: Final = "agent_handoff"
"""The contrib instrumentation's operation for the SDK's `HandoffSpanData`: the call of the handoff tool the model
issued (`gen_ai.handoff.from_agent` / `to_agent`). The tool's name, call id and arguments are only in the model's
response, so the span is read as a handoff (`ToolRead.handoff`), which takes its call from that response."""
REPR_CALL: Final = "ResponseFunctionToolCall("
"""How `str(item)` starts for a Responses API function call (openai's pydantic model repr)."""
REPR_TOOL_CALLS: Final = "'tool_calls': ["
"""What `str(message.model_dump())` holds for a chat completions message that called tools."""
REPR_FUNCTION_CALL: Final = "'type': 'function_call'"
"""What `str(response.model_dump())` holds for a function call item (the SDK's streamed chat completions span
output is the Responses-shaped `Response` it built from the stream)."""
REPR_MARKERS: Final = (REPR_CALL, REPR_TOOL_CALLS, REPR_FUNCTION_CALL)
AGENT_FRAMEWORK_NO_CALL_ID: Final = "unknown"
"""Agent Framework's `gen_ai.tool.call.id` for a tool run without a call id."""


def tool_args(attrs: Any, keys: tuple[str, ...] = ARGS_KEYS) -> Any:
    """The first argument attribute present, or NOT_CAPTURED (content capture is opt-in)."""
    for key in keys:
        if key in attrs:
            return attrs[key]
    return NOT_CAPTURED


def _first(attrs: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in attrs:
            return attrs[key]
    return None


def read_genai_tool(span: SpanRecord) -> ToolRead:
    """A GenAI `execute_tool` span's values; the name falls back to the span name's suffix."""
    attrs = span.attributes
    name = attrs.get(TOOL_NAME)  # `string`, inlined: read for every tool span
    if not (name.__class__ is str or isinstance(name, str)) or not name:
        if attrs.get(OPERATION) == AGENT_HANDOFF:
            return ToolRead(name=None, handoff=True)
        name = span.name[len(EXECUTE_TOOL) + 1 :] if span.name.startswith(EXECUTE_TOOL + " ") else None
    call_id = attrs.get(TOOL_CALL_ID)
    if not (call_id.__class__ is str or isinstance(call_id, str)) or not call_id:
        call_id = None
    args = tool_args(attrs)
    if span.scope == AGENT_FRAMEWORK_SCOPE:
        args, call_id = _agent_framework_placeholders(args, call_id)
    # `error_of`'s answer for a span that neither failed nor says how, without the call: most tool spans
    error, error_type = (
        (False, None) if span.status_code != StatusCode.ERROR and "error.type" not in attrs else error_of(span)
    )
    return ToolRead(
        name=name or span.name,
        args=args,
        call_id=call_id,
        result=_first(attrs, RESULT_KEYS),
        error=error,
        error_type=error_type,
        description=attrs.get(TOOL_DESCRIPTION),
    )


def _agent_framework_placeholders(args: Any, call_id: str | None) -> tuple[Any, str | None]:
    """Agent Framework's placeholders read for what they stand for: its tool span writes the arguments as
    `json.dumps(kwargs) if kwargs else "None"` (no arguments: `{}`, not text that is not JSON) and the call id
    as `tool_call_id or "unknown"` (no id: none, not an id every such call shares)."""
    if args == AGENT_FRAMEWORK_NO_ARGS:
        args = {}
    if call_id == AGENT_FRAMEWORK_NO_CALL_ID:
        call_id = None
    return args, call_id


def read_genai_run(span: SpanRecord) -> RunInfo:
    """An `invoke_agent` span's agent name, last user text and last assistant text.

    The name is `gen_ai.agent.name`, else the span's name after `invoke_agent ` (the conventions name the
    span `invoke_agent {gen_ai.agent.name}`, so an emitter that drops the attribute still says it there).
    """
    attrs = span.attributes
    name = string(attrs, AGENT_NAME)
    if name is None and span.name.startswith(INVOKE_AGENT + " "):
        name = span.name[len(INVOKE_AGENT) + 1 :] or None
    return RunInfo(
        agent_name=name,
        input=message_text(attrs.get(INPUT_MESSAGES), "user"),
        output=message_text(attrs.get(OUTPUT_MESSAGES), "assistant"),
    )


def read_genai_issued(span: SpanRecord) -> IssuedCalls:
    """The tool calls of an inference span, in the model's order: from `gen_ai.output.messages`, else from
    its output events (the default form, `_event_calls`), else from the legacy indexed attributes."""
    attrs = span.attributes
    messages = attrs.get(OUTPUT_MESSAGES)
    if messages is not None:
        return IssuedCalls(genai_issued_calls(messages))
    if span.events:
        calls = _event_calls(span)
        if calls is not None:
            return IssuedCalls(calls)
    return IssuedCalls(indexed_issued_calls(attrs, LEGACY_COMPLETION, ".tool_calls", ("id", "name", "arguments")))


def openai_agents_repr_calls(messages: Any) -> list[IssuedCall]:
    """The calls the OpenAI Agents contrib instrumentation wrote as `str(item)` text parts (see the header), in the
    model's order: each part that is a `ResponseFunctionToolCall(...)` repr, a chat message dict repr with
    `tool_calls`, or a `Response` dict repr with `function_call` items in `output`, parsed as Python literals with
    `ast` (nothing is evaluated); a part, or a field, that is not a literal lists no call, or no value. Its
    model spans share their scope with OpenLLMetry's processor, so `traceloop` reads them and calls this."""
    if not isinstance(messages, str) or not any(marker in messages for marker in REPR_MARKERS):
        return []
    decoded = load_json(messages)
    calls: list[IssuedCall] = []
    for message in decoded if isinstance(decoded, list) else ():
        parts = message.get("parts") if isinstance(message, Mapping) else None
        for part in parts if isinstance(parts, list) else ():
            text = part.get("content") if isinstance(part, Mapping) and part.get("type") == "text" else None
            if isinstance(text, str):
                calls.extend(_repr_calls(text))
    return calls


def _repr_calls(text: str) -> list[IssuedCall]:
    if text.startswith(REPR_CALL):
        try:
            node = ast.parse(text, mode="eval").body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return []
        if not isinstance(node, ast.Call):
            return []
        fields: dict[str, Any] = {}
        for keyword in node.keywords:
            try:
                fields[keyword.arg or ""] = ast.literal_eval(keyword.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue  # a nested model's repr: not a field read here
        return [IssuedCall(_text(fields.get("call_id")), _text(fields.get("name")), fields.get("arguments"))]
    if text.startswith("{") and (REPR_TOOL_CALLS in text or REPR_FUNCTION_CALL in text):
        try:
            message = ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return []
        if not isinstance(message, Mapping):
            return []
        output = message.get("output")
        if isinstance(output, list):  # a `Response` dump: its `function_call` items
            return [
                IssuedCall(_text(item.get("call_id")), _text(item.get("name")), item.get("arguments"))
                for item in output
                if isinstance(item, Mapping) and item.get("type") == "function_call"
            ]
        return _choice_calls({"message": message})
    return []


def _event_calls(span: SpanRecord) -> list[IssuedCall] | None:
    """The calls in the span's output events (`gen_ai.choice`, in choice order; or the details event's
    `gen_ai.output.messages`); None when it has neither."""
    choices: list[tuple[int, list[IssuedCall]]] = []
    for event in span.events:
        if event.name == CHOICE_EVENT:
            body = event.attributes.get(BODY_KEY)
            if isinstance(body, str):
                # Emitters that log through Python's `logging` (Semantic Kernel) send the body as its JSON text
                body = load_json(body)
            if isinstance(body, Mapping):
                index = body.get("index")
                choices.append((index if isinstance(index, int) else len(choices), _choice_calls(body)))
        elif event.name == DETAILS_EVENT and OUTPUT_MESSAGES in event.attributes:
            return genai_issued_calls(event.attributes[OUTPUT_MESSAGES])
    if not choices:
        return None
    choices.sort(key=lambda choice: choice[0])
    return [call for _, calls in choices for call in calls]


def _choice_calls(body: Mapping[str, Any]) -> list[IssuedCall]:
    """A `gen_ai.choice` body's tool calls: `message.tool_calls[*]` `{id, function: {name, arguments}}`."""
    message = body.get("message")
    tool_calls = message.get("tool_calls") if isinstance(message, Mapping) else None
    calls: list[IssuedCall] = []
    for call in tool_calls if isinstance(tool_calls, list) else ():
        if not isinstance(call, Mapping):
            continue
        function = call.get("function")
        function = function if isinstance(function, Mapping) else {}
        calls.append(IssuedCall(_text(call.get("id")), _text(function.get("name")), function.get("arguments")))
    return calls


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def read_genai_tools(span: SpanRecord, role: Role) -> list[Any]:
    """The tools a GenAI run or inference span says were offered: `gen_ai.tool.definitions`."""
    definitions = span.attributes.get(TOOL_DEFINITIONS)
    return [] if definitions is None else json_list(definitions)


class GenAIExtractor:
    """Spans that follow the OTel GenAI conventions."""

    name = "genai"
    gate = Gate(keys=frozenset({OPERATION, TOOL_NAME}))
    issued_text = "gen_ai.output.messages"
    tool_keys = TOOL_KEYS

    def classify(self, span: SpanRecord) -> Role | None:
        """`execute_tool` is a tool call and `invoke_agent` a run, as the conventions define them. An
        `agent_handoff` (the OpenAI Agents contrib instrumentation's) is the call of a handoff tool.

        Inference operations are read for the order of the calls they issue. Any other GenAI
        operation (`create_agent`, `invoke_workflow`, `embeddings`, a framework's `agent_step`, ...)
        is claimed as OTHER: it neither runs a tool nor bounds a run. A span without an operation
        name is a tool call only in the pre-`operation.name` shape, `execute_tool <tool>` with
        `gen_ai.tool.name`; anything else is not a GenAI span.
        """
        attrs = span.attributes
        operation = attrs.get(OPERATION)
        if operation is None:
            if TOOL_NAME in attrs and span.name.startswith(EXECUTE_TOOL):
                return _TOOL
            return None
        if operation in (EXECUTE_TOOL, AGENT_HANDOFF):
            return _TOOL
        if operation == INVOKE_AGENT:
            if span.kind == SPAN_KIND_SERVER and span.scope == OPENAI_AGENTS_SCOPE:
                return _OTHER  # the OpenAI Agents contrib instrumentation's SDK trace span, not an agent's run
            return _RUN
        if operation in INFERENCE_OPERATIONS:
            return _LLM
        return _OTHER

    def read(self, span: SpanRecord, role: Role) -> Read:
        if role is _TOOL:
            return read_genai_tool(span)
        if role is _RUN:
            return read_genai_run(span)
        return read_genai_issued(span)

    def read_tools(self, span: SpanRecord, role: Role) -> list[Any]:
        return read_genai_tools(span, role)
