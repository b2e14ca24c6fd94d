"""LangChain 1.x `create_agent`: the structured-output tool calls that the agent's `model` node answers itself.

With `response_format=ToolStrategy(Schema)` (or a bare schema create_agent turns into one), the model is offered
one tool per schema besides the agent's tools, and its call of such a tool is the agent's structured answer. No
tool runs for it: `create_agent`'s model node (`langchain/agents/factory.py`, `_handle_model_output`) parses the
call's arguments and answers it in its own state update, an `AIMessage` with the call followed by a `ToolMessage`
(`"Returning structured response: ..."`, or the validation error when the model is asked again). The model
span that issued the call shows nothing of this (the output tool is one more tool in its request); the model
node's span does, when its instrumentation records the node's output: a `ToolMessage` in the update of the
`model` node is the answer to a structured-output call. Every other call is answered by the `tools` node.

So the conventions that record node outputs (OpenInference's `output.value`, OpenLLMetry's
`traceloop.entity.output`) read such a model node as the response its model span is a layer of (see `runs`,
*Model response layers*), listing the calls of its `AIMessage` and naming the answered ones as output tools
(`IssuedCalls.output_tools`): a framework's structured output, not a call of the agent's.

Three serialisations of the update's messages: OpenInference's `{"type": "tool", "data": {...}}`, LangChain's
own constructor form `{"lc": 1, "type": "constructor", "id": [..., "ToolMessage"], "kwargs": {...}}`
(OpenLLMetry), and the message's pydantic dump, its fields beside its `type` (`{"type": "tool", "tool_call_id":
...}`: MLflow's `TraceJSONEncoder` and Langfuse's `EventSerializer`, which dump a pydantic model). All are read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from toolscore.collector.extract.conventions.base import IssuedCall, IssuedCalls
from toolscore.collector.extract.conventions.common import load_json

__all__ = ["CREATE_AGENT", "MODEL_NODE", "answers_in_node", "node_response"]

CREATE_AGENT: Final = "langchain_create_agent"
"""`ls_integration` in the metadata of create_agent's graph and of each of its nodes."""
MODEL_NODE: Final = "model"
"""create_agent's node that calls the model (`langgraph_node`, and the node span's name)."""
_TOOL_MARKERS: Final = ('"ToolMessage"', '"type": "tool"', '"type":"tool"')


def answers_in_node(output: Any) -> bool:
    """Whether a model node's recorded output may hold a `ToolMessage` (a cheap look before decoding)."""
    return isinstance(output, str) and any(marker in output for marker in _TOOL_MARKERS)


def _messages(decoded: Any, depth: int = 4) -> Iterator[Mapping[str, Any]]:
    """The messages of the node's update(s), whatever wraps them (a list of Commands, `{"outputs": [...]}`)."""
    if depth < 0:
        return
    if isinstance(decoded, list):
        for item in decoded:
            yield from _messages(item, depth - 1)
    elif isinstance(decoded, Mapping):
        messages = decoded.get("messages")
        if isinstance(messages, list):
            yield from (m for m in messages if isinstance(m, Mapping))
            return
        for key in ("outputs", "update"):
            if key in decoded:
                yield from _messages(decoded[key], depth - 1)


def _kind_and_fields(message: Mapping[str, Any]) -> tuple[str | None, Mapping[str, Any]]:
    """("ai" | "tool" | other, the message's fields) for any of the serialisations."""
    if message.get("lc") == 1 and isinstance(message.get("id"), list) and message["id"]:
        fields = message.get("kwargs")
        kind = {"AIMessage": "ai", "ToolMessage": "tool"}.get(str(message["id"][-1]))
        return kind, fields if isinstance(fields, Mapping) else {}
    fields = message.get("data")
    kind = message.get("type")
    return (kind if isinstance(kind, str) else None), fields if isinstance(fields, Mapping) else message


def node_response(output: Any) -> IssuedCalls | None:
    """The response a create_agent model node answered structured-output calls of: the calls of its `AIMessage`,
    the answered ones' names as output tools; None when the update holds no answer of the node's own."""
    if not answers_in_node(output):
        return None
    calls: list[IssuedCall] = []
    answered: set[str] = set()
    for message in _messages(load_json(output)):
        kind, fields = _kind_and_fields(message)
        if kind == "ai" and isinstance(fields.get("tool_calls"), list):
            for call in fields["tool_calls"]:
                if isinstance(call, Mapping) and isinstance(call.get("name"), str):
                    call_id = call.get("id")
                    calls.append(
                        IssuedCall(call_id if isinstance(call_id, str) else None, call["name"], call.get("args"))
                    )
        elif kind == "tool" and isinstance(call_id := fields.get("tool_call_id"), str):
            answered.add(call_id)
    output_tools = frozenset(c.name for c in calls if c.name is not None and c.call_id in answered)
    return IssuedCalls(calls, output_tools) if output_tools else None
