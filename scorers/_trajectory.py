"""Did the agent make the expected calls, with the expected arguments? Evalite's `toolCallAccuracy`,
plus agentevals' trajectory match modes.

`exact` and `flexible` reproduce `toolCallAccuracy` from `evalite` 1.0.0-beta.16 to the last
double, quirks included. `strict`, `unordered`, `subset` and `superset` are agentevals'
`create_trajectory_match_evaluator` modes over a flat call list, scored 1.0 or 0.0.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, PrivateAttr

from toolscore.scorers._base import ScorerBase
from toolscore.scorers._matching import ArgsMatch, ExpectedCall, resolve_args_match
from toolscore.scorers._model import AgentRun, Score, ToolCall
from toolscore.scorers._pairing import Pairing
from toolscore.scorers._trajectory_evalite import (
    ExactPlan,
    PairTest,
    Taken,
    Verdict,
    args_key,
    exact_plan,
    exact_score,
    key_groups,
    name_only_pairs,
    peer_exact_args_test,
    peer_exact_test,
    peer_flexible_test,
    pop_pairing,
    rule_test,
    score_exact,
    score_flexible,
)
from toolscore.scorers._trajectory_order import order_mode, rule_pairing, strict_message_pairs

__all__ = ["Trajectory", "TrajectoryWeights"]

_PEER_MODES = ("exact", "flexible")
_POSITIONAL_MODES = ("exact", "strict")


def _weight(default: float, name: str, evalite: str, description: str) -> Any:
    return Field(
        default=default,
        allow_inf_nan=False,
        validation_alias=AliasChoices(name, evalite),
        description=f"{description} Default: {default}.",
    )


class TrajectoryWeights(BaseModel):
    """Evalite's weights. `None` counts as 0, as JavaScript arithmetic treats `null`.

    Any finite number is accepted (Evalite validates nothing); the score is clamped to [0, 1], so
    `name_only: 2` can reach 1 and negative penalties raise the score. Evalite's spelling
    (`nameOnly`, `extraPenalty`, `wrongPenalty`) is accepted too.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    exact: float | None = _weight(1.0, "exact", "exact", "Never used: an exact match is always worth 1, as in Evalite.")
    name_only: float | None = _weight(0.5, "name_only", "nameOnly", "Credit for a right name with wrong arguments.")
    extra_penalty: float | None = _weight(0.25, "extra_penalty", "extraPenalty", "Per extra call, flexible mode only.")
    wrong_penalty: float | None = _weight(0.25, "wrong_penalty", "wrongPenalty", "Per wrong call, exact mode only.")


class Trajectory(ScorerBase):
    """Scores the run's calls against `expected`, in one of six modes.

    **exact** (Evalite): pairs `actual[i]` with `expected[i]` for every *actual* call. A pair is
    exact (names equal, arguments match), name-only (names equal) or wrong; unpaired actual calls
    are wrong, and are counted once more as extras (so each extra counts twice). Expected calls past
    the end of `actual` count nowhere but in the denominator.
    `score = clamp01((exact + name_only*w.name_only) / d - w.wrong_penalty * (wrong / d))`,
    `d = max(len(expected), 1)`.

    **flexible** (Evalite): order ignored. Expected calls are grouped by name and arguments; each
    actual call takes the group's *last* remaining call; leftovers are name-only while expected
    calls of that name remain unmatched, else extras.
    `score = clamp01((exact + name_only*w.name_only) / d - w.extra_penalty * (extras / d))`.
    `details.missing_tool_calls` still lists the expected calls that were name-only matched.

    Arguments in exact/flexible without a rule: Evalite's own comparisons. Exact mode: an expected
    call with no `args` matches any arguments; an actual call with none matches only such an
    expected call; otherwise JSON equality. Flexible mode compares the serialized arguments, so
    "no args" matches only "no args" (an expected `{name: a}` is exact for `a(q=1)` in exact mode,
    name-only in flexible mode), and `null` differs from no args. Not-captured arguments read as
    no args.

    **strict**: the same calls in the same order. **unordered**: the same calls in any order
    (multisets): `subset` and `superset` both hold. **subset**: every actual call is one of the expected
    calls; the agent did nothing beyond what was expected, and may have done less. **superset**: every
    expected call is among the actual calls; the agent may have done more. Each actual call stands for at
    most one expected call. Score 1.0 or 0.0; weights are unused. Arguments: the call's rule, default
    `ArgsMatch()`. Directions as in agentevals' `create_trajectory_match_evaluator(trajectory_match_mode=...)`:
    `subset` = the reference is a superset of the output; `superset` = the output is a superset of
    the reference.

    `pairing` (these four modes only): `greedy` (the default) pairs as agentevals does, each call taking the
    first unused call of the other side that fits, so with rules that are not plain equality (containment,
    matchers, an expected call without `args`) a pairing that exists can be missed and the order of the
    calls can change the verdict, exactly as in agentevals. `optimal` pairs by a maximum bipartite matching:
    repeats and order never change the result. Under the exact rule with stated arguments both agree.
    Differences from agentevals (docs/scorers.md, "Deviations from the peers"): equality is JSON equality
    (agentevals uses Python's `==`, so `True == 1`); `strict` compares the messages that hold calls, not the
    others (user turns, text-only replies); `unordered` with a containment rule checks it in one direction
    (agentevals checks its `subset` pass with the sides swapped, so it demands equal arguments).

    Messages in `strict`: when every expected and every actual call states its `message` index
    (`ToolCall.message_index`, given in a spec or a request; not the default), neighbours of one index form one
    model message, and messages compare in order with the calls inside one message in any order (parallel
    calls), as agentevals' strict mode does. Otherwise calls compare one by one: a default index says nothing
    about messages. Runs read from traces state the index when the trace records the run's model spans.

    Empty inputs (`m` expected calls, `n` actual calls):

    | mode | m=0, n=0 | m=0, n>0 | m>0, n=0 |
    |---|---|---|---|
    | exact, flexible | 1 (`note`) | 0 (`warning`, `output_count`) | 0 (`warning`, `reference_count`) |
    | strict, unordered | 1 | 0 | 0 |
    | subset | 1 | 0 | 1 |
    | superset | 1 | 1 | 0 |

    Argument rules (`match` on an expected call, then `tool_args[name]`, then `args_match`) are
    opt-in: with none given, exact and flexible scores equal Evalite's. With a rule, exact mode
    uses it for that pair, and flexible mode pairs calls of the same name by a maximum matching
    under the rules (Evalite's serialized key for calls without one), then proceeds as above.

    Parameters are digested once at construction; make a new scorer rather than
    `model_copy(update=...)`, which pydantic does without re-running that step.
    """

    type: Literal["trajectory"] = "trajectory"
    keys_only_note: ClassVar[bool] = True
    expected: list[ExpectedCall] = Field(
        default_factory=list, description="The calls the agent should make, in order. Default: [] (no calls)."
    )
    mode: Literal["exact", "flexible", "strict", "unordered", "subset", "superset"] = Field(
        default="exact", description="How calls are compared, see the class docstring. Default: exact."
    )
    weights: TrajectoryWeights = Field(
        default_factory=TrajectoryWeights, description="Evalite's weights (exact and flexible modes only)."
    )
    args_match: ArgsMatch | None = Field(
        default=None, description="Argument rule for every expected call. Default: the mode's peer comparison."
    )
    tool_args: dict[str, ArgsMatch] = Field(
        default_factory=dict, description="Argument rule per tool name; overrides `args_match`."
    )
    pairing: Pairing = Field(
        default="greedy",
        description="How strict (within a message), unordered, subset and superset pair calls: `greedy` "
        "(agentevals) or `optimal` (a maximum matching). Default: greedy.",
    )

    _plan: _Plan = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        """Everything that depends only on the parameters, so scoring a run does no set-up."""
        super().model_post_init(context)
        rules = [resolve_args_match(call, self.tool_args, self.args_match) for call in self.expected]
        peer_test = peer_flexible_test if self.mode == "flexible" else peer_exact_test
        default = None if self.mode in _PEER_MODES else ArgsMatch()
        tests = []
        for call, rule in zip(self.expected, rules, strict=True):
            chosen = rule or default
            tests.append(peer_test(call) if chosen is None else rule_test(call, chosen))
        plan = _Plan(self, tuple(tests), ruled=any(rule is not None for rule in rules))
        if self.mode == "exact" and self.expected and not plan.ruled:
            args_tests = [peer_exact_args_test(call) for call in self.expected]
            tests_of_args = tuple(test for test in args_tests if test is not None)
            if len(tests_of_args) == len(args_tests):
                plan.exact = exact_plan(
                    plan.names,
                    tests_of_args,
                    plan.weights,
                    plan.memo,
                    scorer_name=self._scorer_name,
                    threshold=self._threshold,
                )
        self._plan = plan

    def _score(self, run: AgentRun) -> Score:
        plan: _Plan = self.__pydantic_private__["_plan"]  # type: ignore[index]  # skips pydantic's __getattr__
        if plan.exact is not None and run.calls:  # exact mode's common case, in one step
            return exact_score(plan.exact, run.calls)
        return self._result(*plan.verdict(run.calls))

    def pairs(self, actual: tuple[ToolCall, ...]) -> dict[int, tuple[int, bool]]:
        """Expected index -> (actual index, counted as a match), as this mode pairs the calls; an expected
        call paired with nothing has no entry. Public so a diff shows the pairs the score counted.

        exact and strict pair call i with expected call i, whatever the names; flexible pairs exact
        matches, then each name-only match with a missing expected call of its name; unordered, subset
        and superset pair matches only.
        """
        plan: _Plan = self.__pydantic_private__["_plan"]  # type: ignore[index]
        return plan.pairs(actual)


class _Plan:
    """A scorer's parameters digested for scoring: names, compiled argument tests, groupings.

    Derived data only: any two plans compare equal, so scorer equality is decided by the fields.
    """

    __slots__ = (
        "by_name",
        "exact",
        "expected",
        "groups",
        "memo",
        "mode",
        "names",
        "pairing",
        "ruled",
        "tests",
        "weights",
    )

    def __init__(self, scorer: Trajectory, tests: tuple[PairTest, ...], *, ruled: bool) -> None:
        self.mode = scorer.mode
        self.pairing = scorer.pairing
        self.expected = tuple(scorer.expected)
        self.tests = tests
        self.ruled = ruled
        self.names = tuple(call.name for call in self.expected)
        self.groups = key_groups([(call.name, args_key(call)) for call in self.expected])
        by_name: dict[str, list[int]] = {}
        for j, name in enumerate(self.names):
            by_name.setdefault(name, []).append(j)
        self.by_name = {name: tuple(indices) for name, indices in by_name.items()}
        w = scorer.weights
        penalty = w.wrong_penalty if self.mode == "exact" else w.extra_penalty
        self.weights = (w.name_only or 0.0, penalty or 0.0)  # JavaScript: null * x == 0
        self.memo: dict[Any, tuple[float, str]] = {}
        self.exact: ExactPlan | None = None
        """Exact mode with expected calls and no rules, when every expected call's test reads `args` alone."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Plan)

    __hash__ = None  # type: ignore[assignment]

    def verdict(self, actual: tuple[ToolCall, ...]) -> Verdict:
        mode = self.mode
        if mode not in _PEER_MODES:
            return order_mode(mode, self.expected, self.by_name, self.tests, actual, pairing=self.pairing)
        if not actual or not self.expected:
            return _empty_inputs(len(self.expected), len(actual))
        if mode == "exact":
            return score_exact(self.names, self.tests, actual, self.weights, self.memo)
        name_only_w, extra_w = self.weights
        return score_flexible(self.expected, actual, name_only_w, extra_w, self._taken(actual))

    def _taken(self, actual: tuple[ToolCall, ...]) -> Taken:
        """Flexible mode's exact matches: Evalite's own pairing when no rule applies, else a maximum matching."""
        if not self.ruled:
            return pop_pairing(self.groups, actual)
        return rule_pairing(self.by_name, self.tests, actual, len(self.expected))

    def pairs(self, actual: tuple[ToolCall, ...]) -> dict[int, tuple[int, bool]]:
        if self.mode == "strict":
            by_message = strict_message_pairs(self.expected, self.tests, actual, self.pairing)
            if by_message is not None:
                return by_message
        if self.mode in _POSITIONAL_MODES:
            names, tests = self.names, self.tests
            return {i: (i, call.name == names[i] and tests[i](call)) for i, call in enumerate(actual[: len(names)])}
        if self.mode == "flexible":
            taken = self._taken(actual)
        else:
            taken = rule_pairing(self.by_name, self.tests, actual, len(self.expected), self.pairing)
        out = {i: (j, True) for j, i in enumerate(taken[0]) if i >= 0}
        if self.mode == "flexible":
            out.update({i: (j, False) for j, i in name_only_pairs(self.expected, actual, taken).items()})
        return out


def _empty_inputs(m: int, n: int) -> Verdict:
    """Evalite's table, checked before the mode."""
    if m == 0 and n == 0:
        note = "Both empty - perfect match"
        return 1.0, note, {"note": note}
    if m == 0:
        warning = "Reference tool calls are empty but predictions exist"
        return 0.0, f"{warning} ({n} actual calls)", {"warning": warning, "output_count": n}
    warning = "No tool calls found in output"
    return 0.0, f"{warning} ({m} expected calls)", {"warning": warning, "reference_count": m}
