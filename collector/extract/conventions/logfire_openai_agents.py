"""Pydantic Logfire's instrumentation of the OpenAI Agents SDK (`logfire.instrument_openai_agents()`).

Logfire wraps the SDK's trace provider: every span of the SDK's own trace becomes one Logfire span (scope
`logfire.openai_agents`) whose message template names the kind of the SDK's span data and whose attributes
are that span data's `export()`, objects as their JSON text (Logfire's `logfire.json_schema` says which).
The span name is the template (`Agent run: {name!r}`), or in some versions an OTel-style name (`chat <model>`
for a response): the kind is read from `logfire.msg_template`, the span name only when it is missing.

Call ids are not on the tool spans (the SDK's function span data has none): they come from the model span
that issued the calls (see `runs`), which also names a handoff's tool.

Logfire's scrubber (on by default) rewrites any string value, JSON text included, that matches one of its
patterns (`session`, `secret`, `auth`, `api_key`, `password`, ...) to `[Scrubbed due to '<match>']`, and
lists what it rewrote in `logfire.scrubbed` (JSON: `[{"path": ["attributes", <key>, ...], ...}]`). A
scrubbed value is not what the model sent or the tool received: arguments with a scrubbed part are taken
as not captured, a scrubbed tool or agent name is read from `logfire.msg` (which Logfire formats without
scrubbing), and a model span's scrubbed call id, name or arguments are not used.
"""

from __future__ import annotations

import ast
import re
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
    load_json,
    names_only,
    string,
)
from toolscore.collector.spans import SpanRecord

__all__ = ["LogfireOpenAIAgentsExtractor"]

# --- Names read (logfire/_internal/integrations/openai_agents.py, logfire 5.4 and the older sources seen) -----
# recognised by  scope `logfire.openai_agents`; the kind from `logfire.msg_template` (else the span name)
# run span       `Agent run: {name!r}` (AgentSpanData): name, tools (JSON list of tool names), handoffs
# tool span      `Function: {name}` (FunctionSpanData, function and MCP tools alike): name, input (the
#                model's arguments, JSON text; `null` when the SDK's trace_include_sensitive_data is off),
#                output (the result), error (JSON {"message", "data"}: the SDK's non-fatal tool error,
#                status ERROR); logfire.msg `Function: <name>[ failed: <message>]`
#                `Handoff: {from_agent} → {to_agent}` (HandoffSpanData): a handoff, the tool name and
#                arguments only in the model span that issued it
# model span     `Responses API[ with {gen_ai.request.model!r}]` (ResponseSpanData): response (JSON of the
#                Response: output[] items {type: function_call, call_id, name, arguments} in model order;
#                absent without sensitive data), else gen_ai.output.messages (GenAI tool_call parts)
#                `Chat completion with {gen_ai.request.model!r}` (GenerationSpanData, chat completions and
#                LiteLLM): output (JSON list: chat messages with tool_calls[] {id, function: {name,
#                arguments}}, or, streamed, the Response the SDK built, with output[] items as above)
# not a run      `OpenAI Agents trace: {name}` (the SDK trace), `Task: ...`, `Turn {turn} for agent ...`,
#                guardrail, custom, MCP list-tools and speech spans: OTHER
# scrubbing      logfire.scrubbed (JSON list of {"path": [...], "matched_substring"}), logfire.msg

SCOPES: Final = frozenset({"logfire.openai_agents"})
TEMPLATE: Final = "logfire.msg_template"
MESSAGE: Final = "logfire.msg"
SCRUBBED: Final = "logfire.scrubbed"
JSON_SCHEMA: Final = "logfire.json_schema"
RUN_TEMPLATE: Final = "Agent run: {name!r}"
TOOL_TEMPLATE: Final = "Function: {name}"
HANDOFF_PREFIX: Final = "Handoff: "
RESPONSE_PREFIX: Final = "Responses API"
GENERATION_PREFIX: Final = "Chat completion with "
FUNCTION_CALL: Final = "function_call"
_RUN, _TOOL, _LLM, _OTHER = Role.RUN, Role.TOOL, Role.LLM, Role.OTHER
_NULL_SCHEMA: Final = re.compile(r'"input"\s*:\s*\{\s*"type"\s*:\s*"null"\s*\}')
_FAILED: Final = " failed: "
_QUOTED: Final = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*\"""")

Path = tuple[Any, ...]


def _scrubbed_paths(attrs: Mapping[str, Any]) -> list[Path] | None:
    """The attribute paths Logfire's scrubber rewrote (`logfire.scrubbed`), None when it rewrote none.

    A note that cannot be read is taken as scrubbing everything (the path `("attributes",)`)."""
    notes = attrs.get(SCRUBBED)
    if notes is None:
        return None
    decoded = load_json(notes)
    if not isinstance(decoded, list):
        return [("attributes",)]
    paths: list[Path] = []
    for note in decoded:
        path = note.get("path") if isinstance(note, Mapping) else None
        paths.append(tuple(path) if isinstance(path, list) else ("attributes",))
    return paths


def _touched(paths: list[Path] | None, field: Path) -> bool:
    """Whether a scrubbed path lies in `field` or contains it (one is a prefix of the other)."""
    if not paths:
        return False
    for path in paths:
        size = min(len(path), len(field))
        if path[:size] == field[:size]:
            return True
    return False


def _template(span: SpanRecord) -> str:
    template = span.attributes.get(TEMPLATE)
    return template if isinstance(template, str) and template else span.name


def _tool_name(span: SpanRecord, scrubbed: list[Path] | None) -> str | None:
    """`name`, else (scrubbed) the name in `logfire.msg`, `Function: <name>[ failed: <message>]`."""
    attrs = span.attributes
    if not _touched(scrubbed, ("attributes", "name")):
        return string(attrs, "name")
    message = string(attrs, MESSAGE)
    prefix = TOOL_TEMPLATE.removesuffix("{name}")
    if message is None or not message.startswith(prefix):
        return None
    name = message[len(prefix) :]
    if "error" in attrs and _FAILED in name:
        name = name[: name.index(_FAILED)]  # tool names are identifiers: the first one
    return name or None


def _agent_name(span: SpanRecord, scrubbed: list[Path] | None) -> str | None:
    """`name`, else (scrubbed) the repr in `logfire.msg`, `Agent run: '<name>'[ failed: ...]`."""
    attrs = span.attributes
    if not _touched(scrubbed, ("attributes", "name")):
        return string(attrs, "name")
    message = string(attrs, MESSAGE)
    prefix = RUN_TEMPLATE.removesuffix("{name!r}")
    quoted = _QUOTED.match(message, len(prefix)) if message is not None and message.startswith(prefix) else None
    if quoted is None:
        return None
    try:
        name = ast.literal_eval(quoted.group())
    except (ValueError, SyntaxError):
        return None
    return name if isinstance(name, str) and name else None


def _tool_args(attrs: Mapping[str, Any], scrubbed: list[Path] | None) -> Any:
    """`input`, or NOT_CAPTURED: absent, None (`null`, as Logfire writes a None), or partly scrubbed."""
    args = attrs.get("input")
    if args is None or _touched(scrubbed, ("attributes", "input")):
        return NOT_CAPTURED
    if args == "null" and _NULL_SCHEMA.search(str(attrs.get(JSON_SCHEMA, ""))):
        return NOT_CAPTURED
    return args


def _item_call(item: Mapping[str, Any], path: Path, scrubbed: list[Path] | None) -> IssuedCall:
    """A Responses API `function_call` output item's call, without its scrubbed fields."""
    call_id, name, args = item.get("call_id"), item.get("name"), item.get("arguments")
    return IssuedCall(
        call_id if isinstance(call_id, str) and call_id and not _touched(scrubbed, (*path, "call_id")) else None,
        name if isinstance(name, str) and name and not _touched(scrubbed, (*path, "name")) else None,
        None if _touched(scrubbed, (*path, "arguments")) else args,
    )


def _chat_call(call: Mapping[str, Any], path: Path, scrubbed: list[Path] | None) -> IssuedCall:
    """A chat completion message's `tool_calls[j]` call, without its scrubbed fields."""
    function = call.get("function")
    function = function if isinstance(function, Mapping) else {}
    call_id, name = call.get("id"), function.get("name")
    return IssuedCall(
        call_id if isinstance(call_id, str) and call_id and not _touched(scrubbed, (*path, "id")) else None,
        name if isinstance(name, str) and name and not _touched(scrubbed, (*path, "function", "name")) else None,
        None if _touched(scrubbed, (*path, "function", "arguments")) else function.get("arguments"),
    )


def _output_calls(items: Any, path: Path, scrubbed: list[Path] | None) -> list[IssuedCall]:
    """The calls of a Responses API `output` list, in order."""
    calls: list[IssuedCall] = []
    for i, item in enumerate(items if isinstance(items, list) else ()):
        if isinstance(item, Mapping) and item.get("type") == FUNCTION_CALL:
            calls.append(_item_call(item, (*path, i), scrubbed))
    return calls


def _generation_calls(output: Any, scrubbed: list[Path] | None) -> list[IssuedCall]:
    """The calls of a generation span's `output`: chat messages' `tool_calls`, Responses output items, or a
    Response (the SDK's streamed chat completion) with its `output` items."""
    calls: list[IssuedCall] = []
    for k, entry in enumerate(output if isinstance(output, list) else ()):
        if not isinstance(entry, Mapping):
            continue
        path: Path = ("attributes", "output", k)
        tool_calls = entry.get("tool_calls")
        if isinstance(tool_calls, list):
            calls.extend(
                _chat_call(call, (*path, "tool_calls", j), scrubbed)
                for j, call in enumerate(tool_calls)
                if isinstance(call, Mapping)
            )
        elif entry.get("type") == FUNCTION_CALL:
            calls.append(_item_call(entry, path, scrubbed))
        elif isinstance(entry.get("output"), list):
            calls.extend(_output_calls(entry["output"], (*path, "output"), scrubbed))
    return calls


class LogfireOpenAIAgentsExtractor:
    """Spans of Logfire's OpenAI Agents SDK integration."""

    name = "logfire_openai_agents"
    gate = Gate(scopes=SCOPES)
    tool_keys = ("tools",)

    def classify(self, span: SpanRecord) -> Role | None:
        """`Agent run` spans are runs, `Function` and `Handoff` spans tool calls, `Responses API` and
        `Chat completion` spans model responses; every other span of the scope is claimed as OTHER (the
        SDK's trace, task and turn spans would otherwise be read by the GenAI fallback)."""
        if span.scope not in SCOPES:
            return None
        template = _template(span)
        if template == RUN_TEMPLATE:
            return _RUN
        if template == TOOL_TEMPLATE or template.startswith(HANDOFF_PREFIX):
            return _TOOL
        if template.startswith((RESPONSE_PREFIX, GENERATION_PREFIX)):
            return _LLM
        return _OTHER

    def read(self, span: SpanRecord, role: Role) -> Read:
        attrs = span.attributes
        scrubbed = _scrubbed_paths(attrs)
        if role is _TOOL:
            if _template(span).startswith(HANDOFF_PREFIX):
                return ToolRead(name=None, handoff=True)
            name = _tool_name(span, scrubbed)
            if name is None:
                raise ValueError("a Function span without a readable tool name")
            error, error_type = error_of(span, failed="error" in attrs)
            return ToolRead(
                name=name,
                args=_tool_args(attrs, scrubbed),
                result=attrs.get("output"),
                error=error,
                error_type=error_type,
            )
        if role is _RUN:
            return RunInfo(agent_name=_agent_name(span, scrubbed))
        if _template(span).startswith(GENERATION_PREFIX):
            return IssuedCalls(_generation_calls(load_json(attrs.get("output")), scrubbed))
        if "response" in attrs:
            response = load_json(attrs["response"])
            items = response.get("output") if isinstance(response, Mapping) else None
            return IssuedCalls(_output_calls(items, ("attributes", "response", "output"), scrubbed))
        if "gen_ai.output.messages" in attrs and not _touched(scrubbed, ("attributes", "gen_ai.output.messages")):
            return IssuedCalls(genai_issued_calls(attrs["gen_ai.output.messages"]))
        return IssuedCalls()

    def read_tools(self, span: SpanRecord, role: Role) -> list[Any]:
        """The run span's `tools`: the names of the agent's tools (handoffs not among them)."""
        if role is not _RUN or _touched(_scrubbed_paths(span.attributes), ("attributes", "tools")):
            return []
        return names_only(span.attributes["tools"])
