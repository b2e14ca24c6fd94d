"""`args_valid`: were each call's arguments valid for the tool's JSON Schema? No reference run needed.

The model is told each tool's parameters as a JSON Schema; a call to a tool it was not offered (a
hallucinated tool), arguments that are not JSON, a missing required parameter or one of the wrong type
fail the tool or reach it wrong. The schemas come from the run's catalog (`AgentRun.available_tools`,
read from the trace) or from the scorer (`schemas`, which wins per tool), so a deployment can check
runs whose traces do not record the catalog.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from toolscore.scorers._json_schema import CompiledSchema, SchemaProblem, TooComplex, compiled_schema
from toolscore.scorers._masked import is_masked
from toolscore.scorers._model import AgentRun, ScoreFailure, ScoreResult, ToolCall
from toolscore.scorers._violations import RuleScorer, Violation, calls_explanation, violation

__all__ = ["ArgsValid"]

_NO_ARGS: dict[str, Any] = {}


class ArgsValid(RuleScorer):
    """Valid calls / checked calls. Each invalid call is a violation with its rule:
    - `unknown_tool`: the tool is neither in the run's catalog nor in `schemas`;
    - `not_json`: the arguments are text that is not JSON;
    - a JSON Schema keyword (`required`, `type`, `additionalProperties`, `enum`, ...): the arguments break
      it, at the JSON pointer `pointer` (`/city`; `""` is the arguments as a whole), with `message`.

    No arguments and `null` are validated as `{}`. Calls that cannot be checked are left out of the score
    and listed in `unchecked` with the reason: `not_captured` (the instrumentation did not record the
    arguments), `no_schema` (the catalog names the tool without its parameters), `too_complex` (past the
    bounds of `toolscore.scorers._json_schema`). A run with no calls scores 1.

    Failures (`ScoreFailure`), never a silent score: `no_schema` when the run has no catalog and the scorer
    no `schemas`; `not_checked` when there were calls and none could be checked; `invalid_schema` or
    `schema_too_large` naming the tool whose catalog schema is unusable (a scorer's own `schemas` are
    checked when it is built).

    Masked values (`toolscore.scorers._masked`) are markers, not the values the schema is about: an error at
    one is not counted (a call whose only errors are there is valid); a run that kept names only gets a
    `values_not_kept` failure.
    """

    type: Literal["args_valid"] = "args_valid"
    values_needed: ClassVar[str] = "args_valid checks argument values against their schemas"
    schemas: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Per tool name, the JSON Schema of its arguments; wins over the run's catalog. Default: {}.",
    )

    @field_validator("schemas")
    @classmethod
    def _usable(cls, schemas: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for tool, schema in schemas.items():
            try:
                compiled_schema(schema)
            except SchemaProblem as exc:
                raise ValueError(f"{tool}: {exc}") from None
        return schemas

    def _score(self, run: AgentRun) -> ScoreResult:
        catalog = {spec.name: spec.parameters for spec in run.available_tools}
        if not catalog and not self.schemas:
            message = "no tool schemas: the run's trace records no tool catalog and the scorer gives no `schemas`"
            return ScoreFailure(name=self.scorer_name, error_type="no_schema", message=message)
        tools: dict[str, tuple[CompiledSchema | None, bool]] = {}  # per tool name: its schema, and whether it is known
        schemas = self.schemas
        found: list[Violation] = []
        unchecked: list[dict[str, Any]] = []
        checked = invalid = 0
        for i, call in enumerate(run.calls):
            name = call.name
            tool = tools.get(name)
            if tool is None:
                try:
                    tool = tools[name] = (self._schema_of(name, catalog), name in catalog or name in schemas)
                except SchemaProblem as exc:
                    return ScoreFailure(name=self.scorer_name, error_type=exc.kind, message=f"tool {name!r}: {exc}")
            schema, known = tool
            fast = schema.fast if schema is not None and known else None
            if fast is not None and call.args_state == "value" and fast(_NO_ARGS if call.args is None else call.args):
                checked += 1  # valid, the common case: no further look
                continue
            try:
                verdict = _check(i, call, schema, known)
            except SchemaProblem as exc:
                return ScoreFailure(name=self.scorer_name, error_type=exc.kind, message=f"tool {name!r}: {exc}")
            if isinstance(verdict, str):
                unchecked.append({"index": i, "tool": name, "reason": verdict})
                continue
            checked += 1
            if verdict:
                invalid += 1
                found += verdict
        n = len(run.calls)
        if n and not checked:
            reasons = sorted({u["reason"] for u in unchecked})
            message = f"none of the {n} calls could be checked ({', '.join(reasons)})"
            return ScoreFailure(name=self.scorer_name, error_type="not_checked", message=message)
        value = (checked - invalid) / checked if checked else 1.0
        details = {
            "calls": n,
            "checked": checked,
            "invalid_calls": invalid,
            "violations": found,
            "unchecked": unchecked,
        }
        explanation = calls_explanation(checked - invalid, checked, "have valid arguments", found, value)
        if unchecked:
            explanation = f"{explanation} ({len(unchecked)} unchecked)"
        return self._result(value, explanation, details)

    def _schema_of(self, name: str, catalog: dict[str, dict[str, Any] | None]) -> CompiledSchema | None:
        schema = self.schemas.get(name)
        if schema is None:
            schema = catalog.get(name)
        return None if schema is None else compiled_schema(schema)


def _check(i: int, call: ToolCall, schema: CompiledSchema | None, known: bool) -> list[Violation] | str:
    """The call's violations (empty: valid), or why it could not be checked."""
    if not known:
        return [violation(i, call.name, "unknown_tool", "not a tool the run was offered")]
    state = call.args_state
    if state == "raw":
        return [violation(i, call.name, "not_json", "the arguments are not JSON")]
    if state == "not_captured":
        return "not_captured"
    if schema is None:
        return "no_schema"
    args = call.args if state == "value" and call.args is not None else _NO_ARGS
    try:
        if schema.is_valid(args):
            return []
        errors, total = schema.errors(args)
    except (TooComplex, RecursionError):  # past the bounds, or nested past the interpreter's depth
        return "too_complex"
    except SchemaProblem:
        raise
    except Exception as exc:  # a `$ref` that does not resolve within the schema, say
        raise SchemaProblem("invalid_schema", f"the schema cannot be applied: {exc}") from None
    kept = [e for e in errors if not is_masked(_at_pointer(args, e["pointer"]))]
    if len(kept) < len(errors):  # a masked value is a marker, not the value its schema is about
        if not kept:
            return [] if total == len(errors) else "masked"
        total -= len(errors) - len(kept)
        errors = kept
    out = [
        violation(i, call.name, e["keyword"], f"{e['pointer'] or '(arguments)'}: {e['message']}", pointer=e["pointer"])
        for e in errors
    ]
    if total > len(errors):
        out[-1]["more_errors"] = total - len(errors)
    return out


def _at_pointer(args: Any, pointer: str) -> Any:
    """The value at a JSON pointer (`/card/number`) in the arguments, None when there is none."""
    value = args
    for part in pointer.split("/")[1:] if pointer else ():
        key = part.replace("~1", "/").replace("~0", "~")
        if type(value) is dict:
            value = value.get(key)
        elif type(value) in (list, tuple) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value
