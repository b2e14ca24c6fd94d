"""Tool calls seen only in the model's output: the model issued them and no tool span recorded them.

Some instrumentations trace the model and not the tools (opentelemetry-instrumentation-openai-v2 in the
newest GenAI form: `chat` spans under an `invoke_agent` span, no `execute_tool` span at all), and some
frameworks leave one kind of call untraced (smolagents' managed sub-agents: the sub-agent's run is
traced, the caller's call of it is not). The call is still one the run made: the model's response lists it.

Rule: a tool call that a model response of a run lists (an LLM span the run owns, see `runs`) and that
no tool span of the run claims is a call of that run, marked `ToolCall.model_only`, in the model's order
and placed among the run's other calls by the batch rule of `order`. Claims are `order`'s ties (by call
id, then by name and equal arguments, then by name; a handoff takes the first free call of its
response), made by every tool span of the run that extraction read, including those it then leaves out
(the framework's structured-output tool, calls past `max_calls_per_run`) and, as handoffs (their name
is unknown), the tool spans it could not read. A layer of a call (see `layers`) claims nothing: the call
it is a layer of does. So no call is counted twice.

- Only outputs are read: the input messages a model span echoes (`gen_ai.input.messages`,
  `llm.input_messages`) repeat every earlier call of the conversation.
- A response whose span failed (status ERROR) never reached the agent: it adds no call (it may still tie
  the tool spans that did run).
- An issued call that is the framework's structured output (`IssuedCalls.output_tools`: pydantic-ai's
  `final_result`, which pydantic-ai does not trace) is left out as its span would be
  (`ExtractConfig.include_output_tools`); it is no call of the agent's, so it is not counted.
- An issued call without a tool name is left out, counted `model_call_without_name`.
- Model-only calls join the runs that exist: model spans alone (no run span, no tool span) make no run.
- A response that stopped to call tools (`gen_ai.response.finish_reasons`: `tool_calls`, ...; OpenInference's
  `llm.finish_reason`) yet lists no call recorded none of its calls: the instrumentation kept no content (the
  OTel GenAI instrumentations' default, with `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` unset, keeps
  the finish reasons and drops the messages; OpenLLMetry with `TRACELOOP_TRACE_CONTENT=false` likewise;
  OpenInference with `OPENINFERENCE_HIDE_OUTPUTS` keeps `llm.finish_reason`, which openinference-instrumentation-
  anthropic sets from the message's `stop_reason` whatever is hidden). A run whose calls come from its responses
  alone then cannot be read, and is flagged incomplete (`runs`) rather than read as a run that called nothing
  (`stopped_for_tools`).
- A model-only call listed without its call id takes the id a later request of the run repeats it under and
  answers (`_with_repeated_ids`: OpenLLMetry's Responses API spans), so that its outcome can be read; when no
  such id is found and the run answered a call it cannot attribute, the call's outcome is unknown and its run is
  flagged incomplete (`outcome_unknown`). The repeated call may be a GenAI `tool_call` part or, in LiteLLM's input
  messages, the assistant message's OpenAI `tool_calls` beside its parts; the answer a `tool_call_response` part
  or LiteLLM's `tool` message (`tool_call_id`, the answer as text parts).
- An answer that names no call (openinference-instrumentation-litellm's `tool` messages have no `tool_call_id`)
  answers the one call of the assistant message it follows; after a message of several calls it cannot be
  attributed, and a model-only call without a result then has an unknown outcome: its run is flagged incomplete.
- A model-only call has no span, result or times (`span_id`, `start_ns`, `end_ns` are None); its
  arguments are the response's, capped as any others.

Cost: a run without model spans reads none. Otherwise, when every model span of the run holds its
calls as GenAI JSON text (`Extractor.issued_text`), the text is first skimmed without decoding it
(`skim_claimed`): when it lists no more calls than the run's tool spans carry call ids found in it, all
are claimed and nothing is decoded. Else each model span is read once, and when every call the
responses list carries a call id, no two alike, that one of the run's tool spans carries (`all_claimed`),
no tie is made here (the order still ties when it must, see `order.needs_model_responses`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any, Final

from toolscore.collector.extract.config import ExtractConfig, ExtractStats
from toolscore.collector.extract.conventions.base import ToolRead
from toolscore.collector.extract.conventions.common import ERROR_TYPE_OTHER, load_json
from toolscore.collector.extract.conventions.genai import REPR_MARKERS
from toolscore.collector.extract.conventions.langfuse import tool_results as langfuse_tool_results
from toolscore.collector.extract.conventions.openinference import FINISH_REASON as OPENINFERENCE_FINISH_REASON
from toolscore.collector.extract.conventions.openinference import anthropic_tool_results
from toolscore.collector.extract.conventions.vercel_ai import PROMPT_MESSAGES, tool_results
from toolscore.collector.extract.order import IssuedBatch, PendingCall
from toolscore.collector.extract.values import normalize_args
from toolscore.collector.sources.log_events import BODY_KEY
from toolscore.collector.spans import SpanRecord, StatusCode
from toolscore.scorers._model import ToolCall

__all__ = [
    "all_claimed",
    "build_model_call",
    "model_only_calls",
    "outcome_unknown",
    "skim_claimed",
    "stopped_for_tools",
    "tool_responses",
    "unread_claimer",
    "with_outcomes",
]

_TOOL_CALL = '"tool_call"'
"""In the text of every GenAI `tool_call` part (its type; no encoder escapes ASCII letters)."""
_SPACED_ID = '"id": "'
_COMPACT_ID = '"id":"'


FINISH_REASONS = "gen_ai.response.finish_reasons"
_TOOL_FINISH_REASONS = frozenset({"tool_calls", "tool_call", "function_call", "tool_use"})
"""The finish reasons that say a response ended to have tools called: OpenAI's `tool_calls` (and the older
`function_call`), the GenAI output-message schema's `tool_call`, Anthropic's and Bedrock's `tool_use`; compared
lower-cased (Cohere's `TOOL_CALL`). Gemini ends a response that calls functions with `STOP`: no sign there."""


def stopped_for_tools(span: SpanRecord) -> bool:
    """Whether the model span says its response ended to have tools called (`gen_ai.response.finish_reasons`,
    an array of strings, or one string as some emitters write it; else OpenInference's `llm.finish_reason`)."""
    attrs = span.attributes
    reasons = attrs.get(FINISH_REASONS)
    if reasons is None:
        reasons = attrs.get(OPENINFERENCE_FINISH_REASON)
    if isinstance(reasons, str):
        return reasons.lower() in _TOOL_FINISH_REASONS
    if isinstance(reasons, (list, tuple)):
        return any(isinstance(reason, str) and reason.lower() in _TOOL_FINISH_REASONS for reason in reasons)
    return False


def unread_claimer() -> ToolRead:
    """The read that stands for a tool span extraction could not read: a handoff, so it claims the first free
    call of the latest response before it, whatever that call's name (its own is unknown)."""
    return ToolRead(name=None, handoff=True)


def skim_claimed(claimers: list[PendingCall], texts: list[str]) -> bool:
    """Whether every call the responses' GenAI `texts` (`Extractor.issued_text`) list is claimed for sure,
    without decoding them.

    `"tool_call"` occurs at least once per call listed, so its count bounds the calls from above; a
    claimer whose call id occurs in the text as the value of an `"id"` key claims the call listed with
    that id, one call per distinct id. When the ids found are at least the bound, every call listed is
    claimed. (An `"id"` key elsewhere in a response, in a call's arguments, whose value is the call id of
    another of the run's tool spans would be taken for a listed call: the skim trusts that no response
    does that.) The key is looked up as JSON encoders write it, `"id": "` (Python's default) or `"id":"`
    (compact, JavaScript), whichever the text uses; ids that JSON must escape are not found, and the
    responses are then read.
    """
    listing: list[str] = []  # most runs end on a response that lists none
    for text in texts:
        if _TOOL_CALL in text:
            listing.append(text)
        elif any(marker in text for marker in REPR_MARKERS):
            return False  # calls written as Python reprs (OpenAI Agents contrib), never beside `"tool_call"` parts
    if not listing:
        return True
    text = listing[0] if len(listing) == 1 else "\n".join(listing)
    bound = text.count(_TOOL_CALL)
    if bound > len(claimers):
        return False
    key = _SPACED_ID if _SPACED_ID in text else _COMPACT_ID
    found: set[str] = set()
    for claimer in claimers:
        call_id = claimer.read.call_id
        if call_id and call_id not in found and f'{key}{call_id}"' in text:
            found.add(call_id)
    return len(found) >= bound


def all_claimed(claimers: list[PendingCall], batches: list[IssuedBatch]) -> bool:
    """Whether every call the responses list is claimed for sure, without tying: each has a call id, no two
    the same, that one of `claimers` carries (the tie by id then gives each of them its tool span)."""
    ids = {call.read.call_id for call in claimers}
    seen: set[str] = set()
    for batch in batches:
        for issued in batch.calls:
            call_id = issued.call_id
            if call_id is None or call_id not in ids or call_id in seen:
                return False
            seen.add(call_id)
    return True


def model_only_calls(
    batches: list[IssuedBatch], used: set[tuple[str, int]], config: ExtractConfig, stats: ExtractStats
) -> list[PendingCall]:
    """The calls of `batches` no claimer tied (`used`: `order.tie_calls`), each tied to its response."""
    found: list[PendingCall] = []
    for batch in batches:
        span = batch.span
        if span.status_code == StatusCode.ERROR:
            continue
        span_id = span.span_id
        for index, issued in enumerate(batch.calls):
            if (span_id, index) in used:
                continue
            name, call_id = issued.name, issued.call_id
            if name in batch.output_tools and not config.include_output_tools:
                continue
            if not (name and isinstance(name, str)):
                stats.skip("model_call_without_name")
                continue
            read = ToolRead(
                name=name,
                args=issued.args,
                call_id=call_id if isinstance(call_id, str) else None,
                error=issued.error_type is not None,
                error_type=issued.error_type,
            )
            found.append(PendingCall(span, read, issued, span_id, index, model_only=True))
    return found


def build_model_call(
    call: PendingCall, config: ExtractConfig, stats: ExtractStats, *, message: int | None = None
) -> ToolCall:
    """The `ToolCall` of a model-only call: the response's name, id and arguments, nothing a tool span gives; in
    model message `message` (`order.message_indices`, always known: the call comes from a model span)."""
    read = call.read
    args, state, cut = normalize_args(read.args, config)
    stats.args_truncated += cut
    name, call_id = read.name, read.call_id
    fields = {
        "name": name,
        "args": args,
        "args_state": state,
        "result": None,
        "call_id": call_id,
        "error": read.error,
        "error_type": read.error_type,
        "start_ns": None,
        "end_ns": None,
        "span_id": None,
        "state": None,
        "message_index": 0 if message is None else message,
        "final": False,
        "model_only": True,
    }
    given = _MODEL_FIELDS if message is None else _MODEL_FIELDS_IN_MESSAGE
    if read.error:
        given = given | _ERROR_FIELDS
    if type(name) is str and (call_id is None or type(call_id) is str):  # as `build_call`: see there
        return ToolCall.trusted(fields, given)
    return ToolCall(**{key: fields[key] for key in given})


_MODEL_FIELDS = frozenset(("name", "args", "args_state", "call_id", "model_only"))
"""The fields `build_model_call` gives; the others keep their defaults, unset as validation leaves them."""
_ERROR_FIELDS = frozenset(("error", "error_type"))
"""Given too when the response that issued the call says the framework refused it (`IssuedCall.error_type`)."""
_MODEL_FIELDS_IN_MESSAGE = _MODEL_FIELDS | {"message_index"}


def with_outcomes(
    calls: tuple[ToolCall, ...],
    offered: AbstractSet[str],
    models: list[SpanRecord],
    step_errors: list[str | None],
) -> tuple[ToolCall, ...]:
    """`calls` with each model-only call's outcome, which no tool span records: a call of a tool the model was not
    offered failed (the framework has no such tool: `unknown_tool`); so did one whose step failed (`step_errors`,
    aligned with `calls`: the error type of the span around the model response that issued it, when that span
    is no run span and ended in error, as smolagents' step does when it refuses a call's arguments), and one the
    response that issued it says the framework refused (`IssuedCall.error_type`, already on the call); else its
    result is what the agent answered the model with, from a later model request's tool message for its call
    id, and it failed when that message says so (the Vercel AI SDK's `error-text`/`error-json`/`execution-denied`
    outputs) or, when the message does not say, when the result starts with "Error" (how frameworks and
    hand-written loops report a failed tool to the model), ends with pydantic-ai's `RETRY_PROMPT`, or is one of
    CrewAI's answers for a call it did not run (`CREWAI_REFUSAL`).

    Only model-only calls change, and only when the run has one: the rest of the run is left as it is.
    """
    if not any(call.model_only for call in calls):
        return calls
    responses = tool_responses(models)
    if any(call.model_only and call.call_id is None for call in calls):
        calls = _with_repeated_ids(calls, models, responses)
    return tuple(
        _outcome(call, offered, responses, step_error) if call.model_only else call
        for call, step_error in zip(calls, step_errors, strict=True)
    )


def _with_repeated_ids(
    calls: tuple[ToolCall, ...], models: list[SpanRecord], responses: Mapping[str, ToolResponse]
) -> tuple[ToolCall, ...]:
    """`calls` with the call id of each model-only call that has none, where a later request of the run repeats
    the call and answers it under one id.

    A response may list its calls without their call ids: OpenLLMetry's Responses API span gives each
    `function_call` item's own `id` (`fc_...`), which toolscore reads as no id (`conventions.traceloop`). The
    agent then sends the call back in its next request, as a GenAI `tool_call` part, with the id its
    `function_call_output` answers (a `tool_call_response` part): OpenLLMetry writes an input `function_call`
    item's `id`, else its `call_id`, so a loop that repeats the call by its `call_id` shows it. The call takes
    that id when exactly one repeated call with the same name and equal arguments has an answered id that no
    other call of the run holds; else (no such call, or several: the same call made twice) it keeps none, and
    its outcome stays unknown. A repeated call whose id is not answered (an item id: a loop that hands the
    response's items back as they came) gives nothing.
    """
    held = {call.call_id for call in calls if call.call_id is not None}
    repeated: dict[tuple[str, str], set[str]] = {}
    for span in models:
        messages = load_json(span.attributes.get("gen_ai.input.messages"))
        for message in messages if isinstance(messages, list) else ():
            parts = message.get("parts") if isinstance(message, Mapping) else None
            for part in [*(parts if isinstance(parts, list) else ()), *_openai_tool_calls(message)]:
                if not (isinstance(part, Mapping) and part.get("type") == "tool_call"):
                    continue
                call_id, name = part.get("id"), part.get("name")
                if isinstance(call_id, str) and call_id in responses and call_id not in held and isinstance(name, str):
                    repeated.setdefault((name, _canonical(part.get("arguments"))), set()).add(call_id)
    if not repeated:
        return calls
    found: list[ToolCall] = []
    for call in calls:
        ids = (
            repeated.get((call.name, _canonical(call.args)), set())
            if call.model_only and call.call_id is None and call.args_state == "value"
            else set()
        )
        found.append(call.model_copy(update={"call_id": next(iter(ids))}) if len(ids) == 1 else call)
    return tuple(found)


def _openai_tool_calls(message: Any) -> list[dict[str, Any]]:
    """The calls a GenAI input message repeats as OpenAI `tool_calls` beside its parts (LiteLLM's logger copies an
    assistant message's `tool_calls` as they were sent: `[{id, type, function: {name, arguments}}]`), as GenAI
    `tool_call` parts."""
    tool_calls = message.get("tool_calls") if isinstance(message, Mapping) else None
    found: list[dict[str, Any]] = []
    for call in tool_calls if isinstance(tool_calls, list) else ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping):
            found.append(
                {
                    "type": "tool_call",
                    "id": call.get("id"),
                    "name": function.get("name"),
                    "arguments": function.get("arguments"),
                }
            )
    return found


def outcome_unknown(calls: tuple[ToolCall, ...], models: list[SpanRecord]) -> bool:
    """Whether a model-only call's outcome cannot be read: it has no call id and no result (`with_outcomes` found
    no answer for it), while the run's requests answer a call id that no call of the run holds.

    That answer is for a call the run cannot name: this one, maybe, and it may say the call failed. OpenLLMetry's
    Responses API span lists its calls by item id (read as none), and a loop that hands the response's items back
    as they came repeats each call under that item id too (OpenLLMetry writes an input item's `id` before its
    `call_id`), while its answer carries the `call_id`: nothing in the trace links the two. Read as a success, a
    failed call would be scored as one; the run is flagged incomplete instead (`runs`).
    """
    if any(call.model_only and call.result is None for call in calls) and unnamed_answers(models):
        return True
    if not any(call.model_only and call.call_id is None and call.result is None for call in calls):
        return False
    held = {call.call_id for call in calls if call.call_id is not None}
    return any(call_id not in held for call_id in tool_responses(models))


def _canonical(args: Any) -> str:
    """Arguments (an object, or its JSON text) as comparable text: keys sorted."""
    decoded = load_json(args) if isinstance(args, str) else args
    return json.dumps(decoded, sort_keys=True, default=str)


def _outcome(
    call: ToolCall, offered: AbstractSet[str], responses: Mapping[str, ToolResponse], step_error: str | None
) -> ToolCall:
    if offered and call.name not in offered:
        return call.model_copy(update={"error": True, "error_type": UNKNOWN_TOOL})
    if step_error is not None:
        return call.model_copy(update={"error": True, "error_type": step_error})
    response = responses.get(call.call_id) if call.call_id is not None else None
    if response is None:
        return call
    result, failed, error_type = response
    if call.error:  # the response that issued it said the framework refused it: that error stands
        return call.model_copy(update={"result": result})
    if failed is None:
        failed = isinstance(result, str) and (result.lstrip()[:5].lower() == "error" or result.endswith(RETRY_PROMPT))
        if not failed and isinstance(result, str) and (refusal := CREWAI_REFUSAL.fullmatch(result)) is not None:
            failed, error_type = True, UNKNOWN_TOOL if refusal.group(1) else None
    error_type = (error_type or ERROR_TYPE_OTHER) if failed else None
    return call.model_copy(update={"result": result, "error": failed, "error_type": error_type})


UNKNOWN_TOOL: Final = "unknown_tool"
CREWAI_REFUSAL: Final = re.compile(
    r"(Tool not found)|Tool execution blocked by hook\. Tool: .*"
    r"|Tool '.*' has reached its (?:usage limit of \d+ times|maximum usage limit) and cannot be used anymore\.",
    re.DOTALL,
)
"""What CrewAI (1.x, `agent_executor.AgentExecutor._execute_single_native_tool_call`, `agent_utils.
execute_single_native_tool_call`) answers the model, whole, for a native tool call it did not run: a tool it does not
have (`Tool not found`, read as `unknown_tool`), one a `before_tool_call` hook blocked, one past its
`max_usage_count`. A tool that raised is answered `Error executing tool: ...`, which the "Error" rule reads; a tool
that returned a `ToolFailure` is answered with its own message, which nothing tells from a result."""
ToolResponse = tuple[Any, bool | None, str | None]
"""What the agent answered the model for one call: the result, whether the call failed (None: the message does not
say, and a result that starts with "Error", or ends with pydantic-ai's `RETRY_PROMPT`, failed) and the error's type
when it says."""
RETRY_PROMPT: Final = "\n\nFix the errors and try again."
"""How pydantic-ai (0.x to 2.x, `RetryPromptPart.model_response`) ends what it answers the model for a failed call:
a tool that raised `ModelRetry`, arguments that failed validation, a tool it does not have. Its own tool spans say
the call failed; where no tool span does (a client instrumentation's model spans alone: OpenLIT), this text does."""


def tool_responses(models: list[SpanRecord]) -> dict[str, ToolResponse]:
    """Tool results the agent sent back to the model, by call id, from the model spans' input messages: GenAI
    `tool_call_response` parts (`gen_ai.input.messages`, or a `gen_ai.tool.message` event), OpenInference
    `llm.input_messages.<i>.message` of role `tool` (from index 0, or 1: see `_MAX_MESSAGES`), the Vercel AI SDK's
    `ai.prompt.messages` (its `tool-result` parts say themselves whether the call failed: `vercel_ai.tool_results`),
    and, before OpenInference's `tool` messages, the Anthropic request openinference-instrumentation-anthropic keeps
    in `input.value`, whose `tool_result` blocks say whether the call failed (`is_error`:
    `openinference.anthropic_tool_results`), and a Langfuse generation's recorded request (`langfuse.tool_results`:
    `tool` messages, Responses API `function_call_output` items)."""
    found: dict[str, ToolResponse] = {}
    for span in models:
        attrs = span.attributes
        prompt = attrs.get(PROMPT_MESSAGES)
        if prompt is not None:
            for call_id, result, failed, error_type in tool_results(prompt):
                if call_id not in found:
                    found[call_id] = (result, failed, error_type)
        messages = load_json(attrs.get("gen_ai.input.messages"))
        for message in messages if isinstance(messages, list) else ():
            parts = message.get("parts") if isinstance(message, Mapping) else None
            for part in parts if isinstance(parts, list) else ():
                if isinstance(part, Mapping) and part.get("type") == "tool_call_response":
                    _keep(found, part.get("id"), part.get("response"))
            if isinstance(message, Mapping) and message.get("role") == "tool" and "tool_call_id" in message:
                _keep(found, message.get("tool_call_id"), _parts_text(parts))
        for event in span.events:
            if event.name == "gen_ai.tool.message":
                body = event.attributes.get(BODY_KEY)
                if isinstance(body, Mapping):
                    _keep(found, body.get("id"), body.get("content"))
        for call_id, content, is_error in anthropic_tool_results(attrs):
            if call_id not in found:
                found[call_id] = (content if isinstance(content, str) else _block_text(content), is_error, None)
        for call_id, content in langfuse_tool_results(attrs):
            _keep(found, call_id, content)
        for call_id, content in _openinference_answers(attrs)[0]:
            _keep(found, call_id, content)
    return found


def _openinference_answers(attrs: Mapping[str, Any]) -> tuple[list[tuple[Any, Any]], bool]:
    """The answers of one OpenInference request, `llm.input_messages.<i>.message` of role `tool` (from index 0, or
    1: see `_MAX_MESSAGES`), as (call id, content); and whether an answer names no call that can be known.

    A `tool` message says which call it answers by `message.tool_call_id`. openinference-instrumentation-litellm
    writes none (`_get_attributes_from_message_param` reads a message's role, content and `tool_calls` only): an
    answer without an id then answers the one call of the assistant message it follows, when that message made
    one call and one answer follows it (Chat Completions answers every call of an assistant message in the
    `tool` messages right after it); after a message of several calls, which answer is whose is not said."""
    answers: list[tuple[Any, Any]] = []
    unnamed = False
    calls: list[Any] = []
    pending: list[Any] = []
    for i in range(_MAX_MESSAGES + 1):
        prefix = f"llm.input_messages.{i}.message."
        role = attrs.get(prefix + "role")
        if role == "tool":
            call_id = attrs.get(prefix + "tool_call_id")
            if call_id is None:
                pending.append(attrs.get(prefix + "content"))
            else:
                answers.append((call_id, attrs.get(prefix + "content")))
            continue
        if pending:  # the id-less answers that followed `calls`' assistant message
            if len(calls) == 1 and len(pending) == 1 and isinstance(calls[0], str):
                answers.append((calls[0], pending[0]))
            else:
                unnamed = True
            pending = []
        if role is None:
            if i == 0:  # no instructions: OpenInference's Responses API input items start at 1
                continue
            break
        calls = []
        for k in range(_MAX_MESSAGES):
            name = attrs.get(f"{prefix}tool_calls.{k}.tool_call.function.name")
            if name is None:
                break
            calls.append(attrs.get(f"{prefix}tool_calls.{k}.tool_call.id"))
    return answers, unnamed


def unnamed_answers(models: list[SpanRecord]) -> bool:
    """Whether a request of the run answers a call it does not name, and which call cannot be told (an
    OpenInference `tool` message without `tool_call_id` after several calls: `_openinference_answers`)."""
    return any(_openinference_answers(span.attributes)[1] for span in models)


_MAX_MESSAGES = 256
"""Input messages read per model span, as the flattened attributes are probed one index after another, up to the
first gap past index 0. Index 0 may be missing: openinference-instrumentation-openai keeps it for a Responses API
request's `instructions` and lists the `input` items from index 1 (`_ResponsesApiAttributes.
_get_attributes_from_response_input_item_params`, `msg_idx=1`), so a request without instructions starts at 1."""


def _parts_text(parts: Any) -> str | None:
    """The text of a GenAI message's `text` parts, joined (LiteLLM's `tool` message: the answer as one text part
    beside `tool_call_id`, `_transform_messages_to_otel_semantic_conventions`)."""
    texts = (
        [p.get("content") for p in parts if isinstance(p, Mapping) and p.get("type") == "text"]
        if isinstance(parts, list)
        else []
    )
    strings = [t for t in texts if isinstance(t, str)]
    return "".join(strings) if strings else None


def _keep(found: dict[str, ToolResponse], call_id: Any, text: Any) -> None:
    if isinstance(call_id, str) and call_id and call_id not in found:
        found[call_id] = (text if isinstance(text, str) else _block_text(text), None, None)


def _block_text(response: Any) -> str:
    """A tool response as text: a list of text content blocks (`[{"type": "text", "text": ...}]`, Anthropic's
    `tool_result` content as the `anthropic` client's own tracing writes it in `tool_call_response` parts, a plain
    string sent as one block) is their text joined, so a result that reads "Error: ..." still says the call failed;
    anything else its JSON text."""
    if isinstance(response, list) and response:
        texts = [b.get("text") for b in response if isinstance(b, Mapping) and b.get("type") == "text"]
        if len(texts) == len(response) and all(isinstance(text, str) for text in texts):
            return "".join(texts)  # type: ignore[arg-type]  # checked: every one is a str
    return json.dumps(response, default=str)
