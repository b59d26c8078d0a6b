from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AskRequest(_message.Message):
    __slots__ = ("question", "strategy", "k", "options", "request_id", "min_version")
    class OptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    MIN_VERSION_FIELD_NUMBER: _ClassVar[int]
    question: str
    strategy: str
    k: int
    options: _containers.ScalarMap[str, str]
    request_id: str
    min_version: int
    def __init__(self, question: _Optional[str] = ..., strategy: _Optional[str] = ..., k: _Optional[int] = ..., options: _Optional[_Mapping[str, str]] = ..., request_id: _Optional[str] = ..., min_version: _Optional[int] = ...) -> None: ...

class AnswerItem(_message.Message):
    __slots__ = ("rank", "node_id", "name", "type", "score", "source", "why", "scores", "evidence_json")
    class ScoresEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    RANK_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    WHY_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_JSON_FIELD_NUMBER: _ClassVar[int]
    rank: int
    node_id: int
    name: str
    type: str
    score: float
    source: str
    why: str
    scores: _containers.ScalarMap[str, float]
    evidence_json: str
    def __init__(self, rank: _Optional[int] = ..., node_id: _Optional[int] = ..., name: _Optional[str] = ..., type: _Optional[str] = ..., score: _Optional[float] = ..., source: _Optional[str] = ..., why: _Optional[str] = ..., scores: _Optional[_Mapping[str, float]] = ..., evidence_json: _Optional[str] = ...) -> None: ...

class AskResponse(_message.Message):
    __slots__ = ("request_id", "question", "strategy", "k", "items", "timings_ms", "notes_json", "partial", "degraded", "kb_version")
    class TimingsMsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_MS_FIELD_NUMBER: _ClassVar[int]
    NOTES_JSON_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_FIELD_NUMBER: _ClassVar[int]
    KB_VERSION_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    question: str
    strategy: str
    k: int
    items: _containers.RepeatedCompositeFieldContainer[AnswerItem]
    timings_ms: _containers.ScalarMap[str, float]
    notes_json: str
    partial: bool
    degraded: bool
    kb_version: int
    def __init__(self, request_id: _Optional[str] = ..., question: _Optional[str] = ..., strategy: _Optional[str] = ..., k: _Optional[int] = ..., items: _Optional[_Iterable[_Union[AnswerItem, _Mapping]]] = ..., timings_ms: _Optional[_Mapping[str, float]] = ..., notes_json: _Optional[str] = ..., partial: _Optional[bool] = ..., degraded: _Optional[bool] = ..., kb_version: _Optional[int] = ...) -> None: ...

class AskEvent(_message.Message):
    __slots__ = ("partial", "final")
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    partial: AskResponse
    final: AskResponse
    def __init__(self, partial: _Optional[_Union[AskResponse, _Mapping]] = ..., final: _Optional[_Union[AskResponse, _Mapping]] = ...) -> None: ...

class ExplainRequest(_message.Message):
    __slots__ = ("ask",)
    ASK_FIELD_NUMBER: _ClassVar[int]
    ask: AskRequest
    def __init__(self, ask: _Optional[_Union[AskRequest, _Mapping]] = ...) -> None: ...

class ExplainResponse(_message.Message):
    __slots__ = ("answer", "explanation")
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    EXPLANATION_FIELD_NUMBER: _ClassVar[int]
    answer: AskResponse
    explanation: str
    def __init__(self, answer: _Optional[_Union[AskResponse, _Mapping]] = ..., explanation: _Optional[str] = ...) -> None: ...

class IndexStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class IndexStatusResponse(_message.Message):
    __slots__ = ("index", "skb_name", "nodes", "edges", "encoder", "manifest_json", "strategies", "kb_version", "accepted_version")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SKB_NAME_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    ENCODER_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_JSON_FIELD_NUMBER: _ClassVar[int]
    STRATEGIES_FIELD_NUMBER: _ClassVar[int]
    KB_VERSION_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    index: str
    skb_name: str
    nodes: int
    edges: int
    encoder: str
    manifest_json: str
    strategies: _containers.RepeatedScalarFieldContainer[str]
    kb_version: int
    accepted_version: int
    def __init__(self, index: _Optional[str] = ..., skb_name: _Optional[str] = ..., nodes: _Optional[int] = ..., edges: _Optional[int] = ..., encoder: _Optional[str] = ..., manifest_json: _Optional[str] = ..., strategies: _Optional[_Iterable[str]] = ..., kb_version: _Optional[int] = ..., accepted_version: _Optional[int] = ...) -> None: ...

class NodeRecord(_message.Message):
    __slots__ = ("id", "type", "name", "text", "attrs_json")
    ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ATTRS_JSON_FIELD_NUMBER: _ClassVar[int]
    id: int
    type: str
    name: str
    text: str
    attrs_json: str
    def __init__(self, id: _Optional[int] = ..., type: _Optional[str] = ..., name: _Optional[str] = ..., text: _Optional[str] = ..., attrs_json: _Optional[str] = ...) -> None: ...

class EdgeRef(_message.Message):
    __slots__ = ("src", "type", "dst")
    SRC_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    src: int
    type: str
    dst: int
    def __init__(self, src: _Optional[int] = ..., type: _Optional[str] = ..., dst: _Optional[int] = ...) -> None: ...

class Change(_message.Message):
    __slots__ = ("upsert_node", "delete_node", "add_edge", "remove_edge")
    UPSERT_NODE_FIELD_NUMBER: _ClassVar[int]
    DELETE_NODE_FIELD_NUMBER: _ClassVar[int]
    ADD_EDGE_FIELD_NUMBER: _ClassVar[int]
    REMOVE_EDGE_FIELD_NUMBER: _ClassVar[int]
    upsert_node: NodeRecord
    delete_node: int
    add_edge: EdgeRef
    remove_edge: EdgeRef
    def __init__(self, upsert_node: _Optional[_Union[NodeRecord, _Mapping]] = ..., delete_node: _Optional[int] = ..., add_edge: _Optional[_Union[EdgeRef, _Mapping]] = ..., remove_edge: _Optional[_Union[EdgeRef, _Mapping]] = ...) -> None: ...

class ApplyChangesResponse(_message.Message):
    __slots__ = ("version", "changes", "outcome")
    class OutcomeEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    version: int
    changes: int
    outcome: _containers.ScalarMap[str, int]
    def __init__(self, version: _Optional[int] = ..., changes: _Optional[int] = ..., outcome: _Optional[_Mapping[str, int]] = ...) -> None: ...
