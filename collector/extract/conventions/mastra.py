"""Mastra AI tracing exported by `@mastra/otel-exporter` (GenAI v1.38 converter).

Mastra builds its own span tree and converts each span; `mastra.span.type` names the Mastra type,
which is more precise than the GenAI operation (a `model_chunk` span repeats a tool call without
executing it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from toolscore.collector.extract.conventions.base import Gate, IssuedCall, IssuedCalls, Read, Role, RunInfo
from toolscore.collector.extract.conventions.common import load_json, message_text, string
from toolscore.collector.extract.conventions.genai import read_genai_tool
from toolscore.collector.spans import SpanRecord

__all__ = ["MastraExtractor"]

# --- Names read (@mastra/core 1.x, @mastra/observability 1.x, @mastra/otel-exporter 1.x) ----------
# recognised by  mastra.span.type (set on every converted span)
# run span      mastra.span.type=agent_run (`invoke_agent <agent>`): gen_ai.agent.name (else
#               gen_ai.agent.id), mastra.agent_run.input / mastra.agent_run.output (JSON)
# tool span     mastra.span.type=tool_call | mcp_tool_call (`execute_tool <tool>`): gen_ai.tool.name,
#               gen_ai.tool.call.id, gen_ai.tool.call.arguments, gen_ai.tool.call.result, error.type,
#               status, exception event
# step span     mastra.span.type=model_step (`agent_step <agent>`, parent of the step's tool spans):
#               mastra.model_step.output JSON {"toolCalls": [{toolCallId, toolName, args}]} or the
#               flattened mastra.model_step.output.toolCalls; entries may wrap them in `payload`
# not calls     model_chunk (repeats tool calls and results), model_generation, model_inference,
#               mapping, workflow spans: OTHER

SPAN_TYPE: Final = "mastra.span.type"
TOOL_TYPES: Final = frozenset({"tool_call", "mcp_tool_call"})
STEP_OUTPUT: Final = "mastra.model_step.output"


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

    def classify(self, span: SpanRecord) -> Role | None:
        """`agent_run` is a run and `tool_call`/`mcp_tool_call` a tool execution.

        `model_step` spans are read for the order of the calls their step issued. `model_chunk`
        spans carry a tool call's name and input too, but only as streamed model output: counting
        them would duplicate every call, so they and all other Mastra types are OTHER.
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
            return read_genai_tool(span)
        if role is Role.RUN:
            return RunInfo(
                agent_name=string(attrs, "gen_ai.agent.name") or string(attrs, "gen_ai.agent.id"),
                input=message_text(attrs.get("mastra.agent_run.input"), "user"),
                output=message_text(attrs.get("mastra.agent_run.output"), "assistant"),
            )
        return IssuedCalls(_issued(attrs))
