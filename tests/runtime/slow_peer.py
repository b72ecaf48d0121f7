"""A one-method NLP server for keepalive tests, run as its own process (so it can be paused):
``python -m tests.runtime.slow_peer PORTFILE`` writes its port to PORTFILE and serves until killed."""

from __future__ import annotations

import asyncio
import pathlib
import sys

from docuthinker.nlp.v1 import nlp_service_pb2 as pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as pb_grpc
from services.runtime import MeshSettings, ServiceBinding, create_server


class _Slow(pb_grpc.NlpServiceServicer):
    async def ComputeAnalytics(self, request, context):
        await asyncio.sleep(float(request.text or 0))
        return pb.ComputeAnalyticsResponse(characters=len(request.text))


async def _main(port_file: pathlib.Path) -> None:
    binding = ServiceBinding(name="nlp", full_names=["docuthinker.nlp.v1.NlpService"],
                             register=lambda server: pb_grpc.add_NlpServiceServicer_to_server(_Slow(), server))
    running = await create_server(binding, MeshSettings(metrics_enabled=False), port=0)
    port_file.write_text(str(running.port))
    await running.server.wait_for_termination()


if __name__ == "__main__":
    asyncio.run(_main(pathlib.Path(sys.argv[1])))
