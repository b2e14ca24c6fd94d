"""OpenInference (Arize/Phoenix): `openinference.span.kind` TOOL, AGENT, CHAIN and LLM spans.

Seen from openai-agents (openinference-instrumentation-openai-agents), LangGraph/LangChain
(openinference-instrumentation-langchain, Python and JS) and others. Tool spans carry no call id;
it is recovered from the LLM span that issued the call (see `runs`).
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
from toolscore.collector.extract.conventions.common import (
    error_of,
    indexed_issued_calls,
    indexed_values,
    load_json,
    message_text,
    names_only,
    string,
)
from toolscore.collector.spans import SpanRecord

__all__ = ["OpenInferenceExtractor"]

# --- Names read (OpenInference semantic conventions, spec/semantic_conventions.md) -----------------
# span marker   openinference.span.kind = TOOL | AGENT | LLM (CHAIN and the other kinds: OTHER)
# TOOL span     tool.name (absent on openai-agents handoff spans `handoff to <agent>`, whose
#               input.value is the agent handing off, not arguments),
#               input.value (arguments; LangChain writes a bare value for one-parameter tools),
#               tool.parameters (arguments only when it is not a JSON schema: older emitters),
#               tool.id | tool_call.id (call id, rarely set), output.value (result; LangChain's
#               serialized ToolMessage holds `tool_call_id`), status (error), exception event
# AGENT span    agent.name (a run only with it: openai-agents' `Agent workflow` root and LangGraph's
#               per-step `agent` node spans are AGENT spans without one), input.value, output.value
# LLM span      llm.output_messages.<i>.message.tool_calls.<j>.tool_call.id | function.name |
#               function.arguments (model order; both the openai-agents and LangChain
#               instrumentations leave the arguments out when they are empty, `{}`); legacy
#               llm.output_messages.<i>.message.function_call_name | function_call_arguments_json;
#               LangChain.js without flattened calls: output.value
#               generations[0][0].message.kwargs.tool_calls[] {id, name, args}
# tools offered LLM spans: llm.tools.<i>.tool.json_schema (OpenAI tool JSON); smolagents' run span:
#               smolagents.tools_names (names only); TOOL spans: tool.description, tool.parameters
#               (the tool's own, kept when it is a JSON schema)

KIND: Final = "openinference.span.kind"
TOOL_NAME: Final = "tool.name"
TOOL_PARAMETERS: Final = "tool.parameters"
CALL_ID_KEYS: Final = ("tool.id", "tool_call.id")
INPUT_VALUE: Final = "input.value"
OUTPUT_VALUE: Final = "output.value"
AGENT_NAME: Final = "agent.name"
OUTPUT_MESSAGES: Final = "llm.output_messages"
CALL_KEYS: Final = ("tool_call.id", "tool_call.function.name", "tool_call.function.arguments")
TOOLS: Final = "llm.tools"
TOOL_SCHEMA: Final = ".tool.json_schema"
SMOLAGENTS_TOOLS: Final = "smolagents.tools_names"
TOOL_DESCRIPTION: Final = "tool.description"


def _args(attrs: Mapping[str, Any]) -> Any:
    if INPUT_VALUE in attrs:
        return attrs[INPUT_VALUE]
    params = attrs.get(TOOL_PARAMETERS)
    if isinstance(params, str):
        decoded = load_json(params)
        if not (isinstance(decoded, Mapping) and ("properties" in decoded or decoded.get("type") == "object")):
            return params
    return NOT_CAPTURED


def _call_id(attrs: Mapping[str, Any]) -> str | None:
    for key in CALL_ID_KEYS:
        value = string(attrs, key)
        if value:
            return value
    output = attrs.get(OUTPUT_VALUE)
    if isinstance(output, str) and "tool_call_id" in output:
        found = _find_key(load_json(output), "tool_call_id", depth=4)
        return found if isinstance(found, str) and found else None
    return None


def _find_key(value: Any, key: str, depth: int) -> Any:
    """`key`'s value in nested objects, breadth first, at most `depth` levels down."""
    level = [value]
    for _ in range(depth):
        nested: list[Any] = []
        for item in level:
            if isinstance(item, Mapping):
                if key in item:
                    return item[key]
                nested.extend(v for v in item.values() if isinstance(v, Mapping))
        level = nested
    return None


def _langchain_issued(output: Any) -> list[IssuedCall]:
    decoded = load_json(output) if isinstance(output, str) and "tool_calls" in output else None
    if not isinstance(decoded, Mapping):
        return []
    generations = decoded.get("generations")
    try:
        message = generations[0][0]["message"]  # type: ignore[index]
    except (TypeError, LookupError):
        return []
    kwargs = message.get("kwargs", message) if isinstance(message, Mapping) else {}
    calls = kwargs.get("tool_calls") if isinstance(kwargs, Mapping) else None
    if not isinstance(calls, list):
        return []
    return [IssuedCall(c.get("id"), c.get("name"), c.get("args")) for c in calls if isinstance(c, Mapping)]


class OpenInferenceExtractor:
    """Spans with `openinference.span.kind`."""

    name = "openinference"
    gate = Gate(keys=frozenset({KIND}))
    tool_keys = (f"{TOOLS}.0{TOOL_SCHEMA}", SMOLAGENTS_TOOLS)

    def classify(self, span: SpanRecord) -> Role | None:
        """TOOL spans are tool calls (handoffs included); AGENT spans with `agent.name` are runs.

        An AGENT span without `agent.name` is a wrapper (openai-agents' SDK trace, LangGraph's step
        node named "agent") and a CHAIN span is a step, so neither bounds a run; when no run span is
        found, the run is inferred from the tree instead. LLM spans are read for call order.
        """
        kind = span.attributes.get(KIND)
        if kind is None:
            return None
        if kind == "TOOL":
            return Role.TOOL
        if kind == "LLM":
            return Role.LLM
        if kind == "AGENT" and string(span.attributes, AGENT_NAME):
            return Role.RUN
        return Role.OTHER

    def read(self, span: SpanRecord, role: Role) -> Read:
        attrs = span.attributes
        if role is Role.TOOL:
            name = string(attrs, TOOL_NAME)
            error, error_type = error_of(span)
            return ToolRead(
                name=name,
                args=NOT_CAPTURED if name is None else _args(attrs),
                call_id=_call_id(attrs),
                result=attrs.get(OUTPUT_VALUE),
                error=error,
                error_type=error_type,
                handoff=name is None,
                description=attrs.get(TOOL_DESCRIPTION),
                schema=attrs.get(TOOL_PARAMETERS),
            )
        if role is Role.RUN:
            return RunInfo(
                agent_name=string(attrs, AGENT_NAME),
                input=message_text(attrs.get(INPUT_VALUE), "user"),
                output=message_text(attrs.get(OUTPUT_VALUE), "assistant"),
            )
        calls = [
            call if call.args is not None else IssuedCall(call.call_id, call.name, "{}")
            for call in indexed_issued_calls(attrs, OUTPUT_MESSAGES, ".message.tool_calls", CALL_KEYS)
        ]
        if not calls:
            calls = self._legacy_function_calls(attrs) or _langchain_issued(attrs.get(OUTPUT_VALUE))
        return IssuedCalls(calls)

    def read_tools(self, span: SpanRecord, role: Role) -> list[Any]:
        """`llm.tools.<i>.tool.json_schema` and smolagents' tool names."""
        attrs = span.attributes
        tools = indexed_values(attrs, TOOLS, TOOL_SCHEMA)
        if SMOLAGENTS_TOOLS in attrs:
            tools.extend(names_only(attrs[SMOLAGENTS_TOOLS]))
        return tools

    @staticmethod
    def _legacy_function_calls(attrs: Mapping[str, Any]) -> list[IssuedCall]:
        calls: list[IssuedCall] = []
        for i in range(64):
            name = attrs.get(f"{OUTPUT_MESSAGES}.{i}.message.function_call_name")
            if name is None:
                break
            args = attrs.get(f"{OUTPUT_MESSAGES}.{i}.message.function_call_arguments_json")
            calls.append(IssuedCall(None, str(name), args))
        return calls
