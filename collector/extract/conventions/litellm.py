"""LiteLLM's own OpenTelemetry logger (`litellm.callbacks = ["otel"]`, `litellm/integrations/opentelemetry.py`).

LiteLLM traces model requests only (`litellm.completion` and the rest): no tool span and no run span, so its
responses are read for the run a user marks around them (a hand-made `invoke_agent` span, say), as the
calls no tool span records (`model_calls`). Its request span (`litellm_request`; `<operation> <model>` with
`OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`; a `generation_name` from the request's metadata)
is written with the OTel GenAI message attributes, but not their tool calls:

- `gen_ai.output.messages` (`_transform_choices_to_otel_semantic_conventions`): each choice's message as GenAI
  parts of its text only; the message's OpenAI `tool_calls` ([{id, type, function: {name, arguments}}]) are
  copied beside the parts only when the message is a dict (`"tool_calls" in msg`), which a `litellm.completion`
  response's `Message` object is not. The calls are written flattened, `gen_ai.completion.<j>.function_call.
  name | arguments` (`_tool_calls_kv_pair`), <j> the call's index in the response, with no call id; a call
  without a `function` (a custom tool call) is skipped, its index left empty: the response is then read as
  listing only some of its calls (`IssuedCalls.partial`), and a run whose calls come from it alone is flagged.
- `gen_ai.input.messages`: the request's messages, each `{"role", "parts": [text], "tool_calls"?,
  "tool_call_id"?}`: an assistant message repeats its calls as OpenAI `tool_calls` with their ids, and a `tool`
  message answers one by `tool_call_id` (both read by `model_calls`: the repeated call gives a call its id, the
  answer its result).

So `issued_text` is None: the skim of the output messages (`model_calls.skim_claimed`) would find no call there.
The span of the request's raw provider exchange (`raw_gen_ai_request`, `llm.<provider>.*` in Python's repr)
repeats the response and is not read. Everything with content is written only when the logger captures content
(`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`, `litellm.turn_off_message_logging`): without it the span
says neither the calls nor `gen_ai.operation.name` nor the finish reasons, and still is a model response
(`llm.request.type`): no sign of a call is left, and such a run reads as one that called nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from toolscore.collector.extract.conventions.base import Gate, IssuedCall, IssuedCalls, Read, Role
from toolscore.collector.extract.conventions.common import genai_issued_calls, load_json
from toolscore.collector.extract.conventions.genai import INFERENCE_OPERATIONS, OPERATION
from toolscore.collector.spans import SpanRecord

__all__ = ["LITELLM_SCOPE", "LiteLLMExtractor", "litellm_issued_calls"]

# --- Names read (litellm 1.x, `OpenTelemetry.set_attributes`) --------------------------------------------------
# recognised by   scope `litellm` (LITELLM_TRACER_NAME: `OTEL_TRACER_NAME`, default "litellm") and
#                 llm.request.type (the call type, always written) or an inference gen_ai.operation.name
# response calls  gen_ai.output.messages [{role, parts: [{type: text, content}], tool_calls?, finish_reason}],
#                 else gen_ai.completion.<j>.function_call.name | arguments (no id)
# tools offered   llm.request.functions.<i>.name | description | parameters (JSON text)
# not read        raw_gen_ai_request (llm.<provider>.messages / .choices as Python's repr of the raw exchange)

LITELLM_SCOPE: Final = "litellm"
REQUEST_TYPE: Final = "llm.request.type"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
CALL_PREFIX: Final = "gen_ai.completion"
FUNCTIONS: Final = "llm.request.functions"
_MAX_CALLS: Final = 128
_MAX_TOOLS: Final = 128


def litellm_issued_calls(attrs: Mapping[str, Any]) -> IssuedCalls:
    """A LiteLLM response's calls in the model's order: GenAI `tool_call` parts or OpenAI `tool_calls` of its
    output messages (with their ids), else `gen_ai.completion.<j>.function_call.name | arguments` (no ids).

    `_tool_calls_kv_pair` writes a call's keys at its index <j> in the response, skipping a call without a
    `function` (a custom tool call: `{"type": "custom", "custom": {...}}`) and a key whose value is empty: an
    index below the last one written that holds no name is a call the span does not list (`partial`)."""
    messages = attrs.get(OUTPUT_MESSAGES)
    calls = genai_issued_calls(messages) if messages is not None else []
    if calls:
        return IssuedCalls(calls)
    decoded = load_json(messages) if isinstance(messages, str) else messages
    for message in decoded if isinstance(decoded, list) else ():
        tool_calls = message.get("tool_calls") if isinstance(message, Mapping) else None
        for call in tool_calls if isinstance(tool_calls, list) else ():
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                calls.append(IssuedCall(_text(call.get("id")), _text(function.get("name")), function.get("arguments")))
    if calls:
        return IssuedCalls(calls)
    written: set[int] = set()
    for key in attrs:
        if key.startswith(CALL_PREFIX + ".") and key.endswith((".function_call.name", ".function_call.arguments")):
            index = key[len(CALL_PREFIX) + 1 :].split(".", 1)[0]
            if index.isdigit() and int(index) < _MAX_CALLS:
                written.add(int(index))
    partial = False
    for j in range(max(written) + 1 if written else 0):
        name = attrs.get(f"{CALL_PREFIX}.{j}.function_call.name")
        if not (isinstance(name, str) and name):
            partial = True
            continue
        calls.append(IssuedCall(None, name, attrs.get(f"{CALL_PREFIX}.{j}.function_call.arguments")))
    return IssuedCalls(calls, partial=partial)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


class LiteLLMExtractor:
    """LiteLLM's request spans: model responses, whose calls are read as LiteLLM writes them."""

    name = "litellm"
    gate = Gate(scopes=frozenset({LITELLM_SCOPE}))
    issued_text = None
    partial_responses = True
    tool_keys = (f"{FUNCTIONS}.0.name",)

    def classify(self, span: SpanRecord) -> Role | None:
        """A `litellm` span with the call type, or an inference operation, is a model response; any other span
        of the scope (its raw-request, guardrail and service spans) is left to the other conventions."""
        if span.scope != LITELLM_SCOPE:
            return None
        attrs = span.attributes
        if REQUEST_TYPE in attrs or attrs.get(OPERATION) in INFERENCE_OPERATIONS:
            return Role.LLM
        return None

    def read(self, span: SpanRecord, role: Role) -> Read:
        return litellm_issued_calls(span.attributes)

    def read_tools(self, span: SpanRecord, role: Role) -> list[Any]:
        """`llm.request.functions.<i>.name | description | parameters` (`set_tools_attributes`)."""
        attrs = span.attributes
        tools: list[Any] = []
        for i in range(_MAX_TOOLS):
            name = attrs.get(f"{FUNCTIONS}.{i}.name")
            if not isinstance(name, str):
                break
            tools.append(
                {
                    "name": name,
                    "description": attrs.get(f"{FUNCTIONS}.{i}.description"),
                    "parameters": attrs.get(f"{FUNCTIONS}.{i}.parameters"),
                }
            )
        return tools
