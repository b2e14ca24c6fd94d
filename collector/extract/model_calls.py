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

from toolscore.collector.extract.config import ExtractConfig, ExtractStats
from toolscore.collector.extract.conventions.base import ToolRead
from toolscore.collector.extract.order import IssuedBatch, PendingCall
from toolscore.collector.extract.values import normalize_args
from toolscore.collector.spans import StatusCode
from toolscore.scorers.model import ToolCall

__all__ = ["all_claimed", "build_model_call", "model_only_calls", "skim_claimed", "unread_claimer"]

_TOOL_CALL = '"tool_call"'
"""In the text of every GenAI `tool_call` part (its type; no encoder escapes ASCII letters)."""
_SPACED_ID = '"id": "'
_COMPACT_ID = '"id":"'


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
    listing = [text for text in texts if _TOOL_CALL in text]  # most runs end on a response that lists none
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
            read = ToolRead(name=name, args=issued.args, call_id=call_id if isinstance(call_id, str) else None)
            found.append(PendingCall(span, read, issued, span_id, index, model_only=True))
    return found


def build_model_call(call: PendingCall, config: ExtractConfig, stats: ExtractStats) -> ToolCall:
    """The `ToolCall` of a model-only call: the response's name, id and arguments, nothing a tool span gives."""
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
        "error": False,
        "error_type": None,
        "start_ns": None,
        "end_ns": None,
        "span_id": None,
        "state": None,
        "message_index": 0,
        "final": False,
        "model_only": True,
    }
    if type(name) is str and (call_id is None or type(call_id) is str):  # as `build_call`: see there
        return ToolCall.trusted(fields, _MODEL_FIELDS)
    return ToolCall(**{key: fields[key] for key in _MODEL_FIELDS})


_MODEL_FIELDS = frozenset(("name", "args", "args_state", "call_id", "model_only"))
"""The fields `build_model_call` gives; the others keep their defaults, unset as validation leaves them."""
