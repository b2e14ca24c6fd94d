"""The Vercel AI SDK: built-in `ai.*` telemetry (v4-v6, v7 `LegacyOpenTelemetry`) and the v7
`@ai-sdk/otel` `OpenTelemetry` integration, which speaks OTel GenAI under the scope `gen_ai`.
"""

from __future__ import annotations

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
from toolscore.collector.extract.conventions.common import error_of, json_list, load_json, message_text, string
from toolscore.collector.extract.conventions.genai import TOOL_KEYS, GenAIExtractor, read_genai_tools
from toolscore.collector.spans import SpanRecord

__all__ = ["VercelAIExtractor"]

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
#   other  ai.generateObject, ai.streamObject, ai.embed, ...: OTHER
#   tools offered: ai.prompt.tools on model spans (array of JSON strings {type, name, description,
#          parameters | inputSchema}); v7 gen_ai scope: gen_ai.tool.definitions

GENAI_SCOPE: Final = "gen_ai"
OPERATION_ID: Final = "ai.operationId"
RUN_OPERATIONS: Final = frozenset({"ai.generateText", "ai.streamText"})
MODEL_OPERATIONS: Final = frozenset({"ai.generateText.doGenerate", "ai.streamText.doStream"})
TOOL_OPERATION: Final = "ai.toolCall"
PROMPT_TOOLS: Final = "ai.prompt.tools"
_GENAI = GenAIExtractor()


def _issued(value: Any) -> list[IssuedCall]:
    decoded = load_json(value)
    calls: list[IssuedCall] = []
    for entry in decoded if isinstance(decoded, list) else []:
        if isinstance(entry, Mapping):
            args = entry.get("input", entry.get("args"))
            calls.append(IssuedCall(entry.get("toolCallId"), entry.get("toolName"), args))
    return calls


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
