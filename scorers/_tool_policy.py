"""`tool_policy`: did the run keep to the rules its tools come with? No reference run needed.

Production runs have no expected trajectory, but they do have rules: tools an agent may never call,
tools it must call, how often, and in which order ("confirm before delete"). Each rule is checked at
every call, so the score says how much of the run kept to the policy and the details say where not.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr

from toolscore.scorers._model import AgentRun, Score, ToolCall
from toolscore.scorers._tool_names import NamePatterns
from toolscore.scorers._violations import RuleScorer, Violation, calls_explanation, violation

__all__ = ["ToolPolicy"]


class ToolPolicy(RuleScorer):
    """Share of calls that break no rule; a missing `required` tool scores the run 0.

    Tool names are exact or `fnmatch` globs (`delete_*`), matched case-sensitively. Rules, each at the
    call that breaks it (`index`, 0-based):
    - `denied`: the call's name matches a `denied` pattern. Denied beats allowed.
    - `not_allowed`: `allowed` is given and the name matches none of it.
    - `max_calls`: the call is the (n+1)-th or later call matching a `max_calls` key whose cap is n (a
      key's count is every call its pattern matches, so `"search_*": 3` caps them together).
    - `max_total_calls`: the call is the (n+1)-th or later call of the run.
    - `before` `[a, b]`: a call matching `b` with no earlier call matching `a` ("confirm before delete").
    - `never_after` `[a, b]`: a call matching `b` after some call matching `a`.
    - `required`: no call matches a `required` pattern (`index` null): the run scores 0.

    Score: calls breaking no rule / calls. A run with no calls scores 1 unless a tool is required (0).
    A call breaking several rules counts once and is listed once per rule.
    """

    type: Literal["tool_policy"] = "tool_policy"
    allowed: list[str] | None = Field(
        default=None, description="Tools the agent may call (names or globs). Default: none (every tool allowed)."
    )
    denied: list[str] = Field(
        default_factory=list, description="Tools the agent must never call; beats `allowed`. Default: []."
    )
    required: list[str] = Field(
        default_factory=list, description="Tools of which the run must make at least one call. Default: []."
    )
    max_calls: dict[str, Annotated[int, Field(ge=0)]] = Field(
        default_factory=dict, description="Per tool name or glob, the most calls it may take. Default: {}."
    )
    max_total_calls: int | None = Field(
        default=None, ge=0, description="The most calls the run may make in all. Default: none (no cap)."
    )
    before: list[tuple[str, str]] = Field(
        default_factory=list, description="`[a, b]` pairs: every call of `b` needs an earlier call of `a`. Default: []."
    )
    never_after: list[tuple[str, str]] = Field(
        default_factory=list, description="`[a, b]` pairs: no call of `b` after a call of `a`. Default: []."
    )

    _compiled: _Compiled = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        self._compiled = _Compiled(self)

    def _score(self, run: AgentRun) -> Score:
        compiled: _Compiled = self.__pydantic_private__["_compiled"]  # type: ignore[index]
        calls = run.calls
        found = compiled.call_violations(calls)
        missing = compiled.missing_required(calls)
        broken = len({v["index"] for v in found})
        found += missing
        n = len(calls)
        value = 0.0 if missing else (n - broken) / n if n else 1.0
        details = {"calls": n, "broken_calls": broken, "violations": found}
        explanation = calls_explanation(n - broken, n, "break no rule", found, value)
        if missing:  # the share of good calls is not the score then: say why it is 0
            explanation = f"required tool never called, so 0: {explanation}"
        return self._result(value, explanation, details)


class _Compiled:
    """The policy's patterns, compiled once (derived data: any two compare equal)."""

    __slots__ = ("allowed", "before", "caps", "denied", "never_after", "required", "total")

    def __init__(self, policy: ToolPolicy) -> None:
        self.allowed = None if policy.allowed is None else NamePatterns(policy.allowed)
        self.denied = NamePatterns(policy.denied)
        self.required = [(p, NamePatterns([p])) for p in policy.required]
        self.caps = [(key, cap, NamePatterns([key])) for key, cap in policy.max_calls.items()]
        self.total = policy.max_total_calls
        self.before = [(pair, NamePatterns([pair[0]]), NamePatterns([pair[1]])) for pair in policy.before]
        self.never_after = [(pair, NamePatterns([pair[0]]), NamePatterns([pair[1]])) for pair in policy.never_after]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Compiled)

    __hash__ = None  # type: ignore[assignment]

    def call_violations(self, calls: tuple[ToolCall, ...]) -> list[Violation]:
        found: list[Violation] = []
        counts = [0] * len(self.caps)
        seen_before = [False] * len(self.before)
        seen_after = [False] * len(self.never_after)
        for i, call in enumerate(calls):
            name = call.name
            denied = self.denied.first(name)
            if denied is not None:
                found.append(violation(i, name, "denied", f"denied by {denied!r}"))
            elif self.allowed is not None and not self.allowed.matches(name):
                found.append(violation(i, name, "not_allowed", f"not in allowed {list(self.allowed.patterns)}"))
            for k, (key, cap, pattern) in enumerate(self.caps):
                if pattern.matches(name):
                    counts[k] += 1
                    if counts[k] > cap:
                        found.append(violation(i, name, "max_calls", f"call {counts[k]} of {key!r}, max {cap}"))
            if self.total is not None and i >= self.total:
                found.append(violation(i, name, "max_total_calls", f"call {i + 1} of the run, max {self.total}"))
            for k, ((a, b), first, then) in enumerate(self.before):
                if then.matches(name) and not seen_before[k]:
                    found.append(violation(i, name, "before", f"{b!r} called before any {a!r}", pair=[a, b]))
                if first.matches(name):
                    seen_before[k] = True
            for k, ((a, b), first, then) in enumerate(self.never_after):
                if then.matches(name) and seen_after[k]:
                    found.append(violation(i, name, "never_after", f"{b!r} called after {a!r}", pair=[a, b]))
                if first.matches(name):
                    seen_after[k] = True
        return found

    def missing_required(self, calls: tuple[ToolCall, ...]) -> list[Violation]:
        return [
            violation(None, pattern, "required", f"no call of required {pattern!r}")
            for pattern, names in self.required
            if not any(names.matches(call.name) for call in calls)
        ]
