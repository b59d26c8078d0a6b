from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Scalar(_message.Message):
    __slots__ = ("text", "integer", "number", "flag")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    INTEGER_FIELD_NUMBER: _ClassVar[int]
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    FLAG_FIELD_NUMBER: _ClassVar[int]
    text: str
    integer: int
    number: float
    flag: bool
    def __init__(self, text: _Optional[str] = ..., integer: _Optional[int] = ..., number: _Optional[float] = ..., flag: _Optional[bool] = ...) -> None: ...

class Symbol(_message.Message):
    __slots__ = ("name", "type", "names", "sense")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    SENSE_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    names: _containers.RepeatedScalarFieldContainer[str]
    sense: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., names: _Optional[_Iterable[str]] = ..., sense: _Optional[_Iterable[str]] = ...) -> None: ...

class Triplet(_message.Message):
    __slots__ = ("head", "edge", "tail", "direction", "min_hops", "max_hops")
    HEAD_FIELD_NUMBER: _ClassVar[int]
    EDGE_FIELD_NUMBER: _ClassVar[int]
    TAIL_FIELD_NUMBER: _ClassVar[int]
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    MIN_HOPS_FIELD_NUMBER: _ClassVar[int]
    MAX_HOPS_FIELD_NUMBER: _ClassVar[int]
    head: str
    edge: str
    tail: str
    direction: str
    min_hops: int
    max_hops: int
    def __init__(self, head: _Optional[str] = ..., edge: _Optional[str] = ..., tail: _Optional[str] = ..., direction: _Optional[str] = ..., min_hops: _Optional[int] = ..., max_hops: _Optional[int] = ...) -> None: ...

class AttributeConstraint(_message.Message):
    __slots__ = ("symbol", "attribute", "op", "values", "is_list", "case_insensitive")
    SYMBOL_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTE_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    IS_LIST_FIELD_NUMBER: _ClassVar[int]
    CASE_INSENSITIVE_FIELD_NUMBER: _ClassVar[int]
    symbol: str
    attribute: str
    op: str
    values: _containers.RepeatedCompositeFieldContainer[Scalar]
    is_list: bool
    case_insensitive: bool
    def __init__(self, symbol: _Optional[str] = ..., attribute: _Optional[str] = ..., op: _Optional[str] = ..., values: _Optional[_Iterable[_Union[Scalar, _Mapping]]] = ..., is_list: _Optional[bool] = ..., case_insensitive: _Optional[bool] = ...) -> None: ...

class StructuredQuery(_message.Message):
    __slots__ = ("target", "symbols", "triplets", "constraints", "text_constraints", "alternatives", "warnings", "predicted_type", "confidence", "type_named")
    TARGET_FIELD_NUMBER: _ClassVar[int]
    SYMBOLS_FIELD_NUMBER: _ClassVar[int]
    TRIPLETS_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    TEXT_CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    ALTERNATIVES_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    PREDICTED_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    TYPE_NAMED_FIELD_NUMBER: _ClassVar[int]
    target: str
    symbols: _containers.RepeatedCompositeFieldContainer[Symbol]
    triplets: _containers.RepeatedCompositeFieldContainer[Triplet]
    constraints: _containers.RepeatedCompositeFieldContainer[AttributeConstraint]
    text_constraints: _containers.RepeatedScalarFieldContainer[str]
    alternatives: _containers.RepeatedCompositeFieldContainer[StructuredQuery]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    predicted_type: str
    confidence: float
    type_named: bool
    def __init__(self, target: _Optional[str] = ..., symbols: _Optional[_Iterable[_Union[Symbol, _Mapping]]] = ..., triplets: _Optional[_Iterable[_Union[Triplet, _Mapping]]] = ..., constraints: _Optional[_Iterable[_Union[AttributeConstraint, _Mapping]]] = ..., text_constraints: _Optional[_Iterable[str]] = ..., alternatives: _Optional[_Iterable[_Union[StructuredQuery, _Mapping]]] = ..., warnings: _Optional[_Iterable[str]] = ..., predicted_type: _Optional[str] = ..., confidence: _Optional[float] = ..., type_named: _Optional[bool] = ...) -> None: ...

class CandidateSet(_message.Message):
    __slots__ = ("symbol", "positions")
    SYMBOL_FIELD_NUMBER: _ClassVar[int]
    POSITIONS_FIELD_NUMBER: _ClassVar[int]
    symbol: str
    positions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, symbol: _Optional[str] = ..., positions: _Optional[_Iterable[int]] = ...) -> None: ...

class TripletEvidence(_message.Message):
    __slots__ = ("triplet_index", "other_symbol", "target", "other")
    TRIPLET_INDEX_FIELD_NUMBER: _ClassVar[int]
    OTHER_SYMBOL_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    OTHER_FIELD_NUMBER: _ClassVar[int]
    triplet_index: int
    other_symbol: str
    target: _containers.RepeatedScalarFieldContainer[int]
    other: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, triplet_index: _Optional[int] = ..., other_symbol: _Optional[str] = ..., target: _Optional[_Iterable[int]] = ..., other: _Optional[_Iterable[int]] = ...) -> None: ...

class ScopeIteration(_message.Message):
    __slots__ = ("scope", "size")
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    scope: float
    size: int
    def __init__(self, scope: _Optional[float] = ..., size: _Optional[int] = ...) -> None: ...

class Scope(_message.Message):
    __slots__ = ("grounded", "candidates", "scope", "per_constant", "iterations", "reason", "levels", "evidence", "has_result")
    GROUNDED_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    PER_CONSTANT_FIELD_NUMBER: _ClassVar[int]
    ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    LEVELS_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    HAS_RESULT_FIELD_NUMBER: _ClassVar[int]
    grounded: bool
    candidates: _containers.RepeatedScalarFieldContainer[int]
    scope: float
    per_constant: int
    iterations: _containers.RepeatedCompositeFieldContainer[ScopeIteration]
    reason: str
    levels: _containers.RepeatedScalarFieldContainer[int]
    evidence: _containers.RepeatedCompositeFieldContainer[TripletEvidence]
    has_result: bool
    def __init__(self, grounded: _Optional[bool] = ..., candidates: _Optional[_Iterable[int]] = ..., scope: _Optional[float] = ..., per_constant: _Optional[int] = ..., iterations: _Optional[_Iterable[_Union[ScopeIteration, _Mapping]]] = ..., reason: _Optional[str] = ..., levels: _Optional[_Iterable[int]] = ..., evidence: _Optional[_Iterable[_Union[TripletEvidence, _Mapping]]] = ..., has_result: _Optional[bool] = ...) -> None: ...

class Candidate(_message.Message):
    __slots__ = ("position", "score", "source", "scores", "evidence_json")
    class ScoresEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    POSITION_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_JSON_FIELD_NUMBER: _ClassVar[int]
    position: int
    score: float
    source: str
    scores: _containers.ScalarMap[str, float]
    evidence_json: str
    def __init__(self, position: _Optional[int] = ..., score: _Optional[float] = ..., source: _Optional[str] = ..., scores: _Optional[_Mapping[str, float]] = ..., evidence_json: _Optional[str] = ...) -> None: ...

class HopMark(_message.Message):
    __slots__ = ("hop", "unix_us")
    HOP_FIELD_NUMBER: _ClassVar[int]
    UNIX_US_FIELD_NUMBER: _ClassVar[int]
    hop: str
    unix_us: int
    def __init__(self, hop: _Optional[str] = ..., unix_us: _Optional[int] = ...) -> None: ...

class StageMessage(_message.Message):
    __slots__ = ("request_id", "deadline_unix_ms", "accepted_unix_ms", "question", "strategy", "k", "options_json", "question_embedding", "parsed", "symbol_sets", "scope", "candidates", "rerank_count", "timings_ms", "notes_json", "stream_partial", "gateway_id", "parsed_set", "symbols_set", "scope_set", "ranked_set", "hops", "min_version", "kb_version")
    class TimingsMsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_JSON_FIELD_NUMBER: _ClassVar[int]
    QUESTION_EMBEDDING_FIELD_NUMBER: _ClassVar[int]
    PARSED_FIELD_NUMBER: _ClassVar[int]
    SYMBOL_SETS_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    RERANK_COUNT_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_MS_FIELD_NUMBER: _ClassVar[int]
    NOTES_JSON_FIELD_NUMBER: _ClassVar[int]
    STREAM_PARTIAL_FIELD_NUMBER: _ClassVar[int]
    GATEWAY_ID_FIELD_NUMBER: _ClassVar[int]
    PARSED_SET_FIELD_NUMBER: _ClassVar[int]
    SYMBOLS_SET_FIELD_NUMBER: _ClassVar[int]
    SCOPE_SET_FIELD_NUMBER: _ClassVar[int]
    RANKED_SET_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    MIN_VERSION_FIELD_NUMBER: _ClassVar[int]
    KB_VERSION_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    deadline_unix_ms: int
    accepted_unix_ms: int
    question: str
    strategy: str
    k: int
    options_json: str
    question_embedding: bytes
    parsed: StructuredQuery
    symbol_sets: _containers.RepeatedCompositeFieldContainer[CandidateSet]
    scope: Scope
    candidates: _containers.RepeatedCompositeFieldContainer[Candidate]
    rerank_count: int
    timings_ms: _containers.ScalarMap[str, float]
    notes_json: str
    stream_partial: bool
    gateway_id: str
    parsed_set: bool
    symbols_set: bool
    scope_set: bool
    ranked_set: bool
    hops: _containers.RepeatedCompositeFieldContainer[HopMark]
    min_version: int
    kb_version: int
    def __init__(self, request_id: _Optional[str] = ..., deadline_unix_ms: _Optional[int] = ..., accepted_unix_ms: _Optional[int] = ..., question: _Optional[str] = ..., strategy: _Optional[str] = ..., k: _Optional[int] = ..., options_json: _Optional[str] = ..., question_embedding: _Optional[bytes] = ..., parsed: _Optional[_Union[StructuredQuery, _Mapping]] = ..., symbol_sets: _Optional[_Iterable[_Union[CandidateSet, _Mapping]]] = ..., scope: _Optional[_Union[Scope, _Mapping]] = ..., candidates: _Optional[_Iterable[_Union[Candidate, _Mapping]]] = ..., rerank_count: _Optional[int] = ..., timings_ms: _Optional[_Mapping[str, float]] = ..., notes_json: _Optional[str] = ..., stream_partial: _Optional[bool] = ..., gateway_id: _Optional[str] = ..., parsed_set: _Optional[bool] = ..., symbols_set: _Optional[bool] = ..., scope_set: _Optional[bool] = ..., ranked_set: _Optional[bool] = ..., hops: _Optional[_Iterable[_Union[HopMark, _Mapping]]] = ..., min_version: _Optional[int] = ..., kb_version: _Optional[int] = ...) -> None: ...

class AnswerEnvelope(_message.Message):
    __slots__ = ("request_id", "kind", "stage", "answer", "status_code", "status_message", "gateway_id", "hops")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[AnswerEnvelope.Kind]
        PARTIAL: _ClassVar[AnswerEnvelope.Kind]
        FINAL: _ClassVar[AnswerEnvelope.Kind]
        ERROR: _ClassVar[AnswerEnvelope.Kind]
    KIND_UNSPECIFIED: AnswerEnvelope.Kind
    PARTIAL: AnswerEnvelope.Kind
    FINAL: AnswerEnvelope.Kind
    ERROR: AnswerEnvelope.Kind
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    STATUS_CODE_FIELD_NUMBER: _ClassVar[int]
    STATUS_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    GATEWAY_ID_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    kind: AnswerEnvelope.Kind
    stage: str
    answer: bytes
    status_code: int
    status_message: str
    gateway_id: str
    hops: _containers.RepeatedCompositeFieldContainer[HopMark]
    def __init__(self, request_id: _Optional[str] = ..., kind: _Optional[_Union[AnswerEnvelope.Kind, str]] = ..., stage: _Optional[str] = ..., answer: _Optional[bytes] = ..., status_code: _Optional[int] = ..., status_message: _Optional[str] = ..., gateway_id: _Optional[str] = ..., hops: _Optional[_Iterable[_Union[HopMark, _Mapping]]] = ...) -> None: ...

class StageResult(_message.Message):
    __slots__ = ("forward", "has_forward", "answers")
    FORWARD_FIELD_NUMBER: _ClassVar[int]
    HAS_FORWARD_FIELD_NUMBER: _ClassVar[int]
    ANSWERS_FIELD_NUMBER: _ClassVar[int]
    forward: StageMessage
    has_forward: bool
    answers: _containers.RepeatedCompositeFieldContainer[AnswerEnvelope]
    def __init__(self, forward: _Optional[_Union[StageMessage, _Mapping]] = ..., has_forward: _Optional[bool] = ..., answers: _Optional[_Iterable[_Union[AnswerEnvelope, _Mapping]]] = ...) -> None: ...
