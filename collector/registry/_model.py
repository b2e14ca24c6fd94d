"""An expectation: which runs it applies to (`match`) and how to score them (`scorers`).

Expectations are frozen values. The store owns `version`; everything else is what the author wrote,
kept in a form that serializes back to the same document (`to_dict`), so a file, the Python API and
the gRPC service all round-trip the same shape. Names, labels, selectors and scorers are bounded in
size (`limits.py`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_serializer, model_validator

from toolscore.collector.registry._conditions import Condition
from toolscore.collector.registry._limits import (
    MAX_LABEL_KEY_CHARS,
    MAX_LABEL_VALUE_CHARS,
    MAX_LABELS,
    MAX_NAME_CHARS,
    MAX_SCORERS,
    MAX_SELECTOR_KEY_CHARS,
    MAX_SELECTORS,
    at_most,
    chars,
    is_stored,
    key_chars,
)
from toolscore.scorers._base import ScorerBase

__all__ = ["NAME_PATTERN", "Expectation", "ExpectationScorer", "MatchSpec"]

NAME_PATTERN = r"^[A-Za-z0-9_.\-]+$"
"""Expectation names: letters, digits, `_`, `.` and `-` (they appear in metric attributes and URLs)."""

_Selectors = Annotated[
    dict[Annotated[str, key_chars(MAX_SELECTOR_KEY_CHARS)], Condition], at_most(MAX_SELECTORS, "selectors")
]
_Labels = Annotated[
    dict[Annotated[str, key_chars(MAX_LABEL_KEY_CHARS)], Annotated[str, chars(MAX_LABEL_VALUE_CHARS)]],
    at_most(MAX_LABELS, "labels"),
]


class MatchSpec(BaseModel):
    """Which runs an expectation applies to. Every selector given must hold; none given matches nothing.

    Attribute keys are looked up in the run span's attributes; a key that is absent there is looked up
    again as `baggage.<key>`, because baggage span processors copy entries either under the bare key
    (opentelemetry-python-contrib's `BaggageSpanProcessor`) or under a `baggage.` prefix.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: Condition | None = Field(default=None, description="Condition on the run's agent name.")
    service: Condition | None = Field(default=None, description="Condition on the resource's `service.name`.")
    resource: _Selectors = Field(default_factory=dict, description="Conditions on resource attributes.")
    attributes: _Selectors = Field(
        default_factory=dict, description="Conditions on run span attributes (and baggage copied onto it)."
    )
    input: Condition | None = Field(default=None, description="Condition on the user's input text.")

    def selectors(self) -> Iterator[tuple[tuple[str, ...], Condition]]:
        """Each selector as (field id, condition); the field id is what `run_value` reads."""
        if self.agent is not None:
            yield ("agent",), self.agent
        if self.service is not None:
            yield ("resource", "service.name"), self.service
        for key, cond in self.resource.items():
            yield ("resource", key), cond
        for key, cond in self.attributes.items():
            yield ("attributes", key), cond
        if self.input is not None:
            yield ("input",), self.input

    @property
    def empty(self) -> bool:
        return next(self.selectors(), None) is None

    @model_serializer
    def _serialize(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in ("agent", "service", "resource", "attributes", "input"):
            value = getattr(self, key)
            if value:
                out[key] = (
                    {k: v.model_dump() for k, v in value.items()} if isinstance(value, dict) else value.model_dump()
                )
        return out


class ExpectationScorer(BaseModel):
    """A scorer spec exactly as `toolscore score` takes it, plus `sample_rate`.

    `spec` keeps the document as written (without `sample_rate`) for round-tripping; `scorer` is the
    parsed, ready scorer. `sample_rate` bounds cost (LLM judges): the choice is made from the trace id,
    so every replica scores the same runs.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    spec: dict[str, Any] = Field(description="The scorer spec as written: `{type: ..., params}`.")
    sample_rate: float = Field(default=1.0, ge=0.0, le=1.0, description="Share of runs scored, 0-1, by trace id.")
    scorer: ScorerBase = Field(exclude=True, description="The parsed scorer.")

    @model_validator(mode="before")
    @classmethod
    def _parse(cls, data: Any, info: ValidationInfo) -> Any:
        if isinstance(data, ExpectationScorer) or (isinstance(data, dict) and "spec" in data and "scorer" in data):
            return data
        if not isinstance(data, Mapping):
            raise ValueError("a scorer is a mapping `{type: ..., params}`")
        spec = dict(data)
        sample_rate = spec.pop("sample_rate", 1.0)
        # the scorer union pulls in litellm: import on first use
        from toolscore.scorers._spec import check_threshold, parse_scorer

        scorer = parse_scorer(spec)
        if not is_stored(info):
            check_threshold(scorer.threshold)
        return {"spec": spec, "sample_rate": sample_rate, "scorer": scorer}

    def __eq__(self, other: object) -> bool:
        """Equal documents make equal scorers (parsed scorers may hold closures that never compare equal)."""
        if not isinstance(other, ExpectationScorer):
            return NotImplemented
        return (self.spec, self.sample_rate) == (other.spec, other.sample_rate)

    __hash__ = None  # type: ignore[assignment]

    @property
    def name(self) -> str:
        """The name the scorer reports its scores under."""
        return self.scorer.scorer_name

    @model_serializer
    def _serialize(self) -> dict[str, Any]:
        return {**self.spec, "sample_rate": self.sample_rate} if self.sample_rate != 1.0 else dict(self.spec)


class Expectation(BaseModel):
    """What a run that matches `match` should have done, as scored by `scorers`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Annotated[str, chars(MAX_NAME_CHARS)] = Field(
        min_length=1, pattern=NAME_PATTERN, description="Unique name; scores carry it."
    )
    version: int = Field(default=0, ge=0, description="Set by the store; increases on every change.")
    enabled: bool = Field(default=True, description="A disabled expectation matches no run.")
    labels: _Labels = Field(default_factory=dict, description="Free-form: owner, severity, ...")
    match: MatchSpec = Field(default_factory=MatchSpec, description="Which runs it applies to.")
    scorers: Annotated[list[ExpectationScorer], at_most(MAX_SCORERS, "scorers")] = Field(
        default_factory=list, validate_default=True, description="How matching runs are scored; at least one."
    )

    @functools.cached_property
    def scorer_names(self) -> tuple[str, ...]:
        """The names its scorers report under, in order: read for every scored run (`emit`), so computed once."""
        return tuple(scorer.name for scorer in self.scorers)

    @field_validator("scorers")
    @classmethod
    def _scorers_to_write(cls, scorers: list[ExpectationScorer], info: ValidationInfo) -> list[ExpectationScorer]:
        """At least one, and no two reporting under one name. An expectation without scorers matches runs
        and scores none of them, which no report shows as a problem. Two scorers reporting under one name
        give results no reader can tell apart: one event name, one metric series, one run-span key. A
        document read back from a store is let through, so that one written before these checks still
        matches; only writing it again is refused."""
        if is_stored(info):
            return scorers
        of = f"expectation {info.data['name']!r}" if "name" in info.data else "the expectation"
        if not scorers:
            raise ValueError(
                f"{of} has no scorers, so it would score none of the runs it matches; give at least one under `scorers`"
            )
        first: dict[str, int] = {}
        for i, scorer in enumerate(scorers):
            j = first.setdefault(scorer.name, i)
            if j != i:
                unnamed = "" if scorer.spec.get("name") else " (a scorer without `name` reports under its type)"
                raise ValueError(
                    f"{of} has two scorers reporting their scores as {scorer.name!r}, scorers[{j}] and "
                    f"scorers[{i}]{unnamed}; give one of them a distinct `name`"
                )
        return scorers

    @field_validator("labels", mode="before")
    @classmethod
    def _labels_as_text(cls, value: Any) -> Any:
        """YAML reads `severity: 1` or `paging: yes` as numbers and booleans; labels are text."""
        if isinstance(value, Mapping):
            return {k: v if isinstance(v, str) or v is None else _label_text(v) for k, v in value.items()}
        return value

    def to_dict(self, *, with_version: bool = True) -> dict[str, Any]:
        """The document form, as a file would hold it (`version` only when asked)."""
        out = self.model_dump()
        if not with_version:
            out.pop("version")
        return out

    def same_content(self, other: Expectation) -> bool:
        """True when the two differ at most in `version`."""
        return self.to_dict(with_version=False) == other.to_dict(with_version=False)


def _label_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
