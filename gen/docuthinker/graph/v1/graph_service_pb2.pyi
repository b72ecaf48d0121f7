from docuthinker.api.v1 import visibility_pb2 as _visibility_pb2
from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DocumentNode(_message.Message):
    __slots__ = ("document_id", "title", "file_type")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    FILE_TYPE_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    title: str
    file_type: str
    def __init__(self, document_id: _Optional[str] = ..., title: _Optional[str] = ..., file_type: _Optional[str] = ...) -> None: ...

class TopicFact(_message.Message):
    __slots__ = ("name", "weight")
    NAME_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    name: str
    weight: float
    def __init__(self, name: _Optional[str] = ..., weight: _Optional[float] = ...) -> None: ...

class EntityFact(_message.Message):
    __slots__ = ("name", "type", "count")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    count: int
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class UpsertDocumentFactsRequest(_message.Message):
    __slots__ = ("document", "topic", "entity")
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    ENTITY_FIELD_NUMBER: _ClassVar[int]
    document: DocumentNode
    topic: TopicFact
    entity: EntityFact
    def __init__(self, document: _Optional[_Union[DocumentNode, _Mapping]] = ..., topic: _Optional[_Union[TopicFact, _Mapping]] = ..., entity: _Optional[_Union[EntityFact, _Mapping]] = ...) -> None: ...

class UpsertDocumentFactsResponse(_message.Message):
    __slots__ = ("documents", "topics", "entities", "batches")
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    documents: int
    topics: int
    entities: int
    batches: int
    def __init__(self, documents: _Optional[int] = ..., topics: _Optional[int] = ..., entities: _Optional[int] = ..., batches: _Optional[int] = ...) -> None: ...

class DeleteDocumentRequest(_message.Message):
    __slots__ = ("document_id",)
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    def __init__(self, document_id: _Optional[str] = ...) -> None: ...

class DeleteDocumentResponse(_message.Message):
    __slots__ = ("deleted", "orphans_removed")
    DELETED_FIELD_NUMBER: _ClassVar[int]
    ORPHANS_REMOVED_FIELD_NUMBER: _ClassVar[int]
    deleted: bool
    orphans_removed: int
    def __init__(self, deleted: _Optional[bool] = ..., orphans_removed: _Optional[int] = ...) -> None: ...

class QueryGraphRequest(_message.Message):
    __slots__ = ("cypher", "params", "limit")
    CYPHER_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    cypher: str
    params: _struct_pb2.Struct
    limit: int
    def __init__(self, cypher: _Optional[str] = ..., params: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., limit: _Optional[int] = ...) -> None: ...

class QueryGraphResponse(_message.Message):
    __slots__ = ("columns", "rows", "truncated")
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    columns: _containers.RepeatedScalarFieldContainer[str]
    rows: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    truncated: bool
    def __init__(self, columns: _Optional[_Iterable[str]] = ..., rows: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., truncated: _Optional[bool] = ...) -> None: ...

class GetRelatedDocumentsRequest(_message.Message):
    __slots__ = ("document_id", "limit")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    limit: int
    def __init__(self, document_id: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class RelatedDocument(_message.Message):
    __slots__ = ("document_id", "title", "score", "shared_topics", "shared_entities")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    SHARED_TOPICS_FIELD_NUMBER: _ClassVar[int]
    SHARED_ENTITIES_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    title: str
    score: float
    shared_topics: _containers.RepeatedScalarFieldContainer[str]
    shared_entities: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, document_id: _Optional[str] = ..., title: _Optional[str] = ..., score: _Optional[float] = ..., shared_topics: _Optional[_Iterable[str]] = ..., shared_entities: _Optional[_Iterable[str]] = ...) -> None: ...

class GetRelatedDocumentsResponse(_message.Message):
    __slots__ = ("documents",)
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    documents: _containers.RepeatedCompositeFieldContainer[RelatedDocument]
    def __init__(self, documents: _Optional[_Iterable[_Union[RelatedDocument, _Mapping]]] = ...) -> None: ...

class GetEntityRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class EntityMention(_message.Message):
    __slots__ = ("document_id", "title", "count")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    title: str
    count: int
    def __init__(self, document_id: _Optional[str] = ..., title: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class GetEntityResponse(_message.Message):
    __slots__ = ("name", "type", "documents")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    documents: _containers.RepeatedCompositeFieldContainer[EntityMention]
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., documents: _Optional[_Iterable[_Union[EntityMention, _Mapping]]] = ...) -> None: ...

class GetGraphStatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetGraphStatsResponse(_message.Message):
    __slots__ = ("documents", "topics", "entities", "covers_edges", "mentions_edges", "backend")
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    COVERS_EDGES_FIELD_NUMBER: _ClassVar[int]
    MENTIONS_EDGES_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    documents: int
    topics: int
    entities: int
    covers_edges: int
    mentions_edges: int
    backend: str
    def __init__(self, documents: _Optional[int] = ..., topics: _Optional[int] = ..., entities: _Optional[int] = ..., covers_edges: _Optional[int] = ..., mentions_edges: _Optional[int] = ..., backend: _Optional[str] = ...) -> None: ...
