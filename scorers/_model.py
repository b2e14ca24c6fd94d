"""The run model every stage shares: tool calls, agent runs and scores.

Values are frozen so a run can be handed to several scorers (and threads) without copies.
Inputs accept the spellings of the ecosystem (`toolName`, `tool`, `input`, `arguments`,
`toolCallId`, ...) so that records from Mastra, Evalite, tpmjs or OpenAI can be scored as they are.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolscore.scorers._accel import compiled

__all__ = [
    "AgentRun",
    "ArgsState",
    "JsonValue",
    "Label",
    "Score",
    "ScoreFailure",
    "ScoreResult",
    "ToolCall",
    "ToolSpec",
]

JsonValue = Any
"""A decoded JSON value: dict, list, str, int, float, bool or None."""

ArgsState = Literal["value", "absent", "raw", "not_captured"]
"""Where a call's arguments stand.

- ``value``: ``args`` holds a decoded JSON value (``None`` means the source held ``null``).
- ``absent``: the call was given no arguments at all (JavaScript ``undefined``); the peers treat
  this differently from ``null`` and from ``{}``.
- ``raw``: the source held a string that is not valid JSON; ``args`` keeps that text as is.
- ``not_captured``: the instrumentation did not record arguments (content capture is opt-in in most
  frameworks), so the arguments are unknown rather than empty. Peer-compatible scorers treat this
  like ``absent``.
"""

Label = Literal["pass", "fail"]

_NAME_KEYS = ("name", "toolName", "tool", "tool_name")
_ARGS_KEYS = ("args", "input", "arguments")
_ID_KEYS = ("call_id", "id", "toolCallId", "tool_call_id")


def _first_key(data: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        if key in data:
            return key
    return None


def parse_args(value: JsonValue) -> tuple[JsonValue, ArgsState]:
    """Decode arguments as the sources spell them: JSON text is parsed, anything else kept."""
    if isinstance(value, str):
        try:
            return json.loads(value), "value"
        except ValueError:
            return value, "raw"
    return value, "value"


_M = TypeVar("_M", bound=BaseModel)


# The slot descriptors of `BaseModel`, called directly: a frozen model's `__setattr__` refuses, and
# `object.__setattr__` looks each name up again on every call (a third of an unvalidated build).
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_new = object.__new__


def python_unvalidated(cls: type[_M], values: dict[str, Any], fields_set: set[str]) -> _M:
    """An instance with its state set as validation sets it, from values already of their declared types.

    For the hot paths that build one model per call or per evaluation from values they produced
    themselves, where validating would change nothing and costs a large share of the work. The
    `trusted` constructors below are the only callers; tests check they equal validated instances.
    `fields_set` must be the instance's own set: `model_copy(update=...)` adds to it in place.
    """
    obj = _new(cls)
    _set_dict(obj, values)
    _set_fields_set(obj, fields_set)
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj


_unvalidated: Callable[[type[_M], dict[str, Any], set[str]], _M] = (
    python_unvalidated if compiled is None else compiled.unvalidated
)
"""`python_unvalidated`, compiled where the install built `_equal.c` (one C call instead of five Python ones:
a built-in scorer makes one `Score` per evaluation, extraction one `ToolCall` per call; `tests/test_equal_accel.py`)."""


class ToolCall(BaseModel):
    """One tool invocation, as the model issued it."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    name: str = Field(description="The tool's name.")
    args: JsonValue = Field(default=None, description="Decoded arguments; see `args_state`.")
    args_state: ArgsState = Field(default="absent", description="Whether `args` holds a value, see `ArgsState`.")
    result: JsonValue = Field(default=None, description="What the tool returned, when recorded.")
    call_id: str | None = Field(default=None, description="The model's tool-call id, when recorded.")
    error: bool = Field(default=False, description="True when the tool call failed.")
    error_type: str | None = Field(default=None, description="The error's type or class, when the call failed.")
    start_ns: int | None = Field(default=None, description="Start time, ns since the epoch.")
    end_ns: int | None = Field(default=None, description="End time, ns since the epoch.")
    span_id: str | None = Field(default=None, description="The span that recorded the call (16 hex digits).")
    state: str | None = Field(
        default=None, description="Mastra-style invocation state (`call`, `result`, ...); None means `result`."
    )
    message_index: int = Field(default=0, description="Index of the assistant message holding the call (Mastra).")
    final: bool = Field(
        default=False,
        description="The framework's built-in tool that ends a run (smolagents `final_answer`, DSPy `finish`): a "
        "real call, kept in the sequence; a scorer's `ignore_tools` can leave it out.",
    )
    model_only: bool = Field(
        default=False,
        description="Seen only in the model's output: the model issued the call and no tool span recorded it "
        "(no `span_id`, `result`, or times).",
    )

    @model_validator(mode="before")
    @classmethod
    def _accept_spellings(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if "args_state" in data and "name" in data:
            return data
        out = dict(data)
        name_key = _first_key(data, _NAME_KEYS)
        if name_key is not None and name_key != "name":
            out["name"] = out.pop(name_key)
        args_key = _first_key(data, _ARGS_KEYS)
        if args_key is None:
            out["args_state"] = "absent"
        else:
            out["args"], out["args_state"] = parse_args(out.pop(args_key))
        id_key = _first_key(data, _ID_KEYS)
        if id_key is not None and id_key != "call_id":
            out["call_id"] = out.pop(id_key)
        if "message" in out and "message_index" not in out:
            out["message_index"] = out.pop("message")
        return out

    @property
    def has_args(self) -> bool:
        """True when the call carried arguments (possibly ``null``), as opposed to none at all."""
        return self.args_state in ("value", "raw")

    @classmethod
    def trusted(cls, fields: dict[str, Any], given: AbstractSet[str]) -> ToolCall:
        """A call from every field, in declaration order, each exactly of its declared type.

        `fields` becomes the call's state as is; `given` names the fields validation would have been
        passed, which is what `model_fields_set` records. The caller checks the types (see
        `toolscore.collector.extract.values.build_call`).
        """
        return _unvalidated(cls, fields, set(given))

    def to_json(self) -> dict[str, Any]:
        """The neutral JSON form (`name`, `args` only when present, `call_id`, `error`; `model_only` when set)."""
        out: dict[str, Any] = {"name": self.name}
        if self.has_args:
            out["args"] = self.args
        if self.args_state == "raw":
            out["args_raw"] = True
        if self.args_state == "not_captured":
            out["args_captured"] = False
        out["call_id"] = self.call_id
        out["error"] = self.error
        if self.error_type is not None:
            out["error_type"] = self.error_type
        if self.final:
            out["final"] = True
        if self.model_only:
            out["model_only"] = True
        return out


class ToolSpec(BaseModel):
    """A tool the model was offered, as the trace describes it (see `AgentRun.available_tools`)."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="The tool's name, as the model calls it.")
    description: str | None = Field(default=None, description="What the tool does, as the model was told.")
    parameters: dict[str, Any] | None = Field(
        default=None, description="JSON schema of the tool's arguments, when recorded (and within the size cap)."
    )

    @classmethod
    def trusted(cls, name: str, description: str | None, parameters: dict[str, Any] | None) -> ToolSpec:
        """A spec from values already of the declared types (extraction checks them), without validation."""
        values = {"name": name, "description": description, "parameters": parameters}
        return _unvalidated(cls, values, set(_TOOL_SPEC_FIELDS))


_TOOL_SPEC_FIELDS = frozenset(("name", "description", "parameters"))


class AgentRun(BaseModel):
    """One agent invocation and the tool calls it made, in the order the model issued them."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    trace_id: str = Field(default="", description="Trace id (32 hex digits); empty for runs not from a trace.")
    span_id: str = Field(default="", description="Id of the span that represents the run (16 hex digits).")
    agent_name: str | None = Field(default=None, description="The agent's name, when recorded.")
    input: str | None = Field(default=None, description="The user's request text, when known.")
    output: str | None = Field(default=None, description="The assistant's final text, when known.")
    calls: tuple[ToolCall, ...] = Field(default=(), description="Tool calls in the order the model issued them.")
    attributes: dict[str, Any] = Field(default_factory=dict, description="Attributes of the run span.")
    resource: dict[str, Any] = Field(
        default_factory=dict, description="Resource attributes of the service that recorded the run span."
    )
    convention: str | None = Field(default=None, description="The span convention the run was read from.")
    inferred: bool = Field(
        default=False, description="True when no run span was recognised and the trace root stands in."
    )
    incomplete: bool = Field(
        default=False,
        description="True when some of the run's spans are known to be missing from its score (a span that "
        "arrives after the run was scored does not set it).",
    )
    parent_span_id: str | None = Field(default=None, description="Run span of the enclosing run, for nested agents.")
    start_ns: int | None = Field(default=None, description="Start time of the run span, ns since the epoch.")
    output_messages: int | None = Field(
        default=None, description="How many assistant messages the run produced, when known (Mastra's metadata)."
    )
    available_tools: tuple[ToolSpec, ...] = Field(
        default=(),
        description="The tools the model was offered in this run, in the order the trace first lists them "
        "(read from the run's spans; empty when the trace does not record them).",
    )
    content: Literal["full", "names_only"] = Field(
        default="full",
        description="What toolscore's privacy settings kept of the run's content: `names_only` when every "
        "argument value, result and text was dropped (scorers that need values then say so).",
    )

    @classmethod
    def trusted(cls, fields: dict[str, Any]) -> AgentRun:
        """A run from canonical field names whose values are exactly of their declared types.

        Extraction builds one per run from values it made itself, where validating (which also
        re-checks every call and copies both attribute dicts) costs more than the rest of the run's
        assembly. Unset fields take their defaults; the caller checks the types (see
        `toolscore.collector.extract.values.agent_run`), and owns `attributes` and `resource`.
        """
        return _unvalidated(cls, {**_AGENT_RUN_SLOTS, "attributes": {}, "resource": {}, **fields}, set(fields))

    @property
    def run_id(self) -> str:
        """Stable identity of the run: trace id and run span id."""
        return f"{self.trace_id}:{self.span_id}"

    @property
    def tool_names(self) -> list[str]:
        return [call.name for call in self.calls]


_AGENT_RUN_SLOTS: dict[str, Any] = {
    name: field.get_default(call_default_factory=True) for name, field in AgentRun.model_fields.items()
}
"""Every field in declaration order at its default (`trusted` gives each run its own empty dicts)."""


class Score(BaseModel):
    """A scorer's verdict; maps one-to-one onto the OTel `gen_ai.evaluation.result` event."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="The scorer's name (`gen_ai.evaluation.name`).")
    value: float = Field(description="The score (`gen_ai.evaluation.score.value`), 0..1 for the built-in scorers.")
    label: Label = Field(description="`pass` when value >= threshold (`gen_ai.evaluation.score.label`).")
    explanation: str = Field(default="", description="Enough for a reader to recompute the value.")
    details: dict[str, Any] = Field(default_factory=dict, description="Peer-compatible metadata.")

    @classmethod
    def trusted(cls, name: str, value: float, label: Label, explanation: str, details: dict[str, Any]) -> Score:
        """A score from values already of the declared types, without validation or copies.

        Built-in scorers produce one per evaluation, where validating (and copying `details`) is
        a fifth of the cost; this sets the instance state exactly as `model_construct` would, at
        a third of its cost. `tests/test_model.py` checks it equals the validated construction.
        """
        values = {"name": name, "value": value, "label": label, "explanation": explanation, "details": details}
        return _unvalidated(cls, values, set(_SCORE_FIELDS))

    @property
    def ok(self) -> bool:
        return True


_SCORE_FIELDS = frozenset(Score.model_fields)


class ScoreFailure(BaseModel):
    """A scorer that could not score: kept apart from scores so no magic number leaks into metrics."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="The scorer's name.")
    error_type: str = Field(description="A short machine-readable reason (`error.type`).")
    message: str = Field(default="", description="What went wrong, for a person.")

    @property
    def ok(self) -> bool:
        return False


ScoreResult = Score | ScoreFailure
