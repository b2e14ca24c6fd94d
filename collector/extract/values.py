"""From raw span values to the run model: size caps first, then JSON parsing.

Caps are applied before parsing so that an oversized value is never decoded: arguments longer than
`max_args_bytes` keep their first bytes as raw text, results and texts are cut. Arguments that arrive
decoded (a structured attribute, a model response's parsed message list) are measured as JSON text,
so the cap holds whatever shape they came in. Arguments wrapped in an envelope (`ToolRead.unwrap`) are
measured as recorded, envelope and all, and unwrapped only when they fit.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from toolscore.collector.extract.config import ExtractConfig, ExtractStats
from toolscore.collector.extract.conventions.base import NOT_CAPTURED, IssuedCall, RunInfo, ToolRead
from toolscore.collector.extract.json_text import decode_json
from toolscore.collector.spans import SpanRecord
from toolscore.scorers._model import AgentRun, ArgsState, ToolCall

__all__ = ["agent_run", "build_call", "cap_text", "capped_attributes", "normalize_args", "unwrapped"]


def cap_text(text: str, max_bytes: int) -> tuple[str, bool]:
    """`text` cut to at most `max_bytes` UTF-8 bytes (never inside a character), and whether it was cut.

    Encodes at most `max_bytes` characters, whose bytes are the first `max_bytes` bytes of the whole
    text or more: a multi-megabyte value costs what its kept part does.
    """
    size = len(text)  # every character takes 1 to 4 bytes: encode only when the length cannot tell
    if size * 4 <= max_bytes or (size <= max_bytes and len(text.encode("utf-8", "surrogatepass")) <= max_bytes):
        return text, False
    return text[:max_bytes].encode("utf-8", "surrogatepass")[:max_bytes].decode("utf-8", "ignore"), True


def unwrapped(read: ToolRead, max_args_bytes: int) -> ToolRead:
    """`read` with its envelope unwrapped (`ToolRead.unwrap`), when the envelope's text fits `max_args_bytes`.

    An envelope over the cap keeps its text as the arguments, which `normalize_args` then cuts and
    counts like any other oversized arguments; the call id inside it is not read. Measuring first is
    the point: decoding a multi-megabyte envelope to find small arguments inside would spend the
    memory and time the cap exists to bound. An envelope that arrives decoded (a structured
    attribute) costs nothing to unwrap and is unwrapped whatever its size.
    """
    unwrap, args = read.unwrap, read.args
    if unwrap is None:
        return read
    if isinstance(args, str) and cap_text(args, max_args_bytes)[1]:  # over the cap: its cut part only is encoded
        return dataclasses.replace(read, unwrap=None)
    args, call_id = unwrap(args)
    return dataclasses.replace(read, args=args, call_id=read.call_id or call_id, unwrap=None)


def normalize_args(value: Any, config: ExtractConfig) -> tuple[Any, ArgsState, bool]:
    """Arguments, their state, and whether they were cut: JSON text is parsed, invalid or oversized text kept raw.

    Empty text and a missing value mean the call had no arguments (`absent`), which differs from
    arguments the instrumentation did not record (`not_captured`) and from `{}`. The caller counts
    the cut: one call may read two copies of its arguments (the tool span's, the model response's).
    """
    if value.__class__ is not str:  # text first: it is nearly every call, and an ABC check costs ~0.4 µs
        if value is NOT_CAPTURED:
            return None, "not_captured", False
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, Mapping | list):  # a structured attribute, or a model response's decoded arguments
            text, cut = cap_text(json.dumps(value, default=str, ensure_ascii=False), config.max_args_bytes)
            return (text, "raw", True) if cut else (value, "value", False)
        elif not isinstance(value, str):
            return (None, "absent", False) if value is None else (value, "value", False)
    if not value or value.isspace():  # blank text, tested without copying it as `strip()` would
        return None, "absent", False
    text, cut = cap_text(value, config.max_args_bytes)
    if cut:
        return text, "raw", True
    try:
        return decode_json(text), "value", False
    except ValueError:
        return text, "raw", False


_JSON_OPENERS = ("{", "[")
_MODEL_ARGS = (str, dict)
"""What a model response's arguments can be when they win over a tool span's `args_parsed` ones: its text, or that text
decoded into an object."""


def _result(value: Any, config: ExtractConfig, stats: ExtractStats) -> Any:
    if value.__class__ is not str:  # text first, as in `normalize_args`: nearly every result
        if value is None:
            return None
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif not isinstance(value, str):
            if isinstance(value, Mapping | list):
                encoded = json.dumps(value, default=str)
                if len(encoded) > config.max_result_bytes:
                    stats.results_truncated += 1
                    return cap_text(encoded, config.max_result_bytes)[0]
            return value
    text, cut = cap_text(value, config.max_result_bytes)
    stats.results_truncated += cut
    return text


def build_call(
    read: ToolRead,
    span: SpanRecord,
    issued: IssuedCall | None,
    config: ExtractConfig,
    stats: ExtractStats,
    *,
    message: int | None = None,
) -> ToolCall:
    """The `ToolCall` for a tool span, completed from the model response that issued it when known, in model
    message `message` (`order.message_indices`; None when the run records no model message: the field keeps
    its default, unset).

    The response supplies what the tool span lacks: a call id (OpenInference records none on tool
    spans), a handoff's tool name, and arguments when the span recorded none or a bare value. Its name for the
    tool wins over the span's other spelling of it (`order.same_tool_name`): the model called the tool by it.
    Its arguments text wins over arguments the span holds after the tool's schema parsed them
    (`ToolRead.args_parsed`): the model wrote that text; so do its arguments already decoded (a JSON object: MLflow's
    GenAI export writes the model's arguments decoded, `_parse_tool_arguments`), as the model gave them.
    """
    args = read.args
    if args.__class__ is str and args[:1] in _JSON_OPENERS and len(args) * 4 <= config.max_args_bytes:
        # `normalize_args`' path for nearly every call, inlined: JSON text that fits whatever its bytes
        # (`cap_text`'s first test), and is not blank as it starts with a bracket.
        try:
            args, state, cut = decode_json(args), "value", False
        except ValueError:
            state, cut = "raw", False
    else:
        args, state, cut = normalize_args(args, config)
    name, call_id = read.name, read.call_id
    if issued is not None:
        call_id = call_id or issued.call_id
        if read.handoff or not name or (issued.name and issued.name != name):
            name = issued.name or name  # the model's name for the tool, as the expectations name it
        if issued.args is not None and (
            state in ("not_captured", "raw") or (read.args_parsed and issued.args.__class__ in _MODEL_ARGS)
        ):
            issued_args, issued_state, issued_cut = normalize_args(issued.args, config)
            if issued_state == "value":
                args, state, cut = issued_args, issued_state, False
            elif state == "not_captured":
                cut = issued_cut  # the response's cut copy is not kept, but it is all there was
    if cut:
        stats.args_truncated += 1
    name = name or span.name
    result = read.result  # `_result`'s answer for text that fits whatever its bytes, without the call
    if not (result.__class__ is str and len(result) * 4 <= config.max_result_bytes):
        result = _result(result, config, stats)
    error, error_type, start_ns, end_ns, span_id = read.error, read.error_type, span.start_ns, span.end_ns, span.span_id
    fields = {
        "name": name,
        "args": args,
        "args_state": state,
        "result": result,
        "call_id": call_id,
        "error": error,
        "error_type": error_type,
        "start_ns": start_ns or None,
        "end_ns": end_ns or None,
        "span_id": span_id,
        "state": None,
        "message_index": 0 if message is None else message,
        "final": read.final,
        "model_only": False,
    }
    # Without validation when it would change nothing: one call is built per tool span, where
    # validating cost about a tenth of the extraction. `args` and `result` are `Any`, kept as given
    # either way; `args_state` is one of its literals on every path here. When every other field is
    # exactly of its declared type, `ToolCall.trusted` sets the state as validation would, taking
    # `fields` (every field, in declaration order) as it is. Anything else (an int for a bool, a
    # subclass of `str`) is validated as before.
    if (
        type(name) is str
        and type(span_id) is str
        and type(error) is bool
        and type(read.final) is bool
        and (call_id is None or type(call_id) is str)
        and (error_type is None or type(error_type) is str)
        and type(start_ns) is int
        and type(end_ns) is int
    ):
        given = _BUILT_FIELDS if message is None else _BUILT_FIELDS_IN_MESSAGE
        return ToolCall.trusted(fields, given)
    given = _BUILT_FIELDS if message is None else _BUILT_FIELDS_IN_MESSAGE
    return ToolCall(**{key: fields[key] for key in given})


_BUILT_FIELDS = frozenset(
    ("name", "args", "args_state", "result", "call_id", "error", "error_type", "start_ns", "end_ns", "span_id", "final")
)
"""The fields `build_call` sets; `state`, `message_index` and `model_only` keep their defaults, unset as validation
leaves them."""
_BUILT_FIELDS_IN_MESSAGE = _BUILT_FIELDS | {"message_index"}
"""The same when the run's model messages are known."""


def _str_or_none(value: object) -> bool:
    return value is None or type(value) is str


def agent_run(fields: dict[str, Any]) -> AgentRun:
    """`AgentRun(**fields)`, without validation when validation would change nothing.

    As for calls (`build_call`): validating a run re-checks each of its calls and copies both
    attribute dicts, which `_finish` has just built for this run alone. Values a convention read
    from the span (agent name, input, output) may be of any type and are checked; anything not
    exactly of its declared type is validated as before.
    """
    start_ns = fields["start_ns"]
    if not (
        _str_or_none(fields["agent_name"])
        and _str_or_none(fields["input"])
        and _str_or_none(fields["output"])
        and _str_or_none(fields["convention"])
        and _str_or_none(fields["parent_span_id"])
        and type(fields["trace_id"]) is str
        and type(fields["span_id"]) is str
        and type(fields["calls"]) is tuple
        and type(fields["attributes"]) is dict
        and type(fields["resource"]) is dict
        and type(fields["inferred"]) is bool
        and type(fields.get("available_tools", ())) is tuple
        and (start_ns is None or type(start_ns) is int)
        and type(fields.get("incomplete", False)) is bool
    ):
        return AgentRun(**fields)
    return AgentRun.trusted(fields)


def capped_attributes(attrs: Mapping[str, Any], max_bytes: int) -> dict[str, Any]:
    """A copy of a run span's attributes with long strings cut (one copy per run, not per span)."""
    out = dict(attrs)
    for key in [key for key, value in out.items() if isinstance(value, str) and len(value) * 4 > max_bytes]:
        out[key] = cap_text(out[key], max_bytes)[0]  # may fit after all: `cap_text` measures the bytes
    return out


def capped_info(info: RunInfo, max_bytes: int) -> RunInfo:
    """The run's input and output text cut to `max_bytes` (the same `info` when neither is too long)."""
    text_in, cut_in = (None, False) if info.input is None else cap_text(info.input, max_bytes)
    text_out, cut_out = (None, False) if info.output is None else cap_text(info.output, max_bytes)
    if not (cut_in or cut_out):
        return info
    return dataclasses.replace(info, input=text_in, output=text_out)
