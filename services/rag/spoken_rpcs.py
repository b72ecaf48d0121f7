"""gRPC transport of spoken questions (a mixin of ``RagServicer``): protobuf <-> ``SpokenQuestions``."""

from __future__ import annotations

from typing import TypeVar

from docuthinker.rag.v1 import rag_service_pb2 as pb
from services.rag import streamed_body
from services.rag.answers import messages as msg
from services.rag.spoken import SpokenAnswer, SpokenQuestions
from services.runtime.request_context import current_tenant

R = TypeVar("R", pb.SpokenQueryResponse, pb.SpokenQueryBodyResponse)


class SpokenRpcs:
    spoken: SpokenQuestions

    async def SpokenQuery(self, request: pb.SpokenQueryRequest, context) -> pb.SpokenQueryResponse:
        result = await self.spoken.ask(current_tenant(), request.audio.data, request.top_k,
                                       list(request.document_ids))
        return _response(result, pb.SpokenQueryResponse)

    async def SpokenQueryBody(self, request_iterator, context) -> pb.SpokenQueryBodyResponse:
        first, _, recording = await streamed_body.gather(request_iterator, "audio", self.spoken.check_size)
        result = await self.spoken.ask(current_tenant(), recording, first.top_k, list(first.document_ids))
        return _response(result, pb.SpokenQueryBodyResponse)


def _response(result: SpokenAnswer, kind: type[R]) -> R:
    t = result.transcript
    return kind(transcript=t.text, language=t.language, audio_seconds=t.duration, speech_model=f"whisper-{t.model}",
                answer=msg.answer_pb(result.answer))
