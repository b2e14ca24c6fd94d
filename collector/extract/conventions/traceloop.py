"""Traceloop OpenLLMetry: `traceloop.span.kind` entity spans and legacy indexed LLM attributes.

OpenLLMetry's entity spans wrap a tool's input in an envelope that depends on who made the span:
the SDK decorators record `{"args": [...], "kwargs": {...}}`, the LangChain instrumentation records
the callback's `{"input_str", "inputs", "kwargs": {"tool_call_id"}, ...}`. Both are unwrapped by
`envelopes.unwrap_envelope`, with every other convention's envelopes. A tool span's envelope is handed
to extraction with its unwrapper (`ToolRead.unwrap`) rather than decoded here: only extraction knows
`max_args_bytes`, and an envelope over it is kept as raw text, cut, like any other oversized arguments,
instead of being decoded whole first.

OpenLLMetry's model spans carry no `traceloop.span.kind`; those of its OpenAI Agents SDK processor and of its
`openai` client instrumentation are recognised by their scopes. The client instrumentation's Responses API span
(`openai.response`) lists each `function_call` output item's own `id` (`fc_...`) as the tool call's id, in
`gen_ai.output.messages` and in the older `gen_ai.completion.0.tool_calls.<j>.id` alike
(`v1/responses_wrappers.py`: `"id": block_dict.get("id")`), never its `call_id`, which is what the tool's
result answers and what every other span calls the call: its calls are read without an id. Under the Agents
SDK that span is the same response the SDK's own `openai.response` span records one layer up (with the real
call ids): `runs` reads such a model span layer as one response.
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
    genai_issued_calls,
    indexed_issued_calls,
    json_list,
    message_text,
    string,
)
from toolscore.collector.extract.conventions.envelopes import unwrap_envelope
from toolscore.collector.extract.conventions.genai import ARGS_KEYS, INFERENCE_OPERATIONS, OPERATION, RESULT_KEYS
from toolscore.collector.spans import SpanRecord

__all__ = ["TraceloopExtractor"]

# --- Names read (traceloop/openllmetry opentelemetry-semantic-conventions-ai) ----------------------
# recognised by  traceloop.span.kind, or llm.request.type (legacy LLM spans)
# traceloop.span.kind = tool      tool call: gen_ai.tool.name, else traceloop.entity.name;
#                                 arguments gen_ai.tool.call.arguments, else traceloop.entity.input
#                                 (envelopes within max_args_bytes unwrapped: `inputs`, or decorator
#                                 `kwargs`/`args`; larger ones kept raw and cut);
#                                 call id gen_ai.tool.call.id, else envelope kwargs.tool_call_id;
#                                 result gen_ai.tool.call.result, else traceloop.entity.output
# traceloop.span.kind = agent     run: gen_ai.agent.name, else traceloop.entity.name;
#                                 traceloop.entity.input / traceloop.entity.output
# traceloop.span.kind = handoff  the OpenAI Agents SDK's handoff (`<from> → <to>.handoff`, under the
#                                 handing-off agent's span): a call of the handoff tool, whose name, id
#                                 and arguments only the model response that issued it holds
# traceloop.span.kind = workflow | task | unknown: OTHER (LangGraph's `<name>.workflow` span also
#                                 says gen_ai.operation.name=invoke_agent under the real
#                                 `invoke_agent` span; reading it as a run would split the run)
# LLM spans (llm.request.type = chat | completion, or gen_ai.operation.name = chat | text_completion |
# generate_content on a span of SCOPES: the Agents SDK's `openai.response`, the client's `openai.chat`,
# `openai.response`):
#   v0.4x  gen_ai.completion.<i>.tool_calls.<j>.id | name | arguments
#   v0.5x  gen_ai.output.messages (GenAI JSON parts)
#   Responses API client span (scope opentelemetry.instrumentation.openai.v1, `openai.response`): the
#          ids listed are output item ids, not call ids: read as no id
#   tools offered: llm.request.functions.<i>.name | description | parameters (JSON text), or
#          gen_ai.tool.definitions

KIND: Final = "traceloop.span.kind"
ENTITY_NAME: Final = "traceloop.entity.name"
ENTITY_INPUT: Final = "traceloop.entity.input"
ENTITY_OUTPUT: Final = "traceloop.entity.output"
REQUEST_TYPE: Final = "llm.request.type"
HANDOFF: Final = "handoff"
AGENTS_SCOPE: Final = "opentelemetry.instrumentation.openai_agents"
"""OpenLLMetry's OpenAI Agents SDK processor (`opentelemetry-instrumentation-openai-agents`)."""
OPENAI_SCOPE: Final = "opentelemetry.instrumentation.openai.v1"
"""OpenLLMetry's `openai` client instrumentation (`opentelemetry-instrumentation-openai`, openai >= 1)."""
SCOPES: Final = frozenset({AGENTS_SCOPE, OPENAI_SCOPE})
RESPONSES_SPAN: Final = "openai.response"
"""The client instrumentation's Responses API span (`v1/responses_wrappers.py` SPAN_NAME)."""
FUNCTIONS: Final = "llm.request.functions"
TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"


def _first(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    return next((attrs[key] for key in keys if key in attrs), None)


class TraceloopExtractor:
    """Spans of Traceloop OpenLLMetry."""

    name = "traceloop"
    gate = Gate(scopes=SCOPES, keys=frozenset({KIND, REQUEST_TYPE}))
    issued_text = "gen_ai.output.messages"
    tool_keys = (f"{FUNCTIONS}.0.name", TOOL_DEFINITIONS)

    def classify(self, span: SpanRecord) -> Role | None:
        """Entity kind `tool` is a tool call and `agent` a run; workflows and tasks are neither.

        A handoff is a tool call (of the handoff tool the model called). A legacy LLM span
        (`llm.request.type`), or an inference span of OpenLLMetry's Agents SDK processor or `openai` client
        instrumentation (`SCOPES`), is read for the calls it issued; the scopes' other spans are left to the
        other conventions.
        """
        attrs = span.attributes
        kind = attrs.get(KIND)
        if kind is None:
            request_type = attrs.get(REQUEST_TYPE)
            if request_type in ("chat", "completion"):
                return Role.LLM
            if span.scope in SCOPES and attrs.get(OPERATION) in INFERENCE_OPERATIONS:
                return Role.LLM
            return None
        if kind in ("tool", HANDOFF):
            return Role.TOOL
        if kind == "agent":
            return Role.RUN
        return Role.OTHER

    def read(self, span: SpanRecord, role: Role) -> Read:
        attrs = span.attributes
        if role is Role.TOOL:
            if attrs.get(KIND) == HANDOFF:
                return ToolRead(name=None, handoff=True)
            raw = _first(attrs, (*ARGS_KEYS, ENTITY_INPUT))
            error, error_type = error_of(span)
            return ToolRead(
                name=string(attrs, "gen_ai.tool.name") or string(attrs, ENTITY_NAME) or span.name,
                args=NOT_CAPTURED if raw is None else raw,
                call_id=string(attrs, "gen_ai.tool.call.id"),
                result=_first(attrs, (*RESULT_KEYS, ENTITY_OUTPUT)),
                error=error,
                error_type=error_type,
                unwrap=None if raw is None else unwrap_envelope,  # once the envelope is known to fit the cap
            )
        if role is Role.RUN:
            raw_input = attrs.get(ENTITY_INPUT)
            return RunInfo(
                agent_name=string(attrs, "gen_ai.agent.name") or string(attrs, ENTITY_NAME),
                input=None if raw_input is None else message_text(unwrap_envelope(raw_input)[0], "user"),
                output=message_text(attrs.get(ENTITY_OUTPUT), "assistant"),
            )
        if "gen_ai.output.messages" in attrs:
            calls = genai_issued_calls(attrs["gen_ai.output.messages"])
        else:
            calls = indexed_issued_calls(attrs, "gen_ai.completion", ".tool_calls", ("id", "name", "arguments"))
        if span.scope == OPENAI_SCOPE and span.name == RESPONSES_SPAN:  # item ids, not call ids: see the docstring
            calls = [IssuedCall(None, call.name, call.args) for call in calls]
        return IssuedCalls(calls)

    def read_tools(self, span: SpanRecord, role: Role) -> list[Any]:
        """`llm.request.functions.<i>.*` (the legacy flattened request), or `gen_ai.tool.definitions`."""
        attrs = span.attributes
        if TOOL_DEFINITIONS in attrs:
            return json_list(attrs[TOOL_DEFINITIONS])
        tools: list[Any] = []
        for i in range(256):
            prefix = f"{FUNCTIONS}.{i}."
            name = attrs.get(prefix + "name")
            if name is None:
                break
            tools.append(
                {
                    "name": name,
                    "description": attrs.get(prefix + "description"),
                    "parameters": attrs.get(prefix + "parameters"),
                }
            )
        return tools
