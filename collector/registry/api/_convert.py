"""Between the registry's pydantic model and the `toolscore.registry.v1` messages.

A message coming in is turned into the same *document* a YAML file holds and validated by the same
code (`parse_expectation`), so a bad regex or an unknown scorer type is reported with the same field
path whether it arrived over gRPC or in a file. Scorer params travel as JSON text (`params_json`), exact
for every integer, and as a `google.protobuf.Struct` for clients that read only that; a Struct has only
doubles, so integral numbers are read back as integers (`max_calls: 3` stays an int) and integers beyond
2^53 change, which is why `params_json` wins when set.
`score_to_proto` gives the pipeline's scores the same wire form, for consumers in other languages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from google.protobuf import any_pb2, struct_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2

from toolscore.collector.registry._conditions import Condition
from toolscore.collector.registry._errors import (
    AlreadyExists,
    ChangesCompacted,
    InvalidExpectation,
    NotFound,
    Problem,
    RegistryError,
    StoreUnavailable,
    VersionConflict,
)
from toolscore.collector.registry._limits import MAX_DOCUMENT_BYTES, MAX_DOCUMENT_DEPTH, too_deep
from toolscore.collector.registry._model import Expectation, ExpectationScorer, MatchSpec
from toolscore.collector.registry._validation import UNREADABLE_LABEL, parse_expectation
from toolscore.collector.registry.stores._store import Change, ChangeKind
from toolscore.registry.v1 import registry_pb2 as pb
from toolscore.scorers._model import AgentRun, ScoreFailure, ScoreResult

__all__ = [
    "ERROR_DOMAIN",
    "MAX_REPLY_EXPECTATION_BYTES",
    "change_from_proto",
    "change_to_proto",
    "error_from_status",
    "error_to_status",
    "expectation_from_proto",
    "expectation_to_proto",
    "python_value",
    "score_to_proto",
    "struct_from_dict",
]

ERROR_DOMAIN = "toolscore.registry.v1"
"""`ErrorInfo.domain` of the registry's errors (the rich gRPC error model, `grpc-status-details-bin`)."""

_KINDS: dict[ChangeKind, pb.ChangeKind] = {
    "created": pb.CHANGE_KIND_CREATED,
    "updated": pb.CHANGE_KIND_UPDATED,
    "deleted": pb.CHANGE_KIND_DELETED,
}
_KIND_NAMES: dict[int, ChangeKind] = {int(v): k for k, v in _KINDS.items()}
_RESERVED_PARAMS = ("type", "sample_rate")
_PARAMS_DEPTH = MAX_DOCUMENT_DEPTH - 2
"""Params sit two levels into a document (`scorers[i]`)."""

MAX_REPLY_EXPECTATION_BYTES = 3 << 19
"""An expectation message in a reply is at most 1.5 MiB: a history entry carries it twice, and a client takes
4 MiB in one message. Only a document stored before the write bounds (`limits.py`) can be larger; it is sent
as a stand-in saying so (`expectation_to_proto`)."""


def python_value(value: struct_pb2.Value) -> Any:
    """A `Value` as plain Python; integral doubles become ints (JSON does not tell them apart either)."""
    kind = value.WhichOneof("kind")
    if kind == "number_value":
        number = value.number_value
        return int(number) if number.is_integer() else number
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        return {k: python_value(v) for k, v in value.struct_value.fields.items()}
    if kind == "list_value":
        return [python_value(v) for v in value.list_value.values]
    return None


def struct_from_dict(data: Mapping[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(dict(data))
    return out


def _value(data: Any) -> struct_pb2.Value:
    holder = struct_pb2.Struct()
    holder.update({"v": data})
    return holder.fields["v"]


# -- model → message ---------------------------------------------------------------------------------


def _condition_to_proto(cond: Condition) -> pb.Condition:
    if cond.op == "equals":
        return pb.Condition(equals=_value(cond.value))
    if cond.op == "in":
        values = struct_pb2.ListValue()
        values.extend(list(cond.value))
        return pb.Condition(in_values=values)
    if cond.op == "exists":
        return pb.Condition(exists=bool(cond.value))
    if cond.op == "regex":
        return pb.Condition(regex=str(cond.value))
    return pb.Condition(contains=str(cond.value))


def _match_to_proto(match: MatchSpec) -> pb.MatchSelector:
    out = pb.MatchSelector(
        resource={k: _condition_to_proto(c) for k, c in match.resource.items()},
        attributes={k: _condition_to_proto(c) for k, c in match.attributes.items()},
    )
    for key in ("agent", "service", "input"):
        cond = getattr(match, key)
        if cond is not None:
            getattr(out, key).CopyFrom(_condition_to_proto(cond))
    return out


def _scorer_to_proto(scorer: ExpectationScorer) -> pb.ScorerSpec:
    """Params as `params_json`, and as a Struct too while they are within the write bounds: past them (a
    document stored before the bounds) a Struct would double the reply, or nest deeper than readers parse."""
    params = {k: v for k, v in scorer.spec.items() if k != "type"}
    text = json.dumps(params, separators=(",", ":"))
    out = pb.ScorerSpec(type=str(scorer.spec.get("type", "")), sample_rate=scorer.sample_rate, params_json=text)
    if len(text) <= MAX_DOCUMENT_BYTES and too_deep(params, _PARAMS_DEPTH) is None:
        out.params.CopyFrom(struct_from_dict(params))
    return out


def expectation_to_proto(exp: Expectation) -> pb.Expectation:
    """The message for `exp`; one over `MAX_REPLY_EXPECTATION_BYTES` is a disabled stand-in with its name and
    version, whose `toolscore.unreadable` label says why, so a reply holding it still reaches the client (and
    the client can still delete or replace it)."""
    try:
        out = pb.Expectation(
            name=exp.name,
            version=exp.version,
            enabled=exp.enabled,
            labels=exp.labels,
            match=_match_to_proto(exp.match),
            scorers=[_scorer_to_proto(s) for s in exp.scorers],
        )
        size = out.ByteSize()
    except RecursionError:  # stored before the depth bound, deeper than json or protobuf recurse
        problem = f"nests deeper than a reply can carry (the write limit is {MAX_DOCUMENT_DEPTH} levels)"
    else:
        if size <= MAX_REPLY_EXPECTATION_BYTES:
            return out
        problem = f"is {size} bytes as a message, over the {MAX_REPLY_EXPECTATION_BYTES} a reply carries"
    why = f"stored before the document bounds, it {problem}: delete it, or write it again within them"
    return pb.Expectation(name=exp.name, version=exp.version, enabled=False, labels={UNREADABLE_LABEL: why})


def score_to_proto(
    result: ScoreResult, run: AgentRun, expectation: Expectation, scorer: ExpectationScorer, time_unix_nano: int = 0
) -> pb.Score:
    """The `Score` record for one scorer's result on one run (a failure carries no value)."""
    out = pb.Score(
        trace_id=run.trace_id,
        span_id=run.span_id,
        expectation_name=expectation.name,
        expectation_version=expectation.version,
        scorer_name=result.name,
        scorer_type=str(scorer.spec.get("type", "")),
        time_unix_nano=time_unix_nano,
    )
    if isinstance(result, ScoreFailure):
        out.error_type, out.error_message = result.error_type, result.message
    else:
        out.value, out.label, out.explanation = result.value, result.label, result.explanation
        out.details.update(json.loads(json.dumps(result.details, default=str)))
    return out


def change_to_proto(change: Change) -> pb.WatchExpectationsResponse:
    return pb.WatchExpectationsResponse(
        seq=change.seq,
        kind=_KINDS[change.kind],
        expectation=expectation_to_proto(change.expectation),
        version=change.version,
    )


# -- message → model ---------------------------------------------------------------------------------


def _condition_doc(cond: pb.Condition) -> Any:
    """The YAML spelling of a condition; an empty one becomes `{}`, which validation rejects by path."""
    op = cond.WhichOneof("op")
    if op == "equals":
        return python_value(cond.equals)
    if op == "in_values":
        return {"in": [python_value(v) for v in cond.in_values.values]}
    if op is None:
        return {}
    return {op: getattr(cond, op)}


def _match_doc(match: pb.MatchSelector) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for key in ("agent", "service", "input"):
        if match.HasField(key):
            doc[key] = _condition_doc(getattr(match, key))
    if match.resource:
        doc["resource"] = {k: _condition_doc(v) for k, v in match.resource.items()}
    if match.attributes:
        doc["attributes"] = {k: _condition_doc(v) for k, v in match.attributes.items()}
    return doc


def _scorer_doc(index: int, spec: pb.ScorerSpec, stored: bool) -> dict[str, Any]:
    params = _params_json(index, spec.params_json, stored) if spec.params_json else _struct_params(spec.params)
    for key in _RESERVED_PARAMS:
        if key in params:
            raise InvalidExpectation.single(f"scorers[{index}].params.{key}", f"set `{key}` on the ScorerSpec itself")
    doc: dict[str, Any] = {"type": spec.type, **params}
    if spec.HasField("sample_rate"):
        doc["sample_rate"] = spec.sample_rate
    return doc


def _struct_params(params: struct_pb2.Struct) -> dict[str, Any]:
    return {k: python_value(v) for k, v in params.fields.items()}


def _params_json(index: int, text: str, stored: bool = False) -> dict[str, Any]:
    """`params_json` as a dict; refused, naming the field, when it is not a JSON object or (unless `stored`: a
    reply, which may hold a document written before the bounds) past the document bounds."""
    field = f"scorers[{index}].params_json"
    if len(text) > MAX_DOCUMENT_BYTES and not stored:
        raise InvalidExpectation.single(
            field, f"is {len(text)} characters long, over the {MAX_DOCUMENT_BYTES} of a document"
        )
    deep = f"nests deeper than {_PARAMS_DEPTH} levels, the limit of params ({MAX_DOCUMENT_DEPTH} for a document)"
    try:
        params = json.loads(text)
    except RecursionError:
        raise InvalidExpectation.single(field, deep) from None
    except ValueError as exc:
        raise InvalidExpectation.single(field, f"not JSON: {exc}") from None
    if not stored and too_deep(params, _PARAMS_DEPTH) is not None:
        raise InvalidExpectation.single(field, deep)
    if not isinstance(params, dict):
        raise InvalidExpectation.single(field, f"must be a JSON object, got {type(params).__name__}")
    return params


def expectation_from_proto(msg: pb.Expectation, *, with_version: bool = False) -> Expectation:
    """Validate a message as an expectation; raises `InvalidExpectation` naming the field.

    `version` is the store's to set, so it is ignored unless `with_version` (a client reading what a
    server returned, which is not held to the size limits: the server may hold older documents).
    """
    doc: dict[str, Any] = {
        "name": msg.name,
        "labels": dict(msg.labels),
        "match": _match_doc(msg.match),
        "scorers": [_scorer_doc(i, s, with_version) for i, s in enumerate(msg.scorers)],
    }
    if msg.HasField("enabled"):
        doc["enabled"] = msg.enabled
    if with_version:
        doc["version"] = msg.version
    return parse_expectation(doc, stored=with_version)


def change_from_proto(msg: pb.WatchExpectationsResponse) -> Change:
    exp = expectation_from_proto(msg.expectation, with_version=True)
    return Change(msg.seq, _KIND_NAMES.get(int(msg.kind), "updated"), exp.name, msg.version, exp)


# -- errors ↔ google.rpc.Status ----------------------------------------------------------------------


def _packed(detail: Any) -> any_pb2.Any:
    out = any_pb2.Any()
    out.Pack(detail)
    return out


def error_to_status(exc: RegistryError | StoreUnavailable) -> status_pb2.Status:
    """The status a registry error becomes, with details a client in any language can read.

    Field paths go in `BadRequest.field_violations`; versions in `ErrorInfo.metadata`. A store that
    cannot be used now (not read yet, not answering in time) is UNAVAILABLE: the client may retry.
    """
    if isinstance(exc, InvalidExpectation):
        violations = [
            error_details_pb2.BadRequest.FieldViolation(field=p.field, description=p.message) for p in exc.problems
        ]
        return status_pb2.Status(
            code=code_pb2.INVALID_ARGUMENT,
            message=str(exc),
            details=[_packed(error_details_pb2.BadRequest(field_violations=violations))],
        )
    if isinstance(exc, NotFound):
        code, reason, meta = code_pb2.NOT_FOUND, "NOT_FOUND", {"name": exc.name}
    elif isinstance(exc, AlreadyExists):
        code, reason, meta = code_pb2.ALREADY_EXISTS, "ALREADY_EXISTS", {"name": exc.name, "version": str(exc.version)}
    elif isinstance(exc, VersionConflict):
        code, reason = code_pb2.FAILED_PRECONDITION, "VERSION_CONFLICT"
        meta = {"name": exc.name, "expected_version": str(exc.expected), "actual_version": str(exc.actual)}
    elif isinstance(exc, ChangesCompacted):
        code, reason = code_pb2.OUT_OF_RANGE, "CHANGES_COMPACTED"
        meta = {"seq": str(exc.seq), "compacted_seq": str(exc.compacted_seq)}
    elif isinstance(exc, StoreUnavailable):
        code, reason, meta = code_pb2.UNAVAILABLE, "STORE_UNAVAILABLE", {}
    else:
        code, reason, meta = code_pb2.FAILED_PRECONDITION, type(exc).__name__, {}
    info = error_details_pb2.ErrorInfo(reason=reason, domain=ERROR_DOMAIN, metadata=meta)
    return status_pb2.Status(code=code, message=str(exc), details=[_packed(info)])


def error_from_status(status: status_pb2.Status) -> RegistryError | StoreUnavailable | None:
    """The registry error a status stands for; None when it is not one of the registry's."""
    for detail in status.details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            return InvalidExpectation(Problem(v.field, v.description) for v in bad.field_violations)
        if not detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            continue
        info = error_details_pb2.ErrorInfo()
        detail.Unpack(info)
        if info.domain != ERROR_DOMAIN:
            continue
        meta = info.metadata
        if info.reason == "NOT_FOUND":
            return NotFound(meta["name"])
        if info.reason == "ALREADY_EXISTS":
            return AlreadyExists(meta["name"], int(meta["version"]))
        if info.reason == "VERSION_CONFLICT":
            return VersionConflict(meta["name"], int(meta["expected_version"]), int(meta["actual_version"]))
        if info.reason == "CHANGES_COMPACTED":
            return ChangesCompacted(int(meta["seq"]), int(meta["compacted_seq"]))
        if info.reason == "STORE_UNAVAILABLE":
            return StoreUnavailable(status.message)
    return None
