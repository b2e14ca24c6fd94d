"""The Vercel AI SDK: built-in `ai.*` telemetry (v4-v6, v7 `LegacyOpenTelemetry`) and the v7
`@ai-sdk/otel` `OpenTelemetry` integration, which speaks OTel GenAI under the scope `gen_ai`.

ai@7 itself emits no span: its telemetry is a dispatcher of events to registered integrations
(`registerTelemetry`, `telemetry.integrations`; ai 7.0.173 src/telemetry/create-telemetry-dispatcher.ts,
no `@opentelemetry/api` dependency), and both span forms come from `@ai-sdk/otel` (`OpenTelemetry`,
`LegacyOpenTelemetry`). ai@6's `ToolLoopAgent` adds no span: `generate`/`stream` call `generateText`/
`streamText` with the agent's settings, so its runs are `ai.generateText`/`ai.streamText` named by
`experimental_telemetry.functionId` (the agent's `id` reaches no span).
"""

from __future__ import annotations

import json
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
    ERROR_TYPE_OTHER,
    error_of,
    json_list,
    load_json,
    message_text,
    string,
)
from toolscore.collector.extract.conventions.genai import TOOL_KEYS, GenAIExtractor, read_genai_tools
from toolscore.collector.spans import SpanRecord

__all__ = ["PROMPT_MESSAGES", "VercelAIExtractor", "tool_results"]

# --- Names read ----------------------------------------------------------------------------------
# ai 7 + @ai-sdk/otel `OpenTelemetry` (scope `gen_ai`): read as OTel GenAI (see genai.py):
#   run `invoke_agent <modelId>` (gen_ai.agent.name = telemetry.functionId), `step <n>`
#   (gen_ai.operation.name=agent_step: OTHER), `chat <modelId>` (gen_ai.output.messages: model
#   order), `execute_tool <tool>` (gen_ai.tool.name, .call.id, .call.arguments, .call.result)
# ai 4-6 built-in telemetry, ai 7 `LegacyOpenTelemetry` (scope `ai`), by ai.operationId:
#   run    ai.generateText | ai.streamText: ai.telemetry.functionId (else resource.name),
#          ai.prompt (JSON {system, prompt | messages}), ai.response.text
#   tool   ai.toolCall: ai.toolCall.name, ai.toolCall.id, ai.toolCall.args (ai.toolCall.input in
#          some builds), ai.toolCall.result (ai.toolCall.output), status, exception event
#          (recordErrorOnSpan: ERROR status with the error's message, `exception` event)
#   model  ai.generateText.doGenerate | ai.streamText.doStream: ai.response.toolCalls (JSON array
#          of {toolCallId, toolName, input | args}; `input` is an object in v7, a JSON string in v6)
#   args   ai.toolCall.args is the input after the tool's schema parsed it (zod defaults filled in,
#          values coerced): `parseToolCall` runs before the span (v4 `args`, v5+ `input`). doGenerate's
#          ai.response.toolCalls holds the provider's own JSON text of the arguments (v5 `input`, v4
#          `args`: a string), so a call tied to it takes those (ToolRead.args_parsed); doStream's holds
#          the parsed calls (an object), like the tool span: a streamed call keeps the parsed input.
#   refused a call no tool span records (no `ai.toolCall`: the SDK ran no tool) failed when the SDK says so:
#          doStream's ai.response.toolCalls lists a call whose input failed the schema, or of an unknown tool, as
#          `invalid: true` with its `error` ({name: AI_InvalidToolInputError | AI_NoSuchToolError, ...}; v5+
#          `parseToolCall`), and a later step's ai.prompt.messages holds what the SDK answered the model for
#          each call (`tool_results`): a `tool` message's `tool-result` parts {toolCallId, output: {type,
#          value}}, `type` error-text | error-json (the tool threw, or the SDK refused the input) or
#          execution-denied (v6 tool approval denied) for a failure, text | json | content otherwise (v5+,
#          LanguageModelV2/V3ToolResultOutput); v4 {toolCallId, result, isError?}
#   other  ai.generateObject, ai.streamObject, ai.embed, ...: OTHER
#   tools offered: ai.prompt.tools on model spans (array of JSON strings {type, name, description,
#          parameters | inputSchema}); v7 gen_ai scope: gen_ai.tool.definitions

GENAI_SCOPE: Final = "gen_ai"
OPERATION_ID: Final = "ai.operationId"
RUN_OPERATIONS: Final = frozenset({"ai.generateText", "ai.streamText"})
MODEL_OPERATIONS: Final = frozenset({"ai.generateText.doGenerate", "ai.streamText.doStream"})
TOOL_OPERATION: Final = "ai.toolCall"
PROMPT_TOOLS: Final = "ai.prompt.tools"
PROMPT_MESSAGES: Final = "ai.prompt.messages"
FAILED_OUTPUTS: Final = {
    "error-text": ERROR_TYPE_OTHER,
    "error-json": ERROR_TYPE_OTHER,
    "execution-denied": "execution-denied",
}
"""`output.type` of a `tool-result` part that reports a failure, and the error type read for it."""
_GENAI = GenAIExtractor()


def _issued(value: Any) -> list[IssuedCall]:
    decoded = load_json(value)
    calls: list[IssuedCall] = []
    for entry in decoded if isinstance(decoded, list) else []:
        if isinstance(entry, Mapping):
            args = entry.get("input", entry.get("args"))
            refused = _refusal(entry) if entry.get("invalid") is True else None
            calls.append(IssuedCall(entry.get("toolCallId"), entry.get("toolName"), args, refused))
    return calls


def _refusal(entry: Mapping[str, Any]) -> str:
    """The error type of a call the SDK refused (`invalid: true`): its `error`'s name, else `_OTHER`."""
    error = entry.get("error")
    name = error.get("name") if isinstance(error, Mapping) else None
    return name if isinstance(name, str) and name else ERROR_TYPE_OTHER


def tool_results(value: Any) -> list[tuple[str, Any, bool, str | None]]:
    """What the SDK answered the model for each tool call, from a model span's `ai.prompt.messages` (JSON text):
    `(call id, result, failed, error type)` per `tool-result` part of a `tool` message, in order.

    The result (as text: a JSON value encoded) is the output's `value` (v5+; a denied call's `reason`, often
    absent), or v4's `result`; the part says itself whether the call failed (`output.type` in `FAILED_OUTPUTS`,
    v4 `isError`).
    """
    messages = load_json(value)
    found: list[tuple[str, Any, bool, str | None]] = []
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, Mapping) or message.get("role") != "tool":
            continue
        content = message.get("content")
        for part in content if isinstance(content, list) else ():
            if not isinstance(part, Mapping) or part.get("type") != "tool-result":
                continue
            call_id = part.get("toolCallId")
            if not isinstance(call_id, str) or not call_id:
                continue
            output = part.get("output")
            if isinstance(output, Mapping):
                kind = output.get("type")
                error_type = FAILED_OUTPUTS.get(kind) if isinstance(kind, str) else None
                result = output.get("reason") if kind == "execution-denied" else output.get("value")
                found.append((call_id, _text(result), error_type is not None, error_type))
            elif "result" in part:
                failed = part.get("isError") is True
                found.append((call_id, _text(part.get("result")), failed, ERROR_TYPE_OTHER if failed else None))
    return found


def _text(value: Any) -> str | None:
    """A result as text: a string as is, any other JSON value encoded (None stays None)."""
    return value if value is None or isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _tool(span: SpanRecord) -> ToolRead:
    attrs = span.attributes
    args_key = next((k for k in ("ai.toolCall.args", "ai.toolCall.input") if k in attrs), None)
    error, error_type = error_of(span)
    return ToolRead(
        name=string(attrs, "ai.toolCall.name") or span.name,
        args=NOT_CAPTURED if args_key is None else attrs[args_key],
        call_id=string(attrs, "ai.toolCall.id"),
        result=attrs.get("ai.toolCall.result", attrs.get("ai.toolCall.output")),
        error=error,
        error_type=error_type,
        args_parsed=True,
    )


class VercelAIExtractor:
    """Spans of the Vercel AI SDK."""

    name = "vercel_ai"
    gate = Gate(scopes=frozenset({GENAI_SCOPE}), keys=frozenset({OPERATION_ID}))
    tool_keys = (PROMPT_TOOLS, *TOOL_KEYS)

    def classify(self, span: SpanRecord) -> Role | None:
        """`ai.generateText`/`ai.streamText` is a run and `ai.toolCall` a tool execution.

        The model-call spans under a run are read for the order of the calls each step issued.
        Spans of the v7 `gen_ai` scope are classified as OTel GenAI spans (a `step <n>` span is a step
        of its run, not a run).
        """
        if span.scope == GENAI_SCOPE:
            return _GENAI.classify(span)
        operation = span.attributes.get(OPERATION_ID)
        if operation is None:
            return None
        if operation in RUN_OPERATIONS:
            return Role.RUN
        if operation == TOOL_OPERATION:
            return Role.TOOL
        if operation in MODEL_OPERATIONS:
            return Role.LLM
        return Role.OTHER

    def read(self, span: SpanRecord, role: Role) -> Read:
        if span.scope == GENAI_SCOPE:
            return _GENAI.read(span, role)
        attrs = span.attributes
        if role is Role.TOOL:
            return _tool(span)
        if role is Role.RUN:
            return RunInfo(
                agent_name=string(attrs, "ai.telemetry.functionId") or string(attrs, "resource.name"),
                input=message_text(attrs.get("ai.prompt"), "user"),
                output=string(attrs, "ai.response.text"),
            )
        return IssuedCalls(_issued(attrs.get("ai.response.toolCalls")))

    def read_tools(self, span: SpanRecord, role: Role) -> list[Any]:
        """`ai.prompt.tools` (each entry a definition's JSON text); the v7 `gen_ai` scope as OTel GenAI."""
        if span.scope == GENAI_SCOPE:
            return read_genai_tools(span, role)
        tools = span.attributes.get(PROMPT_TOOLS)
        return [] if tools is None or role is Role.TOOL else json_list(tools)
