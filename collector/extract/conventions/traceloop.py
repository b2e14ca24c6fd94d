"""Traceloop OpenLLMetry: `traceloop.span.kind` entity spans and legacy indexed LLM attributes.

OpenLLMetry's entity spans wrap a tool's input in an envelope that depends on who made the span:
the SDK decorators record `{"args": [...], "kwargs": {...}}`, the LangChain instrumentation records
the callback's `{"input_str", "inputs", "kwargs": {"tool_call_id"}, ...}`. Both are unwrapped by
`envelopes.unwrap_envelope`, with every other convention's envelopes. A tool span's envelope is handed
to extraction with its unwrapper (`ToolRead.unwrap`) rather than decoded here: only extraction knows
`max_args_bytes`, and an envelope over it is kept as raw text, cut, like any other oversized arguments,
instead of being decoded whole first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from toolscore.collector.extract.conventions.base import NOT_CAPTURED, Gate, IssuedCalls, Read, Role, RunInfo, ToolRead
from toolscore.collector.extract.conventions.common import (
    error_of,
    genai_issued_calls,
    indexed_issued_calls,
    json_list,
    message_text,
    string,
)
from toolscore.collector.extract.conventions.envelopes import unwrap_envelope
from toolscore.collector.extract.conventions.genai import ARGS_KEYS, RESULT_KEYS
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
# traceloop.span.kind = workflow | task | unknown: OTHER (LangGraph's `<name>.workflow` span also
#                                 says gen_ai.operation.name=invoke_agent under the real
#                                 `invoke_agent` span; reading it as a run would split the run)
# CrewAI (scope opentelemetry.instrumentation.crewai[.instrumentation]): `<role>.agent` (Agent.execute_task)
#                                 says traceloop.span.kind=agent and is the run; `crewai.workflow`
#                                 (Crew.kickoff) says gen_ai.operation.name=invoke_agent with no
#                                 traceloop.span.kind: the crew, OTHER (read as a run by the OTel GenAI
#                                 fallback, it would be a second, empty run around the agents'); its
#                                 `<model>.llm` spans (LLM.call) are left to the fallback (chat spans)
# LLM spans (llm.request.type = chat | completion, or gen_ai.operation.name = chat):
#   v0.4x  gen_ai.completion.<i>.tool_calls.<j>.id | name | arguments
#   v0.5x  gen_ai.output.messages (GenAI JSON parts)
#   tools offered: llm.request.functions.<i>.name | description | parameters (JSON text), or
#          gen_ai.tool.definitions

KIND: Final = "traceloop.span.kind"
ENTITY_NAME: Final = "traceloop.entity.name"
ENTITY_INPUT: Final = "traceloop.entity.input"
ENTITY_OUTPUT: Final = "traceloop.entity.output"
REQUEST_TYPE: Final = "llm.request.type"
FUNCTIONS: Final = "llm.request.functions"
TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
CREWAI_SCOPES: Final = frozenset(
    {"opentelemetry.instrumentation.crewai.instrumentation", "opentelemetry.instrumentation.crewai"}
)
"""OpenLLMetry's CrewAI instrumentation: `get_tracer(__name__)` in its `instrumentation` module (0.62.4), and the
package's own name, under which wrappers that add the async path 0.62.4 lacks (`Crew.akickoff`) write the same spans."""


def _first(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    return next((attrs[key] for key in keys if key in attrs), None)


class TraceloopExtractor:
    """Spans of Traceloop OpenLLMetry."""

    name = "traceloop"
    gate = Gate(keys=frozenset({KIND, REQUEST_TYPE}), scopes=CREWAI_SCOPES)
    issued_text = "gen_ai.output.messages"
    tool_keys = (f"{FUNCTIONS}.0.name", TOOL_DEFINITIONS)

    def classify(self, span: SpanRecord) -> Role | None:
        """Entity kind `tool` is a tool call and `agent` a run; workflows and tasks are neither.

        A legacy LLM span (`llm.request.type`) is read for the order of the calls it issued. The CrewAI
        instrumentation's crew span (`crewai.workflow`, `Crew.kickoff`) says `invoke_agent` without an entity
        kind: it is no run, the agents' `<role>.agent` spans below it are.
        """
        attrs = span.attributes
        kind = attrs.get(KIND)
        if kind is None:
            if span.scope in CREWAI_SCOPES and attrs.get("gen_ai.operation.name") == "invoke_agent":
                return Role.OTHER
            request_type = attrs.get(REQUEST_TYPE)
            return Role.LLM if request_type in ("chat", "completion") else None
        if kind == "tool":
            return Role.TOOL
        if kind == "agent":
            return Role.RUN
        return Role.OTHER

    def read(self, span: SpanRecord, role: Role) -> Read:
        attrs = span.attributes
        if role is Role.TOOL:
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
            return IssuedCalls(genai_issued_calls(attrs["gen_ai.output.messages"]))
        return IssuedCalls(indexed_issued_calls(attrs, "gen_ai.completion", ".tool_calls", ("id", "name", "arguments")))

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
