"""gRPC transport of the NLP service: maps protobuf to domain calls, nothing more."""

from __future__ import annotations

import asyncio
import time

from docuthinker.nlp.v1 import nlp_service_pb2 as pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as pb_grpc
from services.nlp import analytics
from services.nlp.sources import resolve_text
from services.runtime.errors import status_from_exception

LOCAL_ENGINE = pb.Engine(provider="local", model="docuthinker-text-stats")


def _analytics_pb(result: analytics.Analytics) -> pb.ComputeAnalyticsResponse:
    return pb.ComputeAnalyticsResponse(
        characters=result.characters,
        words=result.words,
        sentences=result.sentences,
        paragraphs=result.paragraphs,
        reading_time_minutes=result.reading_time_minutes,
        flesch_reading_ease=result.flesch_reading_ease,
        lexical_diversity=result.lexical_diversity,
        average_sentence_length=result.average_sentence_length,
        top_keywords=[pb.KeywordCount(keyword=k, count=c) for k, c in result.top_keywords],
        engine=LOCAL_ENGINE,
    )


class NlpServicer(pb_grpc.NlpServiceServicer):
    async def ComputeAnalytics(self, request: pb.ComputeAnalyticsRequest, context) -> pb.ComputeAnalyticsResponse:
        text = await resolve_text(request)
        return _analytics_pb(analytics.compute(text, request.top_keywords or 10))

    async def Analyze(self, request: pb.AnalyzeRequest, context):
        text = await resolve_text(request)
        operations = list(dict.fromkeys(request.operations)) or [pb.OPERATION_ANALYTICS]
        runners = {pb.OPERATION_ANALYTICS: lambda: ("analytics", _analytics_pb(analytics.compute(text)))}

        async def run(op: int) -> pb.OperationResult:
            started = time.perf_counter()
            try:
                runner = runners.get(op)
                if runner is None:
                    raise NotImplementedError
                field, value = await asyncio.to_thread(runner)
                result = pb.OperationResult(operation=op, **{field: value})
            except NotImplementedError:
                from services.runtime.errors import Unimplemented

                result = pb.OperationResult(
                    operation=op,
                    error=Unimplemented(f"{pb.Operation.Name(op)} is not implemented yet").to_status_proto(),
                )
            except Exception as exc:  # noqa: BLE001 - reported in-band per operation
                result = pb.OperationResult(operation=op, error=status_from_exception(exc))
            result.duration_ms = (time.perf_counter() - started) * 1000
            return result

        ok = failed = 0
        for next_done in asyncio.as_completed([run(op) for op in operations]):
            result = await next_done
            if result.WhichOneof("result") == "error":
                failed += 1
            else:
                ok += 1
            yield pb.AnalyzeResponse(result=result)
        yield pb.AnalyzeResponse(done=pb.AnalyzeDone(succeeded=ok, failed=failed))
