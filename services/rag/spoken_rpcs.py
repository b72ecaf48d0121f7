"""gRPC transport of spoken questions (a mixin of ``RagServicer``): protobuf <-> ``SpokenQuestions``."""

from __future__ import annotations

from docuthinker.rag.v1 import rag_service_pb2 as pb
from services.rag.answers import messages as msg
from services.rag.spoken import SpokenQuestions
from services.runtime.request_context import current_tenant


class SpokenRpcs:
    spoken: SpokenQuestions

    async def SpokenQuery(self, request: pb.SpokenQueryRequest, context) -> pb.SpokenQueryResponse:
        result = await self.spoken.ask(current_tenant(), request.audio.data, request.top_k,
                                       list(request.document_ids))
        t = result.transcript
        return pb.SpokenQueryResponse(transcript=t.text, language=t.language, audio_seconds=t.duration,
                                      speech_model=f"whisper-{t.model}", answer=msg.answer_pb(result.answer))
