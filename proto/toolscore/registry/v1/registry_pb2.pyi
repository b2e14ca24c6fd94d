from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ChangeKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CHANGE_KIND_UNSPECIFIED: _ClassVar[ChangeKind]
    CHANGE_KIND_CREATED: _ClassVar[ChangeKind]
    CHANGE_KIND_UPDATED: _ClassVar[ChangeKind]
    CHANGE_KIND_DELETED: _ClassVar[ChangeKind]
CHANGE_KIND_UNSPECIFIED: ChangeKind
CHANGE_KIND_CREATED: ChangeKind
CHANGE_KIND_UPDATED: ChangeKind
CHANGE_KIND_DELETED: ChangeKind

class Condition(_message.Message):
    __slots__ = ("equals", "in_values", "regex", "exists", "contains")
    EQUALS_FIELD_NUMBER: _ClassVar[int]
    IN_VALUES_FIELD_NUMBER: _ClassVar[int]
    REGEX_FIELD_NUMBER: _ClassVar[int]
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    CONTAINS_FIELD_NUMBER: _ClassVar[int]
    equals: _struct_pb2.Value
    in_values: _struct_pb2.ListValue
    regex: str
    exists: bool
    contains: str
    def __init__(self, equals: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., in_values: _Optional[_Union[_struct_pb2.ListValue, _Mapping]] = ..., regex: _Optional[str] = ..., exists: _Optional[bool] = ..., contains: _Optional[str] = ...) -> None: ...

class MatchSelector(_message.Message):
    __slots__ = ("agent", "service", "resource", "attributes", "input")
    class ResourceEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Condition
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Condition, _Mapping]] = ...) -> None: ...
    class AttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Condition
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Condition, _Mapping]] = ...) -> None: ...
    AGENT_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    agent: Condition
    service: Condition
    resource: _containers.MessageMap[str, Condition]
    attributes: _containers.MessageMap[str, Condition]
    input: Condition
    def __init__(self, agent: _Optional[_Union[Condition, _Mapping]] = ..., service: _Optional[_Union[Condition, _Mapping]] = ..., resource: _Optional[_Mapping[str, Condition]] = ..., attributes: _Optional[_Mapping[str, Condition]] = ..., input: _Optional[_Union[Condition, _Mapping]] = ...) -> None: ...

class ScorerSpec(_message.Message):
    __slots__ = ("type", "params", "sample_rate", "params_json")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_RATE_FIELD_NUMBER: _ClassVar[int]
    PARAMS_JSON_FIELD_NUMBER: _ClassVar[int]
    type: str
    params: _struct_pb2.Struct
    sample_rate: float
    params_json: str
    def __init__(self, type: _Optional[str] = ..., params: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., sample_rate: _Optional[float] = ..., params_json: _Optional[str] = ...) -> None: ...

class Expectation(_message.Message):
    __slots__ = ("name", "version", "enabled", "labels", "match", "scorers")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    SCORERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: int
    enabled: bool
    labels: _containers.ScalarMap[str, str]
    match: MatchSelector
    scorers: _containers.RepeatedCompositeFieldContainer[ScorerSpec]
    def __init__(self, name: _Optional[str] = ..., version: _Optional[int] = ..., enabled: _Optional[bool] = ..., labels: _Optional[_Mapping[str, str]] = ..., match: _Optional[_Union[MatchSelector, _Mapping]] = ..., scorers: _Optional[_Iterable[_Union[ScorerSpec, _Mapping]]] = ...) -> None: ...

class Score(_message.Message):
    __slots__ = ("trace_id", "span_id", "expectation_name", "expectation_version", "scorer_name", "scorer_type", "value", "label", "explanation", "error_type", "error_message", "details", "time_unix_nano")
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    SPAN_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTATION_NAME_FIELD_NUMBER: _ClassVar[int]
    EXPECTATION_VERSION_FIELD_NUMBER: _ClassVar[int]
    SCORER_NAME_FIELD_NUMBER: _ClassVar[int]
    SCORER_TYPE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    EXPLANATION_FIELD_NUMBER: _ClassVar[int]
    ERROR_TYPE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    TIME_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    trace_id: str
    span_id: str
    expectation_name: str
    expectation_version: int
    scorer_name: str
    scorer_type: str
    value: float
    label: str
    explanation: str
    error_type: str
    error_message: str
    details: _struct_pb2.Struct
    time_unix_nano: int
    def __init__(self, trace_id: _Optional[str] = ..., span_id: _Optional[str] = ..., expectation_name: _Optional[str] = ..., expectation_version: _Optional[int] = ..., scorer_name: _Optional[str] = ..., scorer_type: _Optional[str] = ..., value: _Optional[float] = ..., label: _Optional[str] = ..., explanation: _Optional[str] = ..., error_type: _Optional[str] = ..., error_message: _Optional[str] = ..., details: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., time_unix_nano: _Optional[int] = ...) -> None: ...

class PutExpectationRequest(_message.Message):
    __slots__ = ("expectation", "expected_version", "validate_only")
    EXPECTATION_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    expectation: Expectation
    expected_version: int
    validate_only: bool
    def __init__(self, expectation: _Optional[_Union[Expectation, _Mapping]] = ..., expected_version: _Optional[int] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class PutExpectationResponse(_message.Message):
    __slots__ = ("expectation", "created")
    EXPECTATION_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    expectation: Expectation
    created: bool
    def __init__(self, expectation: _Optional[_Union[Expectation, _Mapping]] = ..., created: _Optional[bool] = ...) -> None: ...

class GetExpectationRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetExpectationResponse(_message.Message):
    __slots__ = ("expectation",)
    EXPECTATION_FIELD_NUMBER: _ClassVar[int]
    expectation: Expectation
    def __init__(self, expectation: _Optional[_Union[Expectation, _Mapping]] = ...) -> None: ...

class ListExpectationsRequest(_message.Message):
    __slots__ = ("name_prefix", "page_size", "page_token")
    NAME_PREFIX_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    name_prefix: str
    page_size: int
    page_token: str
    def __init__(self, name_prefix: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListExpectationsResponse(_message.Message):
    __slots__ = ("expectations", "next_page_token")
    EXPECTATIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    expectations: _containers.RepeatedCompositeFieldContainer[Expectation]
    next_page_token: str
    def __init__(self, expectations: _Optional[_Iterable[_Union[Expectation, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class DeleteExpectationRequest(_message.Message):
    __slots__ = ("name", "expected_version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    expected_version: int
    def __init__(self, name: _Optional[str] = ..., expected_version: _Optional[int] = ...) -> None: ...

class DeleteExpectationResponse(_message.Message):
    __slots__ = ("version",)
    VERSION_FIELD_NUMBER: _ClassVar[int]
    version: int
    def __init__(self, version: _Optional[int] = ...) -> None: ...

class GetExpectationHistoryRequest(_message.Message):
    __slots__ = ("name", "page_size", "page_token")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    name: str
    page_size: int
    page_token: str
    def __init__(self, name: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class GetExpectationHistoryResponse(_message.Message):
    __slots__ = ("versions", "changes", "next_page_token")
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    versions: _containers.RepeatedCompositeFieldContainer[Expectation]
    changes: _containers.RepeatedCompositeFieldContainer[WatchExpectationsResponse]
    next_page_token: str
    def __init__(self, versions: _Optional[_Iterable[_Union[Expectation, _Mapping]]] = ..., changes: _Optional[_Iterable[_Union[WatchExpectationsResponse, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class WatchExpectationsRequest(_message.Message):
    __slots__ = ("since_seq",)
    SINCE_SEQ_FIELD_NUMBER: _ClassVar[int]
    since_seq: int
    def __init__(self, since_seq: _Optional[int] = ...) -> None: ...

class WatchExpectationsResponse(_message.Message):
    __slots__ = ("seq", "kind", "expectation", "version")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    EXPECTATION_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    seq: int
    kind: ChangeKind
    expectation: Expectation
    version: int
    def __init__(self, seq: _Optional[int] = ..., kind: _Optional[_Union[ChangeKind, str]] = ..., expectation: _Optional[_Union[Expectation, _Mapping]] = ..., version: _Optional[int] = ...) -> None: ...

class ApplyExpectationsRequest(_message.Message):
    __slots__ = ("expectations", "prune")
    EXPECTATIONS_FIELD_NUMBER: _ClassVar[int]
    PRUNE_FIELD_NUMBER: _ClassVar[int]
    expectations: _containers.RepeatedCompositeFieldContainer[Expectation]
    prune: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, expectations: _Optional[_Iterable[_Union[Expectation, _Mapping]]] = ..., prune: _Optional[_Iterable[str]] = ...) -> None: ...

class AppliedExpectation(_message.Message):
    __slots__ = ("name", "action")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    action: str
    def __init__(self, name: _Optional[str] = ..., action: _Optional[str] = ...) -> None: ...

class ApplyExpectationsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AppliedExpectation]
    def __init__(self, results: _Optional[_Iterable[_Union[AppliedExpectation, _Mapping]]] = ...) -> None: ...
