"""Mastra AI tracing exported by `@mastra/otel-exporter` (GenAI v1.38 converter).

Mastra builds its own span tree and converts each span; `mastra.span.type` names the Mastra type,
which is more precise than the GenAI operation (a `model_chunk` span repeats a tool call without
executing it). Checked on captures of @mastra/core 1.71.0 with @mastra/observability 1.17.9 and
@mastra/otel-exporter 1.4.0 (tests/testdata/traces/mastra, tests/captures/mastra/NOTES.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from toolscore.collector.extract.conventions.base import Gate, IssuedCall, IssuedCalls, Read, Role, RunInfo
from toolscore.collector.extract.conventions.common import ERROR_TYPE_OTHER, load_json, message_text, names_only, string
from toolscore.collector.extract.conventions.genai import TOOL_KEYS, read_genai_tool
from toolscore.collector.spans import SpanRecord

__all__ = ["MastraExtractor"]

# --- Names read (@mastra/core 1.x, @mastra/observability 1.x, @mastra/otel-exporter 1.x) ----------
# recognised by  mastra.span.type (set on every converted span)
# run span      mastra.span.type=agent_run (`invoke_agent <agent>`): gen_ai.agent.name (else
#               gen_ai.agent.id), mastra.agent_run.input / mastra.agent_run.output (JSON); tools offered:
#               gen_ai.tool.definitions, a JSON array of the tool names only
# tool span     mastra.span.type=tool_call | mcp_tool_call | provider_tool_call (`execute_tool <tool>`,
#               the exporter converts the three alike): gen_ai.tool.name, gen_ai.tool.call.id,
#               gen_ai.tool.call.arguments, gen_ai.tool.call.result, gen_ai.tool.description, status,
#               error.type (the MastraError id, else the placeholder `unknown`: read as `_OTHER`; the
#               exception event's exception.type is always `Error`)
# step span     mastra.span.type=model_step (`agent_step <agent>`, parent of the step's tool spans):
#               mastra.model_step.output JSON {"toolCalls": [{toolCallId, toolName, args}]} or the
#               flattened mastra.model_step.output.toolCalls; entries may wrap them in `payload`
# not calls     model_chunk (repeats tool calls and results), model_generation, model_inference,
#               mapping, workflow spans: OTHER; client_tool_call (a tool the client runs: the server
#               only marks it, `mastra.client_tool_call.input`): OTHER, so the call is the step
#               output's, model-only

SPAN_TYPE: Final = "mastra.span.type"
TOOL_TYPES: Final = frozenset({"tool_call", "mcp_tool_call", "provider_tool_call"})
STEP_OUTPUT: Final = "mastra.model_step.output"
TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
NO_ERROR_ID: Final = "unknown"
"""What the exporter writes as `error.type` when the failure has no MastraError id (`errorInfo.id || "unknown"`)."""


def _issued(attrs: Mapping[str, Any]) -> list[IssuedCall]:
    output = load_json(attrs.get(STEP_OUTPUT))
    tool_calls = output.get("toolCalls") if isinstance(output, Mapping) else None
    if tool_calls is None:
        tool_calls = load_json(attrs.get(STEP_OUTPUT + ".toolCalls"))
    calls: list[IssuedCall] = []
    for item in tool_calls if isinstance(tool_calls, list) else []:
        entry = item["payload"] if isinstance(item, Mapping) and isinstance(item.get("payload"), Mapping) else item
        if isinstance(entry, Mapping):
            args = entry.get("args", entry.get("input"))
            calls.append(IssuedCall(entry.get("toolCallId"), entry.get("toolName"), args))
    return calls


class MastraExtractor:
    """Spans converted by Mastra's OTel exporter."""

    name = "mastra"
    gate = Gate(keys=frozenset({SPAN_TYPE}))
    tool_keys = TOOL_KEYS

    def classify(self, span: SpanRecord) -> Role | None:
        """`agent_run` is a run and `tool_call`/`mcp_tool_call`/`provider_tool_call` a tool execution.

        The exporter converts those three types alike (`execute_tool`, the same `gen_ai.tool.*`
        attributes); a provider tool is one the model's provider ran (a hosted web search), which
        Mastra rebuilds as a span under the step that issued it. `model_step` spans are read for the
        order of the calls their step issued. `model_chunk` spans carry a tool call's name and input
        too, but only as streamed model output: counting them would duplicate every call, so they and
        all other Mastra types are OTHER, `client_tool_call` included (the server marks a call the
        client runs; the step output lists it, so it is a model-only call).
        """
        kind = span.attributes.get(SPAN_TYPE)
        if kind is None:
            return None
        if kind == "agent_run":
            return Role.RUN
        if kind in TOOL_TYPES:
            return Role.TOOL
        if kind == "model_step":
            return Role.LLM
        return Role.OTHER

    def read(self, span: SpanRecord, role: Role) -> Read:
        attrs = span.attributes
        if role is Role.TOOL:
            read = read_genai_tool(span)
            if read.error_type == NO_ERROR_ID:
                read.error_type = ERROR_TYPE_OTHER  # Mastra's placeholder: the failure has no type
            return read
        if role is Role.RUN:
            return RunInfo(
                agent_name=string(attrs, "gen_ai.agent.name") or string(attrs, "gen_ai.agent.id"),
                input=message_text(attrs.get("mastra.agent_run.input"), "user"),
                output=message_text(attrs.get("mastra.agent_run.output"), "assistant"),
            )
        return IssuedCalls(_issued(attrs))

    def read_tools(self, span: SpanRecord, role: Role) -> list[Any]:
        """The run span's `gen_ai.tool.definitions`: the offered tools' names (descriptions come from the tool
        spans of the tools called, see `catalog`)."""
        definitions = span.attributes.get(TOOL_DEFINITIONS) if role is Role.RUN else None
        return [] if definitions is None else names_only(definitions)
