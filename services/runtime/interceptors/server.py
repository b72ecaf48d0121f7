"""The server side: one gRPC interceptor that runs every RPC through a chain of concerns.

A concern is an ``Inbound``: it sees the call (``ServerCall``) and the request, does its part and hands
on to ``inner``, the rest of the chain, which ends at the servicer's handler. A concern relies only on
those outside it (the error mapping on the span the observability concern opened, the handler on the
bound request context), and notes what it learnt on the call for those outside it to read (the request
context, the status code, the error, the messages sent).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import grpc
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.message import Message

from services.runtime.request_context import RequestContext

UNTRACKED_PREFIXES = ("/grpc.health.v1.", "/grpc.reflection.")
"""Health and reflection skip the chain: probes and schema reads, open to all and not worth a log line."""

Messages = AsyncGenerator[Any, None]


@dataclass(slots=True)
class ServerCall:
    """One incoming RPC, as the chain of concerns sees it."""

    service: str
    method: str
    headers: Mapping[str, str]
    """Text metadata by lower-cased key; a repeated key reads as its values comma-joined."""
    metadata: Sequence[tuple[str, str | bytes]]
    """The metadata as sent (a check that must see each value, such as the mesh credential's, reads this)."""
    context: grpc.aio.ServicerContext
    behavior: Callable[..., Any]
    """The servicer's handler."""
    server_streaming: bool = False
    response_class: type[Message] | None = None
    """A server stream's response class, when it has an in-band ``error`` field."""
    started: float = field(default_factory=time.perf_counter)
    request_context: RequestContext | None = None
    code: str | None = None
    """The status the call ended with, set by the concern that ended it."""
    error: BaseException | None = None
    sent: int = 0
    """Messages a server stream's handler produced."""


class Inbound:
    """One concern of handling an RPC; this base hands everything on to ``inner`` unchanged."""

    def __init__(self, inner: Inbound) -> None:
        self.inner = inner

    async def unary(self, call: ServerCall, request: Any) -> Any:
        return await self.inner.unary(call, request)

    def stream(self, call: ServerCall, request: Any) -> Messages:
        return self.inner.stream(call, request)


Concern = Callable[[Inbound], Inbound]
"""Builds a concern around the rest of the chain (a class, or a ``functools.partial`` of one)."""


class _Handler(Inbound):
    """The end of the chain: the servicer's own handler."""

    def __init__(self) -> None:
        pass

    async def unary(self, call: ServerCall, request: Any) -> Any:
        return await call.behavior(request, call.context)

    async def stream(self, call: ServerCall, request: Any) -> Messages:
        async for message in call.behavior(request, call.context):
            call.sent += 1
            yield message


def chain(concerns: Sequence[Concern]) -> Inbound:
    inbound: Inbound = _Handler()
    for make in reversed(concerns):
        inbound = make(inbound)
    return inbound


class ChainInterceptor(grpc.aio.ServerInterceptor):
    """Wraps every handler of a server (but health and reflection) in the chain of ``concerns``."""

    def __init__(self, service: str, concerns: Sequence[Concern]) -> None:
        self._service = service
        self._chain = chain(concerns)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler | None]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(details)
        method: str = details.method
        if handler is None or method.startswith(UNTRACKED_PREFIXES):
            return handler
        metadata = tuple(details.invocation_metadata or ())
        headers = _headers(metadata)
        service, inbound = self._service, self._chain
        if handler.unary_unary or handler.stream_unary:
            behavior = handler.unary_unary or handler.stream_unary

            async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                return await inbound.unary(ServerCall(service, method, headers, metadata, context, behavior), request)

            make = grpc.unary_unary_rpc_method_handler if handler.unary_unary else grpc.stream_unary_rpc_method_handler
            return make(unary, handler.request_deserializer, handler.response_serializer)

        behavior = handler.unary_stream or handler.stream_stream
        response_class = _stream_response_class(method)

        # An async generator function, not a function returning one: gRPC runs any other kind in a thread.
        async def stream(request: Any, context: grpc.aio.ServicerContext) -> Messages:
            call = ServerCall(service, method, headers, metadata, context, behavior, True, response_class)
            # Closed when gRPC stops reading early, so each concern's cleanup runs, innermost first.
            async with contextlib.aclosing(inbound.stream(call, request)) as messages:
                async for message in messages:
                    yield message

        make = grpc.unary_stream_rpc_method_handler if handler.unary_stream else grpc.stream_stream_rpc_method_handler
        return make(stream, handler.request_deserializer, handler.response_serializer)


def server_interceptor(service: str, concerns: Sequence[Concern]) -> grpc.aio.ServerInterceptor:
    """The interceptor running ``concerns`` (outermost first) around every handler of ``service``."""
    return ChainInterceptor(service, concerns)


def _headers(metadata: Sequence[tuple[str, str | bytes]]) -> dict[str, str]:
    """Text metadata by lower-cased key; a repeated key reads as its values comma-joined, as HTTP
    reads repeated headers, so a duplicated ``x-tenant-id`` is never silently one of its values."""
    headers: dict[str, str] = {}
    for key, value in metadata:
        if isinstance(value, str):
            key = key.lower()
            headers[key] = f"{headers[key]},{value}" if key in headers else value
    return headers


@lru_cache(maxsize=512)
def _stream_response_class(method: str) -> type[Message] | None:
    """The response class of a server-streaming method, if it has an in-band ``error`` field."""
    try:
        described = descriptor_pool.Default().FindMethodByName(method.lstrip("/").replace("/", "."))
    except KeyError:
        return None
    output = described.output_type
    if "error" not in output.fields_by_name:
        return None
    response_class: type[Message] = message_factory.GetMessageClass(output)
    return response_class
