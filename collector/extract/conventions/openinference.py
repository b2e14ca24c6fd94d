"""OpenInference (Arize/Phoenix): `openinference.span.kind` TOOL, AGENT, CHAIN and LLM spans.

Seen from openai-agents, LangGraph/LangChain (Python and JS), CrewAI, LlamaIndex, smolagents and DSPy,
each through its openinference-instrumentation-* package (the span's scope names it). Tool spans mostly
carry no call id; it is recovered from the LLM span that issued the call (see `runs`).

Runs: the spec's AGENT kind marks an agent's run wherever it sits, nested agents included, except where an
instrumentation gives that kind to a span that is no agent run (`_NOT_A_RUN`). Frameworks whose agents
have no AGENT span mark the run with a CHAIN span of their own (`_CHAIN_RUNS`). A graph of LangChain
runnables has neither: its run is inferred from the tree (see `runs`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
from toolscore.collector.extract.conventions.envelopes import unwrap_unless_declared
from toolscore.collector.extract.conventions.google_adk import function_response_error
from toolscore.collector.extract.conventions.langchain_agent import CREATE_AGENT, MODEL_NODE, node_response
from toolscore.collector.spans import SpanRecord

__all__ = ["OpenInferenceExtractor", "anthropic_tool_results"]

# --- Names read (OpenInference semantic conventions, spec/semantic_conventions.md) -----------------
# span marker   openinference.span.kind = TOOL | AGENT | LLM | CHAIN (the other kinds: OTHER)
# TOOL span     tool.name, else the span name without its method (`get_weather.__call__`: DSPy);
#               openai-agents handoff spans `handoff to <agent>` have none, and their input.value is
#               the agent handing off, not arguments,
#               input.value (arguments; LangChain writes a bare value for one-parameter tools;
#               LlamaIndex, DSPy and smolagents record the tool method's bound arguments, an
#               envelope: see `envelopes`), tool.parameters (arguments only when it is not a JSON
#               schema: older emitters), tool.id | tool_call.id (call id, rarely set), output.value
#               (result; LangChain's serialized ToolMessage holds `tool_call_id`), status (error),
#               exception event
# AGENT span    a run, named by gen_ai.agent.name, else agent.name, else graph.node.id (CrewAI: the
#               role; AutoGen AgentChat: the agent's name), else the span name
#               without its method (smolagents `<name>.run`, CrewAI `<role>._execute_core`);
#               input.value, output.value. Not a run: `_NOT_A_RUN`.
# CHAIN span    a run when `_CHAIN_RUNS` says so (LlamaIndex `FunctionAgent.run`, DSPy `ReAct.forward`),
#               named after the span's class, or when it is a LangChain create_agent graph's root (metadata
#               ls_integration langchain_create_agent, lc_agent_name = the span name); else OTHER
# LLM span      llm.output_messages.<i>.message.tool_calls.<j>.tool_call.id | function.name |
#               function.arguments (model order; both the openai-agents and LangChain
#               instrumentations leave the arguments out when they are empty, `{}`); legacy
#               llm.output_messages.<i>.message.function_call_name | function_call_arguments_json;
#               LangChain.js without flattened calls, or flattened without ids: output.value
#               generations[0][0].message.kwargs.tool_calls[] {id, name, args}; Responses API items
#               flattened with the item id as tool_call.id (Agno): output.value [{tool_calls: [{id,
#               call_id, function: {name}}]}], the call id is call_id; llm.finish_reason (first
#               choice, Chat Completions only). Output hidden (OPENINFERENCE_HIDE_OUTPUTS /
#               _HIDE_OUTPUT_MESSAGES): no llm.output_messages, output.value "__REDACTED__": with
#               no llm.finish_reason the response's calls are unknown (`IssuedCalls.partial`)
# CHAIN `model`  LangChain create_agent's model node (metadata ls_integration langchain_create_agent) whose
#               output.value update answers structured-output calls with ToolMessages: read as the model
#               response its LLM span is a layer of, those calls' tools output tools (`langchain_agent`)
# tools offered LLM spans: llm.tools.<i>.tool.json_schema (OpenAI tool JSON); smolagents' run span:
#               smolagents.tools_names (names only); TOOL spans: tool.description, tool.parameters
#               (the tool's own, kept when it is a JSON schema)
# tool results  openinference-instrumentation-anthropic (llm.provider = anthropic): input.value is the
#               Messages API request; its `tool_result` blocks carry `is_error`, which the flattened
#               llm.input_messages.<i> tool messages leave out (`anthropic_tool_results`)
# finish        LLM span llm.finish_reason (one string, the provider's own: Anthropic's `tool_use`,
#               OpenAI's `tool_calls`), written with or without output content: with outputs hidden
#               (OPENINFERENCE_HIDE_OUTPUTS) it is what says a response called tools (`model_calls`)

KIND: Final = "openinference.span.kind"
TOOL_NAME: Final = "tool.name"
TOOL_PARAMETERS: Final = "tool.parameters"
CALL_ID_KEYS: Final = ("tool.id", "tool_call.id")
INPUT_VALUE: Final = "input.value"
OUTPUT_VALUE: Final = "output.value"
AGENT_NAME: Final = "agent.name"
GENAI_AGENT_NAME: Final = "gen_ai.agent.name"
OUTPUT_MESSAGES: Final = "llm.output_messages"
FINISH_REASON: Final = "llm.finish_reason"
PROVIDER: Final = "llm.provider"
CALL_KEYS: Final = ("tool_call.id", "tool_call.function.name", "tool_call.function.arguments")
GRAPH_NODE_ID: Final = "graph.node.id"
METADATA: Final = "metadata"

_SCOPE = "openinference.instrumentation."
_METHODS: Final = frozenset(
    ("__call__", "acall", "call", "run", "arun", "_run", "_arun", "forward", "aforward", "invoke", "ainvoke")
)
"""Method names instrumentations append to a tool's or an agent's name in the span name (`<name>.<method>`);
CrewAI's `_execute_core` is its agent's, AutoGen AgentChat's `on_messages_stream` (an agent other than
`AssistantAgent` has no `graph.node.id`)."""
_AGENT_METHODS: Final = _METHODS | {"_execute_core", "execute_task", "kickoff", "on_messages_stream"}


def _llama_index_run(name: str) -> bool:
    return name.endswith(".run")


def _dspy_run(name: str) -> bool:
    """A tool-using module's `forward`: DSPy's `ReAct`, `CodeAct`, `ProgramOfThought`, or a subclass named after
    it (`WeatherReAct`); the span names the instance's class."""
    module, _, method = name.partition(".")
    return module.endswith(("ReAct", "CodeAct", "ProgramOfThought")) and method in ("forward", "aforward")


_CHAIN_RUNS: Final[dict[str, Callable[[str], bool]]] = {
    _SCOPE + "llama_index": _llama_index_run,
    _SCOPE + "dspy": _dspy_run,
}
"""Per instrumentation (scope), which CHAIN spans are agent runs. LlamaIndex traces an agent (`FunctionAgent`,
`ReActAgent`, `CodeActAgent`, `AgentWorkflow`, any workflow) as the CHAIN span of its workflow's `run`, with
no AGENT span; DSPy traces its tool-using modules' `forward` as CHAIN spans."""

_DELEGATION_TOOLS: Final = {_SCOPE + "crewai": ("Delegate work to coworker", "Ask question to coworker")}
"""Per instrumentation, its framework's tools that run another agent inside the tool span, with no run span of
that agent's own; their arguments name the agent (`coworker`)."""

_ANSWERED_ERRORS: Final[dict[str, Callable[[Any], str | None]]] = {_SCOPE + "google_adk": function_response_error}
"""Per instrumentation, how a tool failure its framework answered for the model (so the span is OK) reads in the
TOOL span's `output.value`: the error type, else None. Google ADK's ReflectAndRetryToolPlugin hands the model an
error response instead of raising; the instrumentor records ADK's `FunctionResponse` holding it."""

_UNRECORDED_FAILURES: Final = frozenset({_SCOPE + "autogen_agentchat"})
"""Instrumentations whose TOOL spans cannot show a failed call: openinference-instrumentation-autogen-agentchat
sets the span OK when `_execute_tool_call` returns and only then its ERROR for a result with `is_error`, which the
SDK ignores (an OK status is final). The call's failure is then on a layer below it, if any (AutoGen's own
`execute_tool` span: see `layers`)."""

_FINAL_TOOLS: Final = {_SCOPE + "smolagents": "final_answer", _SCOPE + "dspy": "finish"}
"""Per instrumentation, the framework's built-in tool that ends a run: a real call, flagged `final`."""


def _not_a_run(span: SpanRecord) -> bool:
    """AGENT spans that an instrumentation gives to something other than an agent's run.

    openai-agents: the SDK trace's own span (`Agent workflow`, or the `trace()` name) around the runs,
    the only one of its AGENT spans without `agent.name`. LangChain: a span whose run name contains
    "agent" is AGENT, so a LangGraph node named `agent` is one; a node's span has the node's name as
    `metadata.langgraph_node` (the graph it runs in is the run).
    """
    if span.scope == _SCOPE + "openai_agents":
        return AGENT_NAME not in span.attributes
    metadata = span.attributes.get(METADATA)
    if isinstance(metadata, str) and '"langgraph_node"' in metadata:
        decoded = load_json(metadata)
        return isinstance(decoded, Mapping) and decoded.get("langgraph_node") == span.name
    return False


def _create_agent_root(span: SpanRecord) -> bool:
    """The root of a LangChain `create_agent` graph, a CHAIN when its name lacks "agent" (OpenInference makes a span
    AGENT only then): create_agent compiles its graph with the metadata `{"ls_integration": "langchain_create_agent",
    "lc_agent_name": <name>}` (`factory.py`), which every span of the run inherits, so the root is the span named
    after the agent; or, for an agent without a name (`LangGraph`), the one span of it that runs in no node. A
    node's span (`model`, `tools`, a middleware hook) has its node as `metadata.langgraph_node`, never the root."""
    metadata = span.attributes.get(METADATA)
    if span.scope != _SCOPE + "langchain" or not (isinstance(metadata, str) and CREATE_AGENT in metadata):
        return False
    decoded = load_json(metadata)
    if not (isinstance(decoded, Mapping) and decoded.get("ls_integration") == CREATE_AGENT):
        return False
    if decoded.get("langgraph_node") == span.name:
        return False
    named = decoded.get("lc_agent_name")
    return named == span.name if named is not None else "langgraph_node" not in decoded


def _answering_model_node(span: SpanRecord) -> bool:
    """A LangChain `create_agent` model node whose output answers structured-output calls (see `langchain_agent`):
    the model response its LLM span is a layer of, with those calls named as output tools."""
    if span.name != MODEL_NODE or span.scope != _SCOPE + "langchain":
        return False
    metadata = span.attributes.get(METADATA)
    return (
        isinstance(metadata, str)
        and CREATE_AGENT in metadata
        and node_response(span.attributes.get(OUTPUT_VALUE)) is not None
    )


_CURRENT_AGENT = "current_agent_name='"
_LLAMA_STEP_KEYS = (OUTPUT_VALUE, INPUT_VALUE)


def _llama_index_agent(span: SpanRecord) -> str | None:
    """The agent a LlamaIndex agent workflow's step works for: `current_agent_name='weather_agent'` in the
    step's event, a Python repr (`AgentInput(...)`, `AgentSetup(...)`, `AgentOutput(...)`) recorded as its
    output or input. The run span's own output, and some steps' outputs, are cut before it; the first step
    that has it, in start order, names the agent the workflow started with (its root agent)."""
    for key in _LLAMA_STEP_KEYS:
        value = span.attributes.get(key)
        if not isinstance(value, str) or (at := value.find(_CURRENT_AGENT)) < 0:
            continue
        start = at + len(_CURRENT_AGENT)
        end = value.find("'", start, start + 257)
        if end > start:
            return value[start:end]
    return None


_NAMED_BELOW: Final = {_SCOPE + "llama_index": _llama_index_agent}
"""Per instrumentation, where a run's agent name is when its run span does not say (see `RunInfo.named_below`)."""


def _bare_name(span_name: str, methods: frozenset[str]) -> str:
    """`get_weather` for `get_weather.__call__`: the span name without a trailing method in `methods`."""
    head, dot, method = span_name.rpartition(".")
    return head if dot and head and method in methods else span_name


TOOLS: Final = "llm.tools"
TOOL_SCHEMA: Final = ".tool.json_schema"
SMOLAGENTS_TOOLS: Final = "smolagents.tools_names"
SMOLAGENTS_MANAGED: Final = "smolagents.managed_agents"
"""`.<i>.name`, `.<i>.description`: the sub-agents a smolagents agent may call like tools (not in `llm.tools`)."""
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


def _responses_call_ids(calls: list[IssuedCall], output: Any) -> list[IssuedCall]:
    """The calls with the Responses API's `call_id` where the flattened `tool_call.id` holds the item's `id`.

    A Responses API `function_call` output item has two ids: `id`, the output item's (`fc_...`), and `call_id`,
    the call's, which its `function_call_output` answers. An instrumentation that flattens such items as chat
    tool calls may write the item id as `tool_call.id` (openinference-instrumentation-agno with
    `OpenAIResponses`); its `output.value` then lists the calls with both, in the same order. The call id is
    `call_id` when every listed call has one and the names line up with the flattened calls.
    """
    if not isinstance(output, str) or '"call_id"' not in output:
        return calls
    decoded = load_json(output)
    listed = [
        call
        for message in (decoded if isinstance(decoded, list) else ())
        if isinstance(message, Mapping) and isinstance(message.get("tool_calls"), list)
        for call in message["tool_calls"]
    ]
    if len(listed) != len(calls):
        return calls
    found: list[IssuedCall] = []
    for call, item in zip(calls, listed, strict=True):
        call_id = item.get("call_id") if isinstance(item, Mapping) else None
        function = item.get("function") if isinstance(item, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if not isinstance(call_id, str) or not call_id or item.get("id") != call.call_id or name != call.name:
            return calls
        found.append(IssuedCall(call_id, call.name, call.args))
    return found


REDACTED: Final = "__REDACTED__"
"""What OpenInference's `TraceConfig.mask` writes for a hidden `input.value`/`output.value`
(`openinference.instrumentation.config.REDACTED_VALUE`); the hidden `llm.output_messages.*` it drops."""


def _hidden_response(attrs: Mapping[str, Any]) -> bool:
    """Whether an LLM span hides what its response said and so cannot tell whether it called a tool.

    `OPENINFERENCE_HIDE_OUTPUTS` (or `_HIDE_OUTPUT_MESSAGES`) drops every `llm.output_messages.*` attribute and
    writes `output.value = "__REDACTED__"`. A Chat Completions span still says `llm.finish_reason` (kept by
    the mask), which tells a response that called tools (`model_calls.stopped_for_tools`) from one that did
    not; a Responses API span has none (openinference-instrumentation-openai writes it from a completion's
    first choice only): its calls are unknown.
    """
    return attrs.get(OUTPUT_VALUE) == REDACTED and FINISH_REASON not in attrs


class OpenInferenceExtractor:
    """Spans with `openinference.span.kind`."""

    name = "openinference"
    gate = Gate(keys=frozenset({KIND}))
    tool_keys = (f"{TOOLS}.0{TOOL_SCHEMA}", SMOLAGENTS_TOOLS, f"{SMOLAGENTS_MANAGED}.0.name")
    partial_responses = True
    """An LLM span whose output was hidden, with no finish reason, may have issued calls it does not list
    (`_hidden_response`)."""

    def classify(self, span: SpanRecord) -> Role | None:
        """TOOL spans are tool calls (handoffs included); AGENT spans are runs, nested ones too.

        The exceptions are an instrumentation's AGENT spans that are no agent's run (`_not_a_run`:
        openai-agents' SDK trace span, LangGraph's node named "agent"), and CHAIN spans that are one
        (`_CHAIN_RUNS`: LlamaIndex's workflow `run`, DSPy's ReAct `forward`). Other CHAIN spans are steps;
        where no run span is found above a call, the run is inferred from the tree instead. LLM spans
        are read for the calls they issued.
        """
        kind = span.attributes.get(KIND)
        if kind is None:
            return None
        if kind == "TOOL":
            return Role.TOOL
        if kind == "LLM":
            return Role.LLM
        if kind == "AGENT":
            return Role.OTHER if _not_a_run(span) else Role.RUN
        if kind == "CHAIN" and (runs := _CHAIN_RUNS.get(span.scope)) is not None and runs(span.name):
            return Role.RUN
        if kind == "CHAIN" and _create_agent_root(span):
            return Role.RUN
        if kind == "CHAIN" and _answering_model_node(span):
            return Role.LLM
        return Role.OTHER

    def read(self, span: SpanRecord, role: Role) -> Read:
        attrs = span.attributes
        if role is Role.TOOL:
            return self._read_tool(span)
        if role is Role.RUN:
            return RunInfo(
                agent_name=string(attrs, GENAI_AGENT_NAME)
                or string(attrs, AGENT_NAME)
                or string(attrs, GRAPH_NODE_ID)
                or _bare_name(span.name, _AGENT_METHODS),
                input=message_text(attrs.get(INPUT_VALUE), "user"),
                output=message_text(attrs.get(OUTPUT_VALUE), "assistant"),
                named_below=None if AGENT_NAME in attrs or GENAI_AGENT_NAME in attrs else _NAMED_BELOW.get(span.scope),
            )
        if attrs.get(KIND) == "CHAIN":  # a create_agent model node that answered structured output
            return node_response(attrs.get(OUTPUT_VALUE)) or IssuedCalls()
        calls = [
            call if call.args is not None else IssuedCall(call.call_id, call.name, "{}")
            for call in indexed_issued_calls(attrs, OUTPUT_MESSAGES, ".message.tool_calls", CALL_KEYS)
        ]
        if not calls:
            calls = self._legacy_function_calls(attrs) or _langchain_issued(attrs.get(OUTPUT_VALUE))
        elif not any(call.call_id for call in calls):
            # LangChain.js flattens `additional_kwargs.tool_calls[].function` without the ids; its output keeps them
            with_ids = _langchain_issued(attrs.get(OUTPUT_VALUE))
            if [c.name for c in with_ids] == [c.name for c in calls] and all(c.call_id for c in with_ids):
                calls = with_ids
        else:
            calls = _responses_call_ids(calls, attrs.get(OUTPUT_VALUE))
        if not calls and _hidden_response(attrs):
            return IssuedCalls(partial=True)
        return IssuedCalls(calls)

    def call_id_above(self, span: SpanRecord, parent: SpanRecord) -> str | None:
        """The call a LangChain TOOL span without a call id ran, from its parent LangGraph `tools` task.

        LangGraph's ToolNode sends each tool call of a response to a task of its own (`Send("tools", ...)`), whose
        CHAIN span (named `tools`, `metadata.langgraph_node` = `tools`) OpenInference records with that one call,
        `{"name", "args", "id", "type": "tool_call"}`, as its input (a list of it). The tool span names the call
        only in its result's `tool_call_id` (`_call_id`), which a failed attempt lacks: the task's call is then its
        call, when it is of the same tool. A retry middleware (`ToolRetryMiddleware`) runs the tool again in the
        same task, so every attempt is that call.
        """
        if span.scope != _SCOPE + "langchain" or parent.name != "tools" or parent.attributes.get(KIND) != "CHAIN":
            return None
        metadata, given = parent.attributes.get(METADATA), parent.attributes.get(INPUT_VALUE)
        if not (isinstance(metadata, str) and '"langgraph_node": "tools"' in metadata and isinstance(given, str)):
            return None
        if '"tool_call"' not in given:
            return None
        decoded = load_json(given)
        if isinstance(decoded, list) and len(decoded) == 1:
            decoded = decoded[0]
        if not (isinstance(decoded, Mapping) and decoded.get("type") == "tool_call"):
            return None
        call_id = decoded.get("id")
        same_tool = decoded.get("name") == string(span.attributes, TOOL_NAME)
        return call_id if same_tool and isinstance(call_id, str) and call_id else None

    def read_tools(self, span: SpanRecord, role: Role) -> list[Any]:
        """`llm.tools.<i>.tool.json_schema`, smolagents' tool names and its managed agents (offered like tools)."""
        attrs = span.attributes
        tools = indexed_values(attrs, TOOLS, TOOL_SCHEMA)
        if SMOLAGENTS_TOOLS in attrs:
            tools.extend(names_only(attrs[SMOLAGENTS_TOOLS]))
        for i, name in enumerate(indexed_values(attrs, SMOLAGENTS_MANAGED, ".name")):
            tools.append({"name": name, "description": attrs.get(f"{SMOLAGENTS_MANAGED}.{i}.description")})
        return tools

    @staticmethod
    def _read_tool(span: SpanRecord) -> ToolRead:
        """A TOOL span's call: the name from `tool.name`, else the span name (a handoff has neither)."""
        attrs = span.attributes
        name = string(attrs, TOOL_NAME)
        handoff = name is None and span.name.startswith("handoff to ")
        if name is None and not handoff:
            name = _bare_name(span.name, _METHODS)
        error, error_type = error_of(span)
        answered = _ANSWERED_ERRORS.get(span.scope)
        if not error and answered is not None and (answered_type := answered(attrs.get(OUTPUT_VALUE))) is not None:
            error, error_type = True, answered_type
        args = NOT_CAPTURED if handoff else _args(attrs)
        delegates_to = None
        if name in _DELEGATION_TOOLS.get(span.scope, ()):
            decoded = load_json(args)
            coworker = decoded.get("coworker") if isinstance(decoded, Mapping) else None
            delegates_to = coworker if isinstance(coworker, str) and coworker else None
        return ToolRead(
            name=name,
            args=args,
            call_id=_call_id(attrs),
            result=attrs.get(OUTPUT_VALUE),
            error=error,
            error_type=error_type,
            handoff=handoff,
            description=attrs.get(TOOL_DESCRIPTION),
            schema=attrs.get(TOOL_PARAMETERS),
            delegates_to=delegates_to,
            final=name is not None and _FINAL_TOOLS.get(span.scope) == name,
            failure_recorded=error or span.scope not in _UNRECORDED_FAILURES,
            unwrap=unwrap_unless_declared(args, attrs.get(TOOL_PARAMETERS)),
        )

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


def anthropic_tool_results(attributes: Mapping[str, Any]) -> list[tuple[str, Any, bool | None]]:
    """The `tool_result` blocks of the Anthropic Messages API request an LLM span of openinference-instrumentation-
    anthropic records in `input.value` (`llm.provider` = `anthropic`): (`tool_use_id`, `content`, whether it failed).

    `is_error` is how a Messages API client tells the model a tool failed, and the instrumentor keeps it only there
    (`_content.py` writes a `tool_result` as a `tool` message with `tool_call_id` and `content` alone). Failed is
    None when the block does not say (`is_error` absent). Nothing for another provider, or an `input.value` that
    is not such a request (hidden inputs read `__REDACTED__`)."""
    if attributes.get(PROVIDER) != "anthropic":
        return []
    request = attributes.get(INPUT_VALUE)
    if not (isinstance(request, str) and "tool_result" in request):
        return []
    decoded = load_json(request)
    messages = decoded.get("messages") if isinstance(decoded, Mapping) else None
    found = []
    for message in messages if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, Mapping) else None
        for block in content if isinstance(content, list) else ():
            if not (isinstance(block, Mapping) and block.get("type") == "tool_result"):
                continue
            call_id, is_error = block.get("tool_use_id"), block.get("is_error")
            if isinstance(call_id, str) and call_id:
                found.append((call_id, block.get("content"), is_error if isinstance(is_error, bool) else None))
    return found
