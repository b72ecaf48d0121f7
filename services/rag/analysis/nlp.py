"""The NLP service as the analysis pipeline (and the crew's ``document_topics``) need it.

Text is sent inline: NLP fetching a document's text by id would be a round trip back into
this very service. Calls run in the RPC's request context, so the tenant, request id and the
caller's remaining deadline travel with them (``service_channel``'s interceptors). A failed
call raises a ``DomainError`` that keeps the NLP service's status: its code, message and
``ErrorInfo`` (e.g. translation's FAILED_PRECONDITION naming the variables that enable it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from docuthinker.nlp.v1 import nlp_service_pb2 as nlp_pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as nlp_grpc
from services.rag.crew.evidence import Topic
from services.runtime import MeshSettings, service_channel
from services.runtime.errors import DomainError, FieldViolation

_LABELS = {
    nlp_pb.SENTIMENT_LABEL_POSITIVE: "positive",
    nlp_pb.SENTIMENT_LABEL_NEUTRAL: "neutral",
    nlp_pb.SENTIMENT_LABEL_NEGATIVE: "negative",
}


@dataclass(frozen=True)
class Engine:
    provider: str
    model: str


@dataclass(frozen=True)
class Summary:
    text: str
    sentences: tuple[str, ...]
    """The source sentences of an extractive summary, in document order (empty for an LLM summary)."""
    engine: Engine


@dataclass(frozen=True)
class Sentiment:
    label: str
    score: float
    confidence: float


@dataclass(frozen=True)
class Translation:
    text: str
    target_language: str
    engine: Engine


class NlpPort(Protocol):
    async def summarize(self, text: str, max_sentences: int) -> Summary: ...

    async def topics(self, text: str, limit: int) -> list[Topic]: ...

    async def sentiment(self, text: str) -> Sentiment: ...

    async def translate(self, text: str, target_language: str) -> Translation: ...


class NlpClient:
    """``NlpService`` over a mesh channel opened on first use (inside the server's event loop)."""

    def __init__(self, mesh: MeshSettings) -> None:
        self._mesh = mesh
        self._channel: grpc.aio.Channel | None = None

    def _stub(self) -> nlp_grpc.NlpServiceStub:
        if self._channel is None:
            self._channel = service_channel("nlp", self._mesh)
        return nlp_grpc.NlpServiceStub(self._channel)

    async def summarize(self, text: str, max_sentences: int) -> Summary:
        try:
            reply = await self._stub().Summarize(nlp_pb.SummarizeRequest(text=text, max_sentences=max_sentences))
        except grpc.aio.AioRpcError as exc:
            raise remote_error(exc) from None
        return Summary(reply.summary, tuple(s.text for s in reply.sentences), _engine(reply.engine))

    async def topics(self, text: str, limit: int) -> list[Topic]:
        try:
            reply = await self._stub().ExtractTopics(nlp_pb.ExtractTopicsRequest(text=text, max_topics=limit))
        except grpc.aio.AioRpcError as exc:
            raise remote_error(exc) from None
        return [Topic(t.name, t.weight) for t in reply.topics]

    async def sentiment(self, text: str) -> Sentiment:
        try:
            reply = await self._stub().AnalyzeSentiment(nlp_pb.AnalyzeSentimentRequest(text=text))
        except grpc.aio.AioRpcError as exc:
            raise remote_error(exc) from None
        overall = reply.overall
        return Sentiment(_LABELS.get(overall.label, "unspecified"), overall.score, overall.confidence)

    async def translate(self, text: str, target_language: str) -> Translation:
        request = nlp_pb.TranslateTextRequest(text=text, target_language=target_language)
        try:
            reply = await self._stub().TranslateText(request)
        except grpc.aio.AioRpcError as exc:
            raise remote_error(exc) from None
        return Translation(reply.translated, reply.target_language, _engine(reply.engine))

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None


def _engine(engine: nlp_pb.Engine) -> Engine:
    return Engine(engine.provider, engine.model)


def remote_error(exc: grpc.aio.AioRpcError) -> DomainError:
    """The NLP service's failure as a domain error with the same code, message and details."""
    reason, metadata, violations = exc.code().name, {}, []
    status = rpc_status.from_call(exc)
    for detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        bad = error_details_pb2.BadRequest()
        if detail.Unpack(info):
            reason, metadata = info.reason or reason, dict(info.metadata)
        elif detail.Unpack(bad):
            violations = [FieldViolation(v.field, v.description) for v in bad.field_violations]
    return DomainError(exc.details() or f"nlp: {exc.code().name}", reason=reason, metadata=metadata,
                       violations=violations, code=exc.code())
