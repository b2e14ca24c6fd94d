"""Langfuse's Python SDK (v3 and later): Langfuse observations made as OpenTelemetry spans (scope `langfuse-sdk`).

The SDK makes every observation with the tracer `langfuse-sdk` of the provider its client was given
(`_client/constants.py` `LANGFUSE_TRACER_NAME`, `_client/resource_manager.py`), so a team that adds its own span
processor to that provider receives them. An observation says what it is in `langfuse.observation.type`
(`_client/attributes.py`): `span`, `generation`, `embedding`, `agent`, `tool`, `chain`, `retriever`, `evaluator`,
`guardrail`, `event` (`_client/constants.py`). Its input and output are `langfuse.observation.input` / `.output`:
JSON text of the value, or the string itself when the value is a string (`attributes._serialize`). A failure is
`langfuse.observation.level` `ERROR` with `langfuse.observation.status_message` (`str(error)`), and the span status
ERROR with that message (`span._set_otel_span_status_if_error`); no exception event, so no error type. Metadata is
one attribute per key, `langfuse.observation.metadata.<key>`; v5 writes every value as JSON (a string quoted), v3
and v4 wrote a string as it was (`attributes._flatten_and_serialize_metadata`).

What writes them, and how a reader takes each:

- the `@observe` decorator and `start_as_current_observation` (`_client/observe.py`): the type is the user's
  `as_type`; a decorated function's input is `{"args": [...], "kwargs": {...}}`, its output the return value. A
  tool's call is then the envelope's keyword arguments (`envelopes`); a run's question its one positional string.
- the LangChain `CallbackHandler` (`langchain/CallbackHandler.py`): a tool run is a `tool` observation named after
  the tool, its input the tool's input (`inputs`, the dict of arguments, else `input_str`), its call id the
  metadata key `tool_call_id` (LangChain passes it to `on_tool_start`), its output the `ToolMessage`; a failure
  (`on_tool_error`, or a `ToolMessage` of status `error`) is level ERROR. A model call is a `generation` whose
  output is the response message as `{"role": "assistant", "content", "tool_calls": [{"name", "args", "id",
  "type": "tool_call"}]}` (`_convert_message_to_dict`, LangChain's own tool calls, in the model's order). A chain
  run is an `agent` observation when its serialized class path or its name contains "agent", else a `chain`
  (`_get_observation_type_from_serialized`); the LangGraph node spans carry `langgraph_node` in their metadata.
- the OpenAI drop-in `langfuse.openai` (`openai.py`): each request is a `generation`; its output is the Chat
  Completions message (`{"role", "content", "tool_calls": [{"id", "type": "function", "function": {"name",
  "arguments"}}]}`, a list of them for several choices), the streamed message put together from its chunks in the
  same shape (or the text alone, or None), or the Responses API output: its list of items (`function_call` items
  with `call_id`, `name`, `arguments`), the one item itself when there is one (`_extract_response_api_completion`).

Runs, as the other readers take them. An `agent` observation is a run, except the span of a LangGraph node (its
`langgraph_node` metadata is its own name: a prebuilt `create_react_agent`'s node `agent`, a middleware hook node
`<Middleware>.before_agent`), which is a step of the graph's run. LangChain's `create_agent` graph is a run
whatever its type: the handler makes it a `chain` when the agent's name lacks "agent", and create_agent's metadata
(`ls_integration` `langchain_create_agent`, `lc_agent_name`) names it (`openinference._create_agent_root`, the
same rule). Other chains, and every `span`, are steps: where no run is above a call, the run is inferred from the
tree. A create_agent `model` node whose output answers structured-output calls is read as the model response its
generation is a layer of (`langchain_agent`).
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
    MAX_DEFINITIONS_CHARS,
    chat_tool_calls,
    error_of,
    function_call_item,
    load_json,
    message_text,
)
from toolscore.collector.extract.conventions.envelopes import unwrap_unless_declared
from toolscore.collector.extract.conventions.langchain_agent import CREATE_AGENT, MODEL_NODE, node_response
from toolscore.collector.spans import SpanRecord

__all__ = ["LangfuseExtractor", "tool_results"]

# --- Names read (langfuse Python SDK 3.x-5.x, `langfuse/_client/attributes.py`) ----------------------
# recognised by  scope `langfuse-sdk` and langfuse.observation.type
# run           type agent (not a LangGraph node's own span: metadata langgraph_node = the span name); type
#               chain or agent of a LangChain create_agent graph's root (metadata ls_integration
#               langchain_create_agent, lc_agent_name = the span name, or no langgraph_node when unnamed);
#               name: the span name; input/output: langfuse.observation.input / .output
# tool          type tool: name = the span name; arguments: langfuse.observation.input (@observe's
#               {"args": [], "kwargs": {...}} envelope taken off); call id: metadata tool_call_id
#               (LangChain), else the output ToolMessage's tool_call_id; result: langfuse.observation.output;
#               failed: langfuse.observation.level ERROR or status ERROR
# model         type generation: langfuse.observation.output tool calls, in the model's order: LangChain
#               {"tool_calls": [{"id", "name", "args"}]}, Chat Completions {"tool_calls": [{"id", "function":
#               {"name", "arguments"}}]} (the first choice of a list), Responses API function_call items
#               ({"call_id", "name", "arguments"}, one item or a list); no output at all (or the SDK's mask
#               fallback) on a generation that did not fail: its calls are unknown (`IssuedCalls.partial`)
# tools offered generation input: the request's `tools` (drop-in: {"tools": [...], "messages"|"input": ...},
#               OpenAI function tools, nested or Responses API flat), or LangChain's messages list, where the
#               handler appends each tool as {"role": "tool", "content": {"type": "function", "function": {...}}}
# tool results  generation input: {"role": "tool", "tool_call_id", "content"} messages (Chat Completions,
#               LangChain), Responses API {"type": "function_call_output", "call_id", "output"} items
# CHAIN `model` create_agent's model node whose output update answers structured-output calls (`langchain_agent`)
# other types   span, chain, event, retriever, embedding, evaluator, guardrail: OTHER

SCOPE: Final = "langfuse-sdk"
TYPE: Final = "langfuse.observation.type"
INPUT: Final = "langfuse.observation.input"
OUTPUT: Final = "langfuse.observation.output"
LEVEL: Final = "langfuse.observation.level"
METADATA: Final = "langfuse.observation.metadata."
MASK_FALLBACK: Final = "<fully masked due to failed mask function>"
"""What the SDK writes for an input or output its mask function failed on (`constants.MASK_FALLBACK_VALUE`)."""

_OTHER_TYPES: Final = frozenset({"span", "event", "retriever", "embedding", "evaluator", "guardrail"})


def _metadata(attrs: Mapping[str, Any], key: str) -> Any:
    """A metadata value: v5 writes each as JSON (a string quoted), v3/v4 a string as it was."""
    value = attrs.get(METADATA + key)
    if isinstance(value, str) and value[:1] in '"[{':
        decoded = load_json(value)
        return value if decoded is None else decoded
    return value


def _create_agent_root(span: SpanRecord) -> bool:
    """The root of a LangChain `create_agent` graph: its metadata names create_agent and the agent is the span
    (or, for an agent without a name, the span runs in no node). A node's span has its node as `langgraph_node`."""
    attrs = span.attributes
    if _metadata(attrs, "ls_integration") != CREATE_AGENT:
        return False
    node = _metadata(attrs, "langgraph_node")
    if node == span.name:
        return False
    named = _metadata(attrs, "lc_agent_name")
    return named == span.name if named is not None else node is None


def _node_span(span: SpanRecord) -> bool:
    """A LangGraph node's own span (or the runnable it runs, named alike): its metadata's node is its name."""
    return bool(_metadata(span.attributes, "langgraph_node") == span.name)


def _call_id(attrs: Mapping[str, Any]) -> str | None:
    call_id = _metadata(attrs, "tool_call_id")
    if isinstance(call_id, str) and call_id:
        return call_id
    output = attrs.get(OUTPUT)
    if isinstance(output, str) and '"tool_call_id"' in output:
        decoded = load_json(output)
        found = decoded.get("tool_call_id") if isinstance(decoded, Mapping) else None
        return found if isinstance(found, str) and found else None
    return None


def _text_of_call(value: Any) -> str | None:
    """The one string a decorated function was called with (`{"args": ["..."], "kwargs": {}}`), else None."""
    decoded = load_json(value) if isinstance(value, str) and value.startswith('{"args"') else None
    if isinstance(decoded, Mapping) and set(decoded) == {"args", "kwargs"}:
        args, kwargs = decoded["args"], decoded["kwargs"]
        strings = [a for a in (*(args if isinstance(args, list) else ()), *(kwargs or {}).values()) if a]
        if len(strings) == 1 and isinstance(strings[0], str):
            return strings[0]
    return None


def _langchain_text(value: Any, kind: str) -> str | None:
    """The text of the last LangChain message of `kind` ("human", "ai") in a graph's state `{"messages": [...]}`
    (messages as LangChain serialises them: `{"content", "type"}`)."""
    decoded = load_json(value) if isinstance(value, str) and '"messages"' in value else None
    messages = decoded.get("messages") if isinstance(decoded, Mapping) else None
    listed: list[Any] = messages if isinstance(messages, list) else []
    for message in reversed(listed):
        if isinstance(message, Mapping) and message.get("type") == kind:
            text = message_text(message.get("content"), "user" if kind == "human" else "assistant")
            if text:
                return text
    return None


def _run_text(value: Any, role: str) -> str | None:
    if value is None:
        return None
    found = _text_of_call(value) if role == "user" else None
    if found is None:
        found = _langchain_text(value, "human" if role == "user" else "ai")
    return found if found is not None else message_text(value, role)


def _issued(output: Any) -> list[IssuedCall]:
    if not (isinstance(output, str) and ('"tool_calls"' in output or '"function_call"' in output)):
        return []  # plain text, or a message without calls: nothing to decode
    decoded = load_json(output)
    if isinstance(decoded, Mapping):
        if decoded.get("type") == "function_call":
            return [function_call_item(decoded)]
        return chat_tool_calls(decoded)
    if not isinstance(decoded, list):
        return []
    items = [item for item in decoded if isinstance(item, Mapping)]
    if any("type" in item and "role" not in item for item in items):  # Responses API output items
        return [function_call_item(item) for item in items if item.get("type") == "function_call"]
    first = next(iter(items), None)  # the choices of a Chat Completions response: the first is the one used
    return chat_tool_calls(first) if first is not None else []


def _request(span_attributes: Mapping[str, Any], marker: str) -> Any:
    """A generation's decoded input when its text holds `marker`, else None."""
    if span_attributes.get(TYPE) != "generation":
        return None
    text = span_attributes.get(INPUT)
    if not (isinstance(text, str) and marker in text):
        return None
    if len(text) > MAX_DEFINITIONS_CHARS:
        raise OverflowError("generation input too long to decode")
    return load_json(text)


def _messages(request: Any) -> list[Any]:
    """The messages or input items of a request as the SDK records it (a list, or under `messages` / `input`)."""
    if isinstance(request, Mapping):
        request = request.get("messages", request.get("input"))
    return request if isinstance(request, list) else []


def tool_results(span_attributes: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The tool results a generation's request sent back to the model, (call id, content), in request order:
    `tool` messages with `tool_call_id` (Chat Completions; LangChain's ToolMessages as the handler writes them)
    and Responses API `function_call_output` items. Nothing for a span that is no Langfuse generation."""
    try:
        request = _request(span_attributes, '"tool')
    except OverflowError:
        return []
    found: list[tuple[str, Any]] = []
    for message in _messages(request) if request is not None else ():
        if not isinstance(message, Mapping):
            continue
        if message.get("role") == "tool" and isinstance(call_id := message.get("tool_call_id"), str) and call_id:
            found.append((call_id, message.get("content")))
        elif message.get("type") == "function_call_output" and isinstance(call_id := message.get("call_id"), str):
            found.append((call_id, message.get("output")))
    return found


class LangfuseExtractor:
    """Observations of the Langfuse Python SDK (`langfuse.observation.type`, scope `langfuse-sdk`)."""

    name = "langfuse"
    gate = Gate(scopes=frozenset({SCOPE}))
    tool_keys = (INPUT,)
    partial_responses = True
    """A generation without output may have issued calls it does not list."""

    def classify(self, span: SpanRecord) -> Role | None:
        """`agent` is a run and `tool` a tool call, `generation` a model response (see the module docstring)."""
        if span.scope != SCOPE:
            return None
        kind = span.attributes.get(TYPE)
        if kind is None:
            return None
        if kind == "tool":
            return Role.TOOL
        if kind == "generation":
            return Role.LLM
        if kind in _OTHER_TYPES:
            return Role.OTHER
        if kind == "agent" and not _node_span(span):
            return Role.RUN
        if kind in ("agent", "chain") and _create_agent_root(span):
            return Role.RUN
        if kind == "chain" and span.name == MODEL_NODE and _answering_model_node(span):
            return Role.LLM
        return Role.OTHER

    def read(self, span: SpanRecord, role: Role) -> Read:
        attrs = span.attributes
        if role is Role.TOOL:
            args = attrs.get(INPUT, NOT_CAPTURED)
            if args == MASK_FALLBACK:
                args = NOT_CAPTURED
            error, error_type = error_of(span, failed=attrs.get(LEVEL) == "ERROR")
            return ToolRead(
                name=span.name,
                args=args,
                call_id=_call_id(attrs),
                result=attrs.get(OUTPUT),
                error=error,
                error_type=error_type,
                unwrap=unwrap_unless_declared(args, None),
            )
        if role is Role.RUN:
            return RunInfo(
                agent_name=span.name,
                input=_run_text(attrs.get(INPUT), "user"),
                output=_run_text(attrs.get(OUTPUT), "assistant"),
            )
        if attrs.get(TYPE) == "chain":  # a create_agent model node that answered structured output
            return node_response(attrs.get(OUTPUT)) or IssuedCalls()
        output = attrs.get(OUTPUT)
        if (output is None or output == MASK_FALLBACK) and attrs.get(LEVEL) != "ERROR":
            return IssuedCalls(partial=True)
        return IssuedCalls(_issued(output))

    def read_tools(self, span: SpanRecord, role: Role) -> list[Any]:
        """The tools a generation's request offered (see the names read above)."""
        request = _request(span.attributes, '"function"') if role is Role.LLM else None
        if isinstance(request, Mapping):
            tools = request.get("tools")
            return list(tools) if isinstance(tools, list) else []
        return [
            message["content"]
            for message in (request if isinstance(request, list) else ())
            if isinstance(message, Mapping)
            and message.get("role") == "tool"
            and isinstance(message.get("content"), Mapping)
            and message["content"].get("type") == "function"
        ]


def _answering_model_node(span: SpanRecord) -> bool:
    return _metadata(span.attributes, "ls_integration") == CREATE_AGENT and (
        node_response(span.attributes.get(OUTPUT)) is not None
    )
