"""Google ADK's own instrumentation (scope `gcp.vertex.agent`), older and current telemetry.

ADK mostly speaks OTel GenAI, with quirks this module absorbs: the `(merged tools)` bookkeeping span
that is not a model call, the `<not specified>` call id of a failed tool, arguments in
`gcp.vertex.agent.tool_call_args` before GenAI attributes existed, and model responses recorded as
`gcp.vertex.agent.llm_response` (function calls in the model's order).

With OpenInference's ADK instrumentor (openinference-instrumentation-google-adk) on, a user gets ADK's spans
and OpenInference's in one trace, partly merged: the instrumentor traces each run itself (`agent_run [<agent>]`,
AGENT) and re-emits ADK's `execute_tool` spans through its own tracer as TOOL spans (both read by
`openinference`). What is left of ADK's here: its `invoke_agent` span, which the instrumentor turns into the
sink of the run's model calls (not a run, nor one model response), and the merged-tools span, re-emitted
under the instrumentor's scope without a span kind. See the names below.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from toolscore.collector.extract.conventions.base import Gate, IssuedCall, IssuedCalls, Read, Role, ToolRead
from toolscore.collector.extract.conventions.common import (
    ERROR_TYPE_OTHER,
    MAX_DEFINITIONS_CHARS,
    error_of,
    event_attribute,
    genai_issued_calls,
    load_json,
    string,
)
from toolscore.collector.extract.conventions.genai import (
    ARGS_KEYS,
    DETAILS_EVENT,
    OUTPUT_MESSAGES,
    RESULT_KEYS,
    TOOL_KEYS,
    read_genai_run,
    read_genai_tools,
    tool_args,
)
from toolscore.collector.spans import SpanRecord

__all__ = ["GoogleADKExtractor", "function_response_error"]

# --- Names read ----------------------------------------------------------------------------------
# recognised by  scope `gcp.vertex.agent`
# current (google-adk 1.x/2.x, schema v2):
#   run span      `invoke_agent <agent>`: gen_ai.operation.name=invoke_agent, gen_ai.agent.name
#                 (`invoke_workflow <agent>` above it is not a run: OTHER)
#   tool span     `execute_tool <tool>`: gen_ai.tool.name, gen_ai.tool.call.id (`<not specified>`
#                 when the tool raised), gen_ai.tool.call.arguments / .result (content capture
#                 SPAN_ONLY or SPAN_AND_EVENT), gen_ai.tool.type, status, error.type
#   not a call    gen_ai.tool.name = `(merged tools)` (bookkeeping for parallel calls)
#   failed tool   status ERROR + error.type when the tool raised and no error callback answered (the
#                 run then ends); answered by ADK's ReflectAndRetryToolPlugin, the span is OK and the
#                 result is `{"response_type": "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN",
#                 "error_type": <exception class>, ...}`: a failed call the model sees and may retry
#   model span    `generate_content <model>` / `call_llm`: gen_ai.output.messages, or
#                 gcp.vertex.agent.llm_response JSON content.parts[].function_call {id, name, args};
#                 a streamed response is recorded chunk by chunk, one output message each (ADK's
#                 `set_operation_details_attributes_from_response` appends every chunk), so one call
#                 repeats under its id (`arguments` null until the chunk that completes it): one call.
#                 Content capture EVENT_ONLY (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true): no
#                 content on spans; gen_ai.output.messages is an attribute of the span's
#                 `gen_ai.client.inference.operation.details` log record (joined to it as an event), and
#                 the tool spans have no arguments (they come from the model's calls, by call id)
# older (google-adk 0.x/1.0, and 2.x with ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1):
#   run span      `agent_run [<agent>]` (0.x/1.0); `invoke_agent <agent>` under `invocation`
#   tool span     gcp.vertex.agent.tool_call_args, gcp.vertex.agent.tool_response
#   model span    `call_llm`: gcp.vertex.agent.llm_response; tools offered in gcp.vertex.agent.llm_request
#                 JSON config.tools[].function_declarations[] {name, description, parameters_json_schema
#                 or parameters}
# beside OpenInference's ADK instrumentor (openinference-instrumentation-google-adk 1.x, ADK 2.x):
#   not a run     ADK's `invoke_agent <agent>` carrying openinference.span.kind: the instrumentor wraps
#                 `BaseAgent.run_async` in its own AGENT span `agent_run [<agent>]` (the run, its parent), and
#                 records every model call of the run onto the span current at ADK's `trace_call_llm`,
#                 which under schema v2 (no `call_llm` span) is this one: kind LLM, llm.output_messages.*,
#                 input.value / output.value of each request and response, each overwriting the last;
#                 ADK's own `generate_content` spans are suppressed into it too (gen_ai.operation.name
#                 becomes `generate_content`). It holds no one model response: OTHER
#   not a call    `execute_tool (merged)` in scope `openinference.instrumentation.google_adk`: ADK's span
#                 re-emitted through the instrumentor's tracer, with no openinference.span.kind
#   failed tool   the TOOL span's output.value is ADK's FunctionResponse `{"id", "name", "response"}`; a
#                 retry-plugin answer there is a failed call (`function_response_error`, read by
#                 `openinference`)

SCOPE: Final = "gcp.vertex.agent"
OI_SCOPE: Final = "openinference.instrumentation.google_adk"
OI_KIND: Final = "openinference.span.kind"
MERGED: Final = "(merged tools)"
UNSPECIFIED: Final = "<not specified>"
ADK_ARGS: Final = (*ARGS_KEYS, "gcp.vertex.agent.tool_call_args")
ADK_RESULTS: Final = (*RESULT_KEYS, "gcp.vertex.agent.tool_response")
LLM_RESPONSE: Final = "gcp.vertex.agent.llm_response"
LLM_REQUEST: Final = "gcp.vertex.agent.llm_request"
RETRY_PLUGIN_RESPONSE: Final = "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN"


def _plugin_answer_error(answer: Any) -> str | None:
    """The error type of ADK's ReflectAndRetryToolPlugin answer (decoded: `{"response_type", "error_type", ...}`),
    or None when `answer` is no such answer."""
    if not isinstance(answer, Mapping) or answer.get("response_type") != RETRY_PLUGIN_RESPONSE:
        return None
    return string(answer, "error_type") or ERROR_TYPE_OTHER


def _handled_error(result: Any) -> str | None:
    """The error type of a tool failure answered by ADK's ReflectAndRetryToolPlugin (see the names above)."""
    if not isinstance(result, str) or RETRY_PLUGIN_RESPONSE not in result:
        return None
    return _plugin_answer_error(load_json(result))


def function_response_error(output: Any) -> str | None:
    """The error type of a tool failure answered by ADK's ReflectAndRetryToolPlugin, from ADK's `FunctionResponse`
    as JSON (`{"id", "name", "response": {...}}`: how OpenInference's ADK instrumentor records a tool's output,
    `output.value`); None when it is no such answer."""
    if not isinstance(output, str) or RETRY_PLUGIN_RESPONSE not in output:
        return None
    decoded = load_json(output)
    return _plugin_answer_error(decoded.get("response") if isinstance(decoded, Mapping) else None)


def _one_per_call_id(calls: list[IssuedCall]) -> list[IssuedCall]:
    """The calls of one model response, each call id once: at its first position, with the last arguments
    recorded for it (a streamed response lists every chunk's partial call; the last chunk has the arguments).

    A model issues one call per id within a response, so the repeats are the same call; calls without an
    id are kept as they are.
    """
    if len(calls) < 2:
        return calls
    merged: dict[str, int] = {}
    out: list[IssuedCall] = []
    for call in calls:
        index = merged.get(call.call_id) if call.call_id is not None else None
        if index is None:
            if call.call_id is not None:
                merged[call.call_id] = len(out)
            out.append(call)
        elif call.args is not None:
            first = out[index]
            out[index] = IssuedCall(first.call_id, first.name or call.name, call.args)
    return out


def _issued_from_response(response: Any) -> list[IssuedCall]:
    decoded = load_json(response)
    content = decoded.get("content") if isinstance(decoded, Mapping) else None
    parts = content.get("parts") if isinstance(content, Mapping) else None
    calls: list[IssuedCall] = []
    for part in parts if isinstance(parts, list) else []:
        call = part.get("function_call") if isinstance(part, Mapping) else None
        if isinstance(call, Mapping):
            calls.append(IssuedCall(call.get("id"), call.get("name"), call.get("args")))
    return calls


def _declared_functions(request: Any) -> list[Any]:
    """The function declarations of an ADK model request (JSON text of `LlmRequest`: `config.tools[]
    .function_declarations[]`); `OverflowError` for text longer than `MAX_DEFINITIONS_CHARS` (the request
    holds the whole conversation, so only one that declares functions is decoded)."""
    if not isinstance(request, str) or '"function_declarations"' not in request:
        return []
    if len(request) > MAX_DEFINITIONS_CHARS:
        raise OverflowError("model request too long to decode")
    decoded = load_json(request)
    config = decoded.get("config") if isinstance(decoded, Mapping) else None
    tools = config.get("tools") if isinstance(config, Mapping) else None
    declared: list[Any] = []
    for tool in tools if isinstance(tools, list) else []:
        functions = tool.get("function_declarations") if isinstance(tool, Mapping) else None
        declared.extend(functions if isinstance(functions, list) else [])
    return declared


class GoogleADKExtractor:
    """Spans of Google ADK."""

    name = "google_adk"
    gate = Gate(scopes=frozenset({SCOPE, OI_SCOPE}))
    issued_text = "gen_ai.output.messages"
    tool_keys = (*TOOL_KEYS, LLM_REQUEST)

    def classify(self, span: SpanRecord) -> Role | None:
        """`invoke_agent` (or the older `agent_run [...]`) is a run; `execute_tool` a tool call.

        The `(merged tools)` span repeats the calls of a parallel step under one event id, so it is
        OTHER, as are `invoke_workflow` (it wraps the agent span) and ADK's bookkeeping spans. Beside
        OpenInference's ADK instrumentor (see the names above): the merged span it re-emits under its own scope is
        OTHER (its other spans are `openinference`'s), and so is ADK's `invoke_agent` it wrote model calls into.
        """
        attrs = span.attributes
        if span.scope != SCOPE:
            return Role.OTHER if span.scope == OI_SCOPE and attrs.get("gen_ai.tool.name") == MERGED else None
        if OI_KIND in attrs and span.name.startswith("invoke_agent"):
            return Role.OTHER
        operation = attrs.get("gen_ai.operation.name")
        if operation == "invoke_agent" or span.name.startswith("agent_run"):
            return Role.RUN
        if operation == "execute_tool" or span.name.startswith("execute_tool"):
            return Role.OTHER if attrs.get("gen_ai.tool.name") == MERGED else Role.TOOL
        if operation in ("chat", "generate_content") or span.name == "call_llm" or LLM_RESPONSE in attrs:
            return Role.LLM
        return Role.OTHER

    def read(self, span: SpanRecord, role: Role) -> Read:
        attrs = span.attributes
        if role is Role.RUN:
            info = read_genai_run(span)
            if info.agent_name is None and span.name.startswith("agent_run [") and span.name.endswith("]"):
                info.agent_name = span.name[len("agent_run [") : -1]
            return info
        if role is Role.TOOL:
            call_id = string(attrs, "gen_ai.tool.call.id")
            error, error_type = error_of(span)
            name = string(attrs, "gen_ai.tool.name") or span.name.removeprefix("execute_tool ")
            result = next((attrs[k] for k in ADK_RESULTS if k in attrs), None)
            if not error and (handled := _handled_error(result)) is not None:
                error, error_type = True, handled
            return ToolRead(
                name=name,
                args=tool_args(attrs, ADK_ARGS),
                call_id=None if call_id == UNSPECIFIED else call_id,
                result=result,
                error=error,
                error_type=error_type,
                description=attrs.get("gen_ai.tool.description"),
            )
        if OUTPUT_MESSAGES in attrs:
            return IssuedCalls(_one_per_call_id(genai_issued_calls(attrs[OUTPUT_MESSAGES])))
        if LLM_RESPONSE in attrs:
            return IssuedCalls(_issued_from_response(attrs[LLM_RESPONSE]))
        # EVENT_ONLY content capture: the messages ride on the span's operation-details log record
        details = event_attribute(span, DETAILS_EVENT, OUTPUT_MESSAGES)
        return IssuedCalls(_one_per_call_id(genai_issued_calls(details)) if details is not None else [])

    def read_tools(self, span: SpanRecord, role: Role) -> list[Any]:
        """As OTel GenAI (`gen_ai.tool.definitions`), else the function declarations of the older
        `call_llm` span's request (`gcp.vertex.agent.llm_request`)."""
        if TOOL_KEYS[0] in span.attributes:
            return read_genai_tools(span, role)
        return _declared_functions(span.attributes.get(LLM_REQUEST)) if role is Role.LLM else []
