"""MLflow Tracing (`mlflow-tracing`, `mlflow-skinny`, `mlflow` 3.x) exported over OTLP.

With `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (or `OTEL_EXPORTER_OTLP_ENDPOINT`) set, MLflow sends its spans to that
collector with the OTel SDK's OTLP exporter instead of its tracking server (`mlflow/tracing/utils/otlp.py`,
`should_use_otlp_exporter`; `MLFLOW_TRACE_ENABLE_OTLP_DUAL_EXPORT` sends to both). Its spans keep MLflow's own
attributes, every value **JSON text** (`LiveSpan.set_attribute` stores `json.dumps(value)`, so a span type reads
`"TOOL"` with its quotes): `mlflow.spanType`, `mlflow.spanInputs`, `mlflow.spanOutputs`. What a span is comes from
`mlflow.spanType` alone (`SpanType`, `mlflow/entities/span.py`), whatever wrote it: `@mlflow.trace` /
`mlflow.start_span` in user code, or an autolog integration.

- AGENT is a run (the user's `@mlflow.trace(span_type=SpanType.AGENT)`, and what MLflow's agent integrations
  write for an agent's invocation), named after the span.
- TOOL is a tool call, named after the span. `@mlflow.trace` records the function's bound arguments with its
  defaults filled in (`capture_function_input_args`, `apply_defaults`), and no call id; the LangChain callback
  (`MlflowLangchainTracer.on_tool_start`) records `ast.literal_eval` of LangChain's input text, and passes the
  callback's own keywords as attributes, the call's `tool_call_id` among them. Either way the inputs are what the
  function received, not the model's text (`ToolRead.args_parsed`): the model response's arguments win. A failure
  is status ERROR with an `exception` event (`record_exception`, the callback's `on_tool_error`).
- CHAT_MODEL and LLM are model responses. `mlflow.spanOutputs` is the response object as the integration got it:
  the OpenAI autolog's `ChatCompletion` (`choices[].message.tool_calls[]` `{id, function: {name, arguments}}`) or
  Responses API `Response` (`output[]` `function_call` items `{call_id, name, arguments}`); the LangChain callback
  normalises its message to the same chat form (`{"choices": [{"message": ...}]}`, `on_llm_end`), and when that
  fails (a Responses API `AIMessage`, whose content is a list of `function_call` blocks, which
  `convert_lc_message_to_chat_message` refuses) records the `LLMResult` itself: `generations[][].message` is the
  message dumped as a `BaseMessage` (no `tool_calls`), the calls in its `content` blocks (`function_call`
  `{call_id, name, arguments}`; LangChain's standard `tool_call` `{id, name, args}`). A streamed chat
  completion is rebuilt by the OpenAI autolog from its chunks **without its tool calls** (and with finish reason
  `stop`): `_reconstruct_completion_from_stream` keeps the text only. Each chunk is also a span event
  `mlflow.chunk.item.<i>` (`mlflow.chunk.value`, the chunk's JSON): the calls are put back together from their
  deltas (`choices[].delta.tool_calls[]` `{index, id, function: {name, arguments}}`), as the client does.
- CHAIN: LangChain's chains and LangGraph's graph and node runs (`on_chain_start`, whose keywords, `metadata`
  among them, become attributes); MLflow marks no LangGraph span AGENT. A graph's root is a run: LangGraph stamps
  the callback metadata of a graph's run with `{"ls_integration": "langgraph"}` (`Pregel.stream`/`astream`, unless
  the caller set one) and each node's runs add `langgraph_node`, so the root is the CHAIN span with that metadata
  and no node. A LangChain 1.x `create_agent` graph sets its own, `{"ls_integration": "langchain_create_agent",
  "lc_agent_name": <name>}`, which every callback of the run inherits: its root is the span named after the agent
  that is not its node (see `openinference._create_agent_root`). A graph invoked inside another graph's node or
  tool inherits that node in its metadata: no run of its own here, its run is inferred under the tool span. The
  `model` node of create_agent, when its update answers structured-output calls, is the model response its
  CHAT_MODEL span is a layer of (`langchain_agent`).
- Every other type (UNKNOWN for a plain `mlflow.start_span`, RETRIEVER, EMBEDDING, PARSER, ...) is OTHER.
- Not every TOOL is a tool call: the OpenAI autolog types its span of a client request `Images.generate` TOOL
  (`mlflow/openai/autolog.py`, `_get_span_type`: `Images`/`AsyncImages` -> `SpanType.TOOL`), named after the
  resource class (`instance.__class__.__name__`) and with the request's keywords as attributes (`_start_span`),
  `prompt` among them. An image request is no call the model issued: such a span is OTHER.

**GenAI export.** With `MLFLOW_ENABLE_OTEL_GENAI_SEMCONV=true` MLflow translates every span to the OTel GenAI
conventions as it ends (`OtelSpanProcessor.on_end`, `mlflow/tracing/export/genai_semconv/translator.py`): it drops
every `mlflow.*` attribute and writes `gen_ai.operation.name` from the span type (CHAT_MODEL `chat`, LLM
`generate_content`, TOOL `execute_tool`, AGENT `invoke_agent`, EMBEDDING `embeddings`; any other type **as is**:
`CHAIN`, `UNKNOWN`, ...), renames the span `<operation> <tool, agent or model>` (else just the operation: every
CHAIN span is named `CHAIN`), and converts the inputs and outputs by the message format's converter
(`gen_ai.input.messages`, `gen_ai.output.messages`; a TOOL span's `gen_ai.tool.call.arguments` /
`gen_ai.tool.call.result` are `json.dumps` of its inputs and outputs). Attributes not under `mlflow.` stay (the
LangChain callback's `metadata`, `tool_call_id`, the OpenAI autolog's request keywords), and so do the events. The
spans keep MLflow's scope (`mlflow.tracing.provider`), which is how this reader claims them before the GenAI reader
would, to keep what is MLflow's own in that form:

- a TOOL span's arguments are still the function's bound arguments with defaults (`args_parsed`); its call id is
  the LangChain callback's `tool_call_id` attribute, else the ToolMessage in `gen_ai.tool.call.result`;
- a streamed chat completion's output message is the rebuilt text-only completion (no calls, finish reason
  `stop`): its calls are read from the chunk events, which the translation keeps;
- a model span without `gen_ai.output.messages` that did not fail lost its response: the converter knows only the
  chat form (`choices`) and the Responses API's `output`, so the LangChain callback's `LLMResult` (a Responses API
  `AIMessage`) converts to nothing, and a span with no outputs has none either. Its calls are unknown
  (`IssuedCalls.partial`);
- a graph's root CHAIN is a run when its metadata says so without a node (`ls_integration` langgraph or
  langchain_create_agent, no `langgraph_node`); its name is gone with the span's, so create_agent's comes from
  `lc_agent_name`, and a plain LangGraph graph's run has none. A graph run inside another's node (f's sub-agent)
  inherits that node and stays OTHER; its run is inferred, named by its `lc_agent_name` (`inferred_run`);
- the create_agent `model` node's update is not converted (a CHAIN's outputs have no `choices`), so a
  structured-output answer (`langchain_agent.node_response`) cannot be told from a call the model issued that no
  tool ran: it reads as a model-only call. Not handled (not flagged either).
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
    chat_tool_calls,
    error_of,
    function_call_item,
    json_list,
    load_json,
    message_text,
)
from toolscore.collector.extract.conventions.genai import (
    INPUT_MESSAGES,
    OUTPUT_MESSAGES,
    TOOL_DEFINITIONS,
    read_genai_issued,
    read_genai_run,
    read_genai_tool,
    read_genai_tools,
)
from toolscore.collector.extract.conventions.langchain_agent import CREATE_AGENT, MODEL_NODE, node_response
from toolscore.collector.spans import SpanRecord, StatusCode

__all__ = ["MLflowExtractor"]

# --- Names read (mlflow-tracing 3.17; mlflow/tracing/constant.py SpanAttributeKey) ----------------
# recognised by  mlflow.spanType (set on every span MLflow starts); every mlflow.* value is JSON text
# run span      spanType AGENT: the span name; input mlflow.spanInputs, output mlflow.spanOutputs (text,
#               messages, or a function's one string argument).
#               spanType CHAIN of a graph's root: metadata ls_integration langgraph and no langgraph_node, or
#               langchain_create_agent with lc_agent_name = the span name (and langgraph_node not the name)
# tool span     spanType TOOL: the span name; arguments mlflow.spanInputs; call id `tool_call_id` (the
#               LangChain callback's keyword, JSON text), else the ToolMessage in mlflow.spanOutputs;
#               result mlflow.spanOutputs; status ERROR + `exception` event
# model span    spanType CHAT_MODEL | LLM: mlflow.spanOutputs `choices[].message.tool_calls[]` (chat),
#               `generations[][].message.content[]` function_call / tool_call blocks (LangChain's LLMResult), `output[]`
#               function_call items (Responses API) or Anthropic `content[]` tool_use blocks;
#               streamed chat: events mlflow.chunk.item.<i> / mlflow.chunk.value deltas; no outputs and no
#               chunks on a span that did not fail: the calls are unknown (`IssuedCalls.partial`)
# CHAIN `model` create_agent's model node whose mlflow.spanOutputs update answers structured-output calls
#               (`langchain_agent.node_response`)
# tools offered mlflow.chat.tools (chat form `{"type": "function", "function": {...}}`) on model spans

SPAN_TYPE: Final = "mlflow.spanType"
INPUTS: Final = "mlflow.spanInputs"
OUTPUTS: Final = "mlflow.spanOutputs"
CHAT_TOOLS: Final = "mlflow.chat.tools"
METADATA: Final = "metadata"
TOOL_CALL_ID: Final = "tool_call_id"
CHUNK_EVENT: Final = "mlflow.chunk.item."
CHUNK_VALUE: Final = "mlflow.chunk.value"
SCOPE: Final = "mlflow.tracing.provider"
"""The instrumentation scope of the spans MLflow's own tracer starts (`mlflow/tracing/provider.py`)."""
OPERATION: Final = "gen_ai.operation.name"
_T_TOOL: Final = "execute_tool"
_T_RUN: Final = "invoke_agent"
_T_MODEL: Final = frozenset({"chat", "generate_content"})
_T_CHAIN: Final = "CHAIN"
CLIENT_TOOL_SPANS: Final = frozenset({"Images", "AsyncImages"})
"""The OpenAI client resources whose requests MLflow's OpenAI autolog types TOOL (`_get_span_type`); the span is
named after the class and has the request's keywords as attributes, `Images.generate`'s required `prompt` too."""
CLIENT_TOOL_KEY: Final = "prompt"


def _client_request(span: SpanRecord, name: str) -> bool:
    """An OpenAI autolog span of an `Images` request, typed TOOL (see the module docstring): not a tool call."""
    return name in CLIENT_TOOL_SPANS and CLIENT_TOOL_KEY in span.attributes


_RUN: Final = frozenset({'"AGENT"', "AGENT"})
_TOOL: Final = frozenset({'"TOOL"', "TOOL"})
_MODEL: Final = frozenset({'"CHAT_MODEL"', "CHAT_MODEL", '"LLM"', "LLM"})
_CHAIN: Final = frozenset({'"CHAIN"', "CHAIN"})
LANGGRAPH: Final = "langgraph"
"""`ls_integration` that LangGraph adds to the callback metadata of a graph's `stream`/`astream` (`invoke` runs
through them) unless the caller set one (`langgraph/pregel/main.py`); a node's runs add `langgraph_node`."""
_CREATE_AGENT: Final = frozenset({CREATE_AGENT})
_GRAPHS: Final = frozenset({CREATE_AGENT, LANGGRAPH})


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _json_string(attrs: Mapping[str, Any], key: str) -> str | None:
    """A string attribute MLflow wrote as JSON text (`"call_a1"`), decoded; a bare string as is."""
    value = attrs.get(key)
    if not isinstance(value, str) or not value:
        return None
    if value[0] == '"':
        decoded = load_json(value)
        return _text(decoded)
    return value


def _metadata(span: SpanRecord, integrations: frozenset[str]) -> Mapping[str, Any] | None:
    """The LangChain callback's `metadata` when its `ls_integration` is one of `integrations`."""
    metadata = span.attributes.get(METADATA)
    if not (isinstance(metadata, str) and '"ls_integration"' in metadata):
        return None
    decoded = load_json(metadata)
    return decoded if isinstance(decoded, Mapping) and decoded.get("ls_integration") in integrations else None


def _graph_root(span: SpanRecord) -> bool:
    """The CHAIN span of a LangGraph graph's root run (see the module docstring): create_agent's, named after the
    agent (`lc_agent_name`), or any graph's, which runs in no node (no `langgraph_node`)."""
    metadata = _metadata(span, _GRAPHS)
    if metadata is None or metadata.get("langgraph_node") == span.name:
        return False
    named = metadata.get("lc_agent_name") if metadata.get("ls_integration") == CREATE_AGENT else None
    return named == span.name if named is not None else "langgraph_node" not in metadata


def _answering_model_node(span: SpanRecord) -> bool:
    return (
        span.name == MODEL_NODE
        and _metadata(span, _CREATE_AGENT) is not None
        and node_response(span.attributes.get(OUTPUTS)) is not None
    )


def _message_calls(message: Any) -> list[IssuedCall]:
    """The calls of a LangChain message as `LLMResult` dumps it: its `tool_calls` when there, else its content's
    call blocks. The dump follows the declared type (`ChatGeneration.message: BaseMessage`), which has no
    `tool_calls`: an `AIMessage` keeps its calls in its content then, as `langchain-openai` puts a Responses API
    response's `function_call` items there (`{call_id, name, arguments}`), or as LangChain's standard `tool_call`
    blocks (`{id, name, args}`)."""
    calls = chat_tool_calls(message)
    content = message.get("content") if isinstance(message, Mapping) else None
    if calls or not isinstance(content, list):
        return calls
    for block in content:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "function_call":
            calls.append(function_call_item(block))
        elif kind == "tool_call":
            calls.append(IssuedCall(_text(block.get("id")), _text(block.get("name")), block.get("args")))
    return calls


def _response_calls(output: Any) -> list[IssuedCall]:
    """The calls one recorded response object lists, in the model's order (see the module docstring)."""
    if not isinstance(output, Mapping):
        return []
    choices = output.get("choices")
    if isinstance(choices, list):
        return [
            call for choice in choices if isinstance(choice, Mapping) for call in chat_tool_calls(choice.get("message"))
        ]
    generations = output.get("generations")
    if isinstance(generations, list):  # the LangChain callback's `LLMResult`, when it could not normalise it
        return [
            call
            for generation_list in generations
            if isinstance(generation_list, list)
            for generation in generation_list
            if isinstance(generation, Mapping)
            for call in _message_calls(generation.get("message"))
        ]
    items = output.get("output")
    if isinstance(items, list):
        return [
            function_call_item(item)
            for item in items
            if isinstance(item, Mapping) and item.get("type") == "function_call"
        ]
    content = output.get("content")
    if isinstance(content, list):  # an Anthropic `Message` (the anthropic autolog)
        return [
            IssuedCall(_text(block.get("id")), _text(block.get("name")), block.get("input"))
            for block in content
            if isinstance(block, Mapping) and block.get("type") == "tool_use"
        ]
    return []


def _chunk_index(name: str) -> int:
    tail = name[len(CHUNK_EVENT) :]
    return int(tail) if tail.isdigit() else -1


def _streamed_calls(span: SpanRecord) -> list[IssuedCall] | None:
    """The calls of a streamed chat completion, from its chunk events' deltas (None: no chunk events).

    As the `openai` client puts a streamed call together: per choice and `index`, the first delta holds the
    call's id and name, the next ones its arguments in pieces; the calls in index order."""
    chunks = [event for event in span.events if event.name.startswith(CHUNK_EVENT)]
    if not chunks:
        return None
    chunks.sort(key=lambda event: _chunk_index(event.name))
    calls: dict[tuple[int, int], dict[str, Any]] = {}
    for event in chunks:
        value = event.attributes.get(CHUNK_VALUE)
        if not (isinstance(value, str) and '"tool_calls"' in value):
            continue
        chunk = load_json(value)
        choices = chunk.get("choices") if isinstance(chunk, Mapping) else None
        for choice in choices if isinstance(choices, list) else ():
            delta = choice.get("delta") if isinstance(choice, Mapping) else None
            deltas = delta.get("tool_calls") if isinstance(delta, Mapping) else None
            for part in deltas if isinstance(deltas, list) else ():
                if not isinstance(part, Mapping):
                    continue
                choice_index, index = choice.get("index"), part.get("index")
                at = (
                    choice_index if isinstance(choice_index, int) else 0,
                    index if isinstance(index, int) else len(calls),
                )
                call = calls.setdefault(at, {"id": None, "name": None, "arguments": ""})
                call["id"] = _text(part.get("id")) or call["id"]
                function = part.get("function")
                if isinstance(function, Mapping):
                    call["name"] = _text(function.get("name")) or call["name"]
                    if isinstance(function.get("arguments"), str):
                        call["arguments"] += function["arguments"]
    return [IssuedCall(c["id"], c["name"], c["arguments"] or None) for _, c in sorted(calls.items())]


def _tool_call_id(attrs: Mapping[str, Any]) -> str | None:
    """The LangChain callback's `tool_call_id` keyword, else the `tool_call_id` of the ToolMessage it returned."""
    return _json_string(attrs, TOOL_CALL_ID) or _message_call_id(attrs.get(OUTPUTS))


def _run_text(value: Any, role: str) -> str | None:
    """A run's input or output text: a message list or text (`message_text`), else the one string a function's
    bound arguments hold (`@mlflow.trace` on `run_agent(question: str)` records `{"question": ...}`)."""
    text = message_text(value, role)
    if text is not None or not isinstance(value, str) or value[:1] != "{":
        return text
    decoded = load_json(value)
    if isinstance(decoded, Mapping) and len(decoded) == 1:
        (only,) = decoded.values()
        return only if isinstance(only, str) else None
    return None


class MLflowExtractor:
    """Spans of MLflow Tracing (see the module docstring)."""

    name = "mlflow"
    gate = Gate(scopes=frozenset({SCOPE}), keys=frozenset({SPAN_TYPE}))
    tool_keys = (CHAT_TOOLS, TOOL_DEFINITIONS)
    partial_responses = True

    def classify(self, span: SpanRecord) -> Role | None:
        """AGENT is a run, TOOL a tool call, CHAT_MODEL and LLM model responses; a create_agent graph's root
        CHAIN is a run and its answering `model` node a model response; anything else of MLflow's is OTHER."""
        kind = span.attributes.get(SPAN_TYPE)
        if kind is None:
            return _classify_translated(span) if span.scope == SCOPE else None
        if kind in _TOOL:
            return Role.OTHER if _client_request(span, span.name) else Role.TOOL
        if kind in _MODEL:
            return Role.LLM
        if kind in _RUN:
            return Role.RUN
        if kind in _CHAIN:
            if _graph_root(span):
                return Role.RUN
            if _answering_model_node(span):
                return Role.LLM
        return Role.OTHER

    def read(self, span: SpanRecord, role: Role) -> Read:
        attrs = span.attributes
        if SPAN_TYPE not in attrs:
            return _read_translated(span, role)
        if role is Role.TOOL:
            error, error_type = error_of(span)
            args = attrs.get(INPUTS, NOT_CAPTURED)
            return ToolRead(
                name=span.name,
                args=args,
                call_id=_tool_call_id(attrs),
                result=attrs.get(OUTPUTS),
                error=error,
                error_type=error_type,
                args_parsed=True,
            )
        if role is Role.RUN:
            return RunInfo(
                agent_name=span.name or None,
                input=_run_text(attrs.get(INPUTS), "user"),
                output=_run_text(attrs.get(OUTPUTS), "assistant"),
            )
        if attrs.get(SPAN_TYPE) in _CHAIN:  # a create_agent model node that answered structured output
            return node_response(attrs.get(OUTPUTS)) or IssuedCalls()
        output = attrs.get(OUTPUTS)
        calls = _response_calls(load_json(output)) if output is not None else []
        if calls:
            return IssuedCalls(calls)
        streamed = _streamed_calls(span)
        if streamed is not None:
            return IssuedCalls(streamed)
        # No outputs and no chunks: the response was not recorded (the span ended before it came)
        return IssuedCalls(partial=output is None and span.status_code != StatusCode.ERROR)

    def read_tools(self, span: SpanRecord, role: Role) -> list[Any]:
        """`mlflow.chat.tools`: the tools a model request offered, in the chat form."""
        if SPAN_TYPE not in span.attributes:
            return read_genai_tools(span, role)
        tools = span.attributes.get(CHAT_TOOLS)
        return [] if tools is None else json_list(tools)

    def inferred_run(self, span: SpanRecord) -> RunInfo | None:
        """A run inferred at a translated CHAIN span (a graph run inside another graph's node): named by its
        callback metadata's `lc_agent_name`, the span's own name being gone (`CHAIN`)."""
        if SPAN_TYPE in span.attributes or span.attributes.get(OPERATION) != _T_CHAIN:
            return None
        metadata = _metadata(span, _GRAPHS)
        name = metadata.get("lc_agent_name") if metadata is not None else None
        return RunInfo(agent_name=_text(name)) if name is not None else None


def _classify_translated(span: SpanRecord) -> Role | None:
    """A span MLflow translated to the GenAI conventions (see the module docstring): its operation is its span type."""
    operation = span.attributes.get(OPERATION)
    if operation is None:
        return None
    if operation == _T_TOOL:
        name = span.attributes.get("gen_ai.tool.name")
        return Role.OTHER if isinstance(name, str) and _client_request(span, name) else Role.TOOL
    if operation in _T_MODEL:
        return Role.LLM
    if operation == _T_RUN:
        return Role.RUN
    if operation == _T_CHAIN:
        metadata = _metadata(span, _GRAPHS)
        if metadata is not None and "langgraph_node" not in metadata:
            return Role.RUN
    return Role.OTHER


def _read_translated(span: SpanRecord, role: Role) -> Read:
    attrs = span.attributes
    if role is Role.TOOL:
        read = read_genai_tool(span)
        read.args_parsed = True
        if read.call_id is None:
            read.call_id = _json_string(attrs, TOOL_CALL_ID) or _message_call_id(attrs.get("gen_ai.tool.call.result"))
        return read
    if role is Role.RUN:
        if attrs.get(OPERATION) == _T_RUN:
            return read_genai_run(span)
        metadata = _metadata(span, _GRAPHS) or {}
        return RunInfo(
            agent_name=_text(metadata.get("lc_agent_name")),
            input=message_text(attrs.get(INPUT_MESSAGES), "user"),
            output=message_text(attrs.get(OUTPUT_MESSAGES), "assistant"),
        )
    issued = read_genai_issued(span)
    if issued.calls:
        return issued
    streamed = _streamed_calls(span)
    if streamed is not None:
        return IssuedCalls(streamed)
    # No output messages: the converter made none of the response (or there was none), so its calls are unknown
    return IssuedCalls(partial=OUTPUT_MESSAGES not in attrs and span.status_code != StatusCode.ERROR)


def _message_call_id(output: Any) -> str | None:
    """The `tool_call_id` of the ToolMessage a LangChain tool returned, as its dump's JSON text holds it."""
    if isinstance(output, str) and '"tool_call_id"' in output:
        decoded = load_json(output)
        if isinstance(decoded, Mapping):
            return _text(decoded.get(TOOL_CALL_ID))
    return None
