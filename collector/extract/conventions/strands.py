"""Strands Agents' own instrumentation (scope `strands.telemetry.tracer`).

Strands names its spans after the GenAI conventions but, in its default mode, keeps arguments,
results and messages in span *events* (semconv v1.36 event names) rather than attributes; with
`OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental` they move to attributes and to
`gen_ai.client.inference.operation.details` events.
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
    event_attribute,
    genai_issued_calls,
    json_list,
    load_json,
    message_text,
    names_only,
    string,
)
from toolscore.collector.extract.conventions.genai import ARGS_KEYS, RESULT_KEYS
from toolscore.collector.spans import SpanRecord

__all__ = ["StrandsExtractor"]

# --- Names read ----------------------------------------------------------------------------------
# recognised by  scope `strands.telemetry.tracer`, or gen_ai.system / gen_ai.provider.name =
#                `strands-agents`
# run span      `invoke_agent <agent>`: gen_ai.operation.name=invoke_agent, gen_ai.agent.name;
#               input: event gen_ai.user.message `content` (JSON content blocks [{"text"}]);
#               output: event gen_ai.choice `message`; latest: event
#               gen_ai.client.inference.operation.details gen_ai.input.messages / gen_ai.output.messages
# tool span     `execute_tool <tool>`: gen_ai.tool.name, gen_ai.tool.call.id, gen_ai.tool.status
#               (`error`), status; arguments: gen_ai.tool.call.arguments (latest), else event
#               gen_ai.tool.message `content` (default), else operation.details gen_ai.input.messages
#               tool_call part `arguments`; result: gen_ai.tool.call.result, else event gen_ai.choice
#               `message`
# model span    `chat`: event gen_ai.choice `message` (content blocks; toolUse {toolUseId, name,
#               input} in model order), or operation.details gen_ai.output.messages
# `execute_event_loop_cycle` and multi-agent spans: OTHER
# tools offered run span gen_ai.agent.tools (JSON list of names); gen_ai.tool.definitions (opt-in
#               `gen_ai_tool_definitions`: [{"name", "description", "inputSchema": {"json": <schema>}}]);
#               each tool span: gen_ai.tool.description and gen_ai.tool.json_schema (the tool spec's
#               JSON schema, written by Strands' tool executor)

SCOPE: Final = "strands.telemetry.tracer"
SYSTEM: Final = "strands-agents"
DETAILS: Final = "gen_ai.client.inference.operation.details"
AGENT_TOOLS: Final = "gen_ai.agent.tools"
TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
JSON_SCHEMA: Final = "gen_ai.tool.json_schema"


def _details(span: SpanRecord, key: str) -> Any:
    return event_attribute(span, DETAILS, key)


def _tool_args(span: SpanRecord) -> Any:
    attrs = span.attributes
    for key in ARGS_KEYS:
        if key in attrs:
            return attrs[key]
    content = event_attribute(span, "gen_ai.tool.message", "content")
    if content is not None:
        return content
    calls = genai_issued_calls(_details(span, "gen_ai.input.messages"))
    return calls[0].args if calls else NOT_CAPTURED


def _tool_uses(message: Any) -> list[IssuedCall]:
    blocks = load_json(message)
    calls: list[IssuedCall] = []
    for block in blocks if isinstance(blocks, list) else []:
        use = block.get("toolUse") if isinstance(block, Mapping) else None
        if isinstance(use, Mapping):
            calls.append(IssuedCall(use.get("toolUseId"), use.get("name"), use.get("input")))
    return calls


def _unwrap_input_schema(definition: Any) -> Any:
    """A Strands tool definition with its schema where the catalog reads it.

    Strands writes each tool's spec as Bedrock Converse does (`_construct_tool_definitions`):
    `{"name", "description", "inputSchema": {"json": <JSON schema>}, "outputSchema"}`; the JSON schema is
    the one under `json`. Anything else is kept as it is.
    """
    if not isinstance(definition, Mapping):
        return definition
    wrapped = definition.get("inputSchema")
    if isinstance(wrapped, Mapping) and set(wrapped) == {"json"} and isinstance(wrapped["json"], Mapping):
        return {**definition, "inputSchema": wrapped["json"]}
    return definition


class StrandsExtractor:
    """Spans of Strands Agents."""

    name = "strands"
    gate = Gate(scopes=frozenset({SCOPE}), keys=frozenset({"gen_ai.system", "gen_ai.provider.name"}))
    tool_keys = (TOOL_DEFINITIONS, AGENT_TOOLS)

    def classify(self, span: SpanRecord) -> Role | None:
        """`invoke_agent` is a run, `execute_tool` a tool call, `chat` a model response.

        The event-loop cycle spans between them are steps of the same run (OTHER); a multi-agent
        span (`invoke_swarm`, `invoke_graph`) wraps runs without being one.
        """
        attrs = span.attributes
        if span.scope != SCOPE and SYSTEM not in (attrs.get("gen_ai.system"), attrs.get("gen_ai.provider.name")):
            return None
        operation = attrs.get("gen_ai.operation.name")
        if operation == "invoke_agent":
            return Role.RUN
        if operation == "execute_tool":
            return Role.TOOL
        if operation == "chat":
            return Role.LLM
        return Role.OTHER

    def read(self, span: SpanRecord, role: Role) -> Read:
        attrs = span.attributes
        if role is Role.TOOL:
            failed = attrs.get("gen_ai.tool.status") == "error"
            error, error_type = error_of(span, failed=failed)
            result = next((attrs[k] for k in RESULT_KEYS if k in attrs), None)
            return ToolRead(
                name=string(attrs, "gen_ai.tool.name") or span.name.removeprefix("execute_tool "),
                args=_tool_args(span),
                call_id=string(attrs, "gen_ai.tool.call.id"),
                result=result if result is not None else event_attribute(span, "gen_ai.choice", "message"),
                error=error,
                error_type=error_type,
                description=attrs.get("gen_ai.tool.description"),
                schema=attrs.get(JSON_SCHEMA),
            )
        if role is Role.RUN:
            user = event_attribute(span, "gen_ai.user.message", "content")
            output = event_attribute(span, "gen_ai.choice", "message")
            return RunInfo(
                agent_name=string(attrs, "gen_ai.agent.name"),
                input=message_text(user if user is not None else _details(span, "gen_ai.input.messages"), "user"),
                output=message_text(
                    output if output is not None else _details(span, "gen_ai.output.messages"), "assistant"
                ),
            )
        choice = event_attribute(span, "gen_ai.choice", "message")
        if choice is not None:
            return IssuedCalls(_tool_uses(choice))
        return IssuedCalls(genai_issued_calls(_details(span, "gen_ai.output.messages")))

    def read_tools(self, span: SpanRecord, role: Role) -> list[Any]:
        """`gen_ai.tool.definitions`, else the agent's tool names (`gen_ai.agent.tools`)."""
        attrs = span.attributes
        if TOOL_DEFINITIONS in attrs:
            return [_unwrap_input_schema(d) for d in json_list(attrs[TOOL_DEFINITIONS])]
        names = attrs.get(AGENT_TOOLS)
        return [] if names is None else names_only(names)
