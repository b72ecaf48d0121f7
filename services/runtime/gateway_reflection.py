"""Server reflection for the gateway: every public service of the mesh, from one of its services.

grpcurl at Envoy (``grpcurl -plaintext HOST:8080 list``) needs one reflection endpoint that knows all four
public services. Envoy routes the reflection methods to the orchestrator and marks those requests with
``GATEWAY_HEADER`` (``gateway/rpc_routes.py``); the orchestrator, which imports every service's generated
code, then answers for all of them. Called at its own port, it describes only its own services, as every
service does. Only ``v1alpha`` exists in grpcio-reflection; grpcurl falls back to it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc
from grpc_reflection.v1alpha._async import ReflectionServicer

GATEWAY_HEADER = "x-docuthinker-gateway-reflection"
METHOD_PREFIXES = ("/grpc.reflection.v1alpha.ServerReflection/", "/grpc.reflection.v1.ServerReflection/")


class GatewayReflection(reflection_pb2_grpc.ServerReflectionServicer):
    """Answers with ``own`` names, or with ``public`` ones when the request came through the gateway."""

    def __init__(self, own: Sequence[str], public: Sequence[str]) -> None:
        self._own = ReflectionServicer(list(own))
        self._public = ReflectionServicer(list(dict.fromkeys([*own, *public])))

    async def ServerReflectionInfo(self, request_iterator: AsyncIterator[Any],
                                   context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        metadata = dict(context.invocation_metadata() or ())
        chosen = self._public if metadata.get(GATEWAY_HEADER) == "1" else self._own
        async for response in chosen.ServerReflectionInfo(request_iterator, context):
            yield response


def enable(server: grpc.aio.Server, own: Sequence[str], public: Sequence[str]) -> None:
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(
        GatewayReflection([*own, reflection.SERVICE_NAME], public), server)
