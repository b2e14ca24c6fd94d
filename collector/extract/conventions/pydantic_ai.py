"""pydantic-ai's own instrumentation (`Agent(instrument=...)`, logfire), every data-format version.

Versions 3+ follow the OTel GenAI conventions and are read as such, plus the run's final output and
the exclusion of structured-output spans; version 1/2 (`agent run`, `running tool`) is read here, and
version 1's model output either from the chat span's `events` attribute or, with `event_mode='logs'`,
from its `gen_ai.choice` log record joined to the span as an event.

Content not included (`InstrumentationSettings(include_content=False)`): pydantic-ai leaves the tool
span's arguments attribute out (read as not captured by `tool_args`) and the `arguments` key out of the
model's tool calls (`messages._tool_call_otel_part`: `if settings.include_content and part.args is not
None`; version 1 `ModelResponse.otel_events`: `**({'arguments': part.args} if settings.include_content
else {})`). A call in the model's output without `arguments` is therefore not captured, never "no
arguments": a call no tool span ran (one pydantic-ai skipped) must be flagged, not scored as `{}`. A call
whose arguments were None with content on is flagged too (the two cannot be told apart); its tool span,
when it ran, still gives its arguments.
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
    MAX_DEFINITIONS_CHARS,
    error_of,
    genai_issued_calls,
    json_list,
    load_json,
    message_text,
    string,
)
from toolscore.collector.extract.conventions.genai import ARGS_KEYS, CHOICE_EVENT, RESULT_KEYS, tool_args
from toolscore.collector.sources.log_events import BODY_KEY
from toolscore.collector.spans import SpanRecord

__all__ = ["PydanticAIExtractor"]

# --- Names read ----------------------------------------------------------------------------------
# recognised by  scope `pydantic-ai`, or the v1/v2 span names below with `logfire.msg`
# v3..v5 (InstrumentationSettings(version=3+), pydantic-ai >= 0.7):
#   run span     `invoke_agent <agent>`: gen_ai.operation.name=invoke_agent, gen_ai.agent.name,
#                pydantic_ai.all_messages (JSON GenAI messages: input = last user text), final_result
#   tool span    `execute_tool <tool>`: gen_ai.tool.name, gen_ai.tool.call.id,
#                gen_ai.tool.call.arguments, gen_ai.tool.call.result, status, exception event;
#                logfire.msg `running output function: ...` marks structured output, not a tool
#   model span   `chat <model>`: gen_ai.output.messages (tool_call parts in model order),
#                model_request_parameters (JSON: output_tools[].name, the structured-output tools,
#                `final_result` by default, which pydantic-ai calls without a tool span);
#                tools offered: gen_ai.tool.definitions, else model_request_parameters.function_tools[]
#                {name, description, parameters_json_schema}
# v1/v2 (`agent run`, `running tool`; data format 1 is 0.x's default, 2 is 1.x's):
#   run span     `agent run`: agent_name, final_result; v1 all_messages_events (JSON events), v2
#                pydantic_ai.all_messages
#   tool span    `running tool` / `running output function`: gen_ai.tool.name, gen_ai.tool.call.id,
#                tool_arguments, tool_response
#   model span   `chat <model>`: v2 gen_ai.output.messages as above; v1 events (JSON events: the
#                `gen_ai.choice` one's message.tool_calls[].id/function {name, arguments}), or with
#                event_mode='logs' no `events` attribute but the same events as log records in the
#                chat span's context (`InstrumentationSettings._emit_events`), read as its span events
#                (body under BODY_KEY)

SCOPES: Final = frozenset({"pydantic-ai", "pydantic_ai"})
RUN_NAMES: Final = frozenset({"agent run"})
TOOL_NAMES: Final = frozenset({"running tool", "running output function"})
LOGFIRE_MSG: Final = "logfire.msg"
OUTPUT_FUNCTION_MSG: Final = "running output function"
V2_ARGS: Final = (*ARGS_KEYS, "tool_arguments")
V2_RESULTS: Final = (*RESULT_KEYS, "tool_response")
REQUEST_PARAMETERS: Final = "model_request_parameters"
DEFAULT_OUTPUT_TOOLS: Final = frozenset({"final_result"})


def _first(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in attrs:
            return attrs[key]
    return None


def _v1_issued(span: SpanRecord) -> list[IssuedCall]:
    """Data format 1's model output: the `gen_ai.choice` events' `message.tool_calls`, from the `events`
    attribute (event_mode 'attributes') or, when it is absent, the span's events (event_mode 'logs')."""
    events = span.attributes.get("events")
    if events is not None:
        decoded = load_json(events)
        # the input's assistant events carry `tool_calls` at their top: only the choice nests a `message`
        bodies = decoded if isinstance(decoded, list) else []
    else:
        bodies = [event.attributes.get(BODY_KEY) for event in span.events if event.name == CHOICE_EVENT]
    calls: list[IssuedCall] = []
    for each in bodies:
        body = load_json(each) if isinstance(each, str) else each
        message = body.get("message") if isinstance(body, Mapping) else None
        for call in message.get("tool_calls") or () if isinstance(message, Mapping) else ():
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                calls.append(IssuedCall(call.get("id"), function.get("name"), function.get("arguments", NOT_CAPTURED)))
    return calls


def _output_tools(attrs: Mapping[str, Any]) -> frozenset[str]:
    """The structured-output tools the model was offered: `model_request_parameters.output_tools` names, else
    pydantic-ai's default name. Output tool calls are not traced, so they must not count as model-only calls."""
    params = attrs.get(REQUEST_PARAMETERS)
    if isinstance(params, str) and '"output_tools":[]' in params:  # the usual case, without decoding
        return frozenset()
    decoded = load_json(params)
    tools = decoded.get("output_tools") if isinstance(decoded, Mapping) else None
    if not isinstance(tools, list):
        return DEFAULT_OUTPUT_TOOLS
    return frozenset(t["name"] for t in tools if isinstance(t, Mapping) and isinstance(t.get("name"), str))


class PydanticAIExtractor:
    """Spans of pydantic-ai's instrumentation."""

    name = "pydantic_ai"
    gate = Gate(scopes=SCOPES, keys=frozenset({LOGFIRE_MSG}))
    issued_text = "gen_ai.output.messages"
    tool_keys = ("gen_ai.tool.definitions", REQUEST_PARAMETERS)

    def classify(self, span: SpanRecord) -> Role | None:
        """An agent run span is a run; a tool span (or output-function span) is a tool call.

        Version 1/2 spans are recognised by their names (`agent run`, `running tool`) with the
        `logfire.msg` attribute pydantic-ai always sets; later versions by the `pydantic-ai` scope and
        their GenAI operation. Output-function spans are classified as tool calls so the decision to
        keep them is made in one place (`ExtractConfig.include_output_tools`).
        """
        attrs = span.attributes
        if span.scope not in SCOPES and not (LOGFIRE_MSG in attrs and span.name in RUN_NAMES | TOOL_NAMES):
            return None
        operation = attrs.get("gen_ai.operation.name")
        if operation == "invoke_agent" or span.name in RUN_NAMES:
            return Role.RUN
        if operation == "execute_tool" or span.name in TOOL_NAMES:
            return Role.TOOL
        if operation == "chat" or span.name.startswith("chat "):
            return Role.LLM
        return Role.OTHER

    def read(self, span: SpanRecord, role: Role) -> Read:
        attrs = span.attributes
        if role is Role.TOOL:
            message = string(attrs, LOGFIRE_MSG) or span.name
            error, error_type = error_of(span)
            return ToolRead(
                name=string(attrs, "gen_ai.tool.name") or span.name,
                args=tool_args(attrs, V2_ARGS),
                call_id=string(attrs, "gen_ai.tool.call.id"),
                result=_first(attrs, V2_RESULTS),
                error=error,
                error_type=error_type,
                output_tool=message.startswith(OUTPUT_FUNCTION_MSG),
            )
        if role is Role.RUN:
            final = attrs.get("final_result")
            messages = attrs.get("pydantic_ai.all_messages", attrs.get("all_messages_events"))
            return RunInfo(
                agent_name=string(attrs, "gen_ai.agent.name") or string(attrs, "agent_name"),
                input=message_text(messages, "user"),
                output=final if isinstance(final, str) or final is None else json.dumps(final, default=str),
            )
        if "gen_ai.output.messages" in attrs:
            calls = genai_issued_calls(attrs["gen_ai.output.messages"], unstated=NOT_CAPTURED)
        else:
            calls = _v1_issued(span)
        return IssuedCalls(calls, _output_tools(attrs) if calls else frozenset())

    def read_tools(self, span: SpanRecord, role: Role) -> list[Any]:
        """The function tools offered: `gen_ai.tool.definitions`, else the request parameters' `function_tools`."""
        attrs = span.attributes
        if "gen_ai.tool.definitions" in attrs:
            return json_list(attrs["gen_ai.tool.definitions"])
        params = attrs.get(REQUEST_PARAMETERS)
        if isinstance(params, str) and len(params) > MAX_DEFINITIONS_CHARS:
            raise OverflowError("request parameters too long to decode")
        decoded = load_json(params)
        tools = decoded.get("function_tools") if isinstance(decoded, Mapping) else None
        return json_list(tools) if tools is not None else []
