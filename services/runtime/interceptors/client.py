"""The client side: every outgoing call of a mesh channel passes its ``ClientConcern``s.

A concern adjusts the call before it starts (metadata, timeout) and may ask to hear its status. One
adapter per kind of call (gRPC asks for four classes) runs the concerns, so each concern is written once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import grpc

Finish = Callable[[grpc.StatusCode], None]


@dataclass(slots=True)
class OutgoingCall:
    method: str
    metadata: grpc.aio.Metadata
    timeout: float | None


class ClientConcern(Protocol):
    def begin(self, call: OutgoingCall) -> Finish | None:
        """Adjusts ``call`` before it starts; returns what to run with its status, if anything."""
        ...


class _Outbound:
    def __init__(self, concerns: Sequence[ClientConcern]) -> None:
        self._concerns = tuple(concerns)

    def _start(self, details: grpc.aio.ClientCallDetails) -> tuple[grpc.aio.ClientCallDetails, list[Finish]]:
        method = details.method.decode() if isinstance(details.method, bytes) else details.method
        call = OutgoingCall(method, grpc.aio.Metadata(*(details.metadata or ())), details.timeout)
        finishes = [finish for concern in self._concerns if (finish := concern.begin(call)) is not None]
        started = grpc.aio.ClientCallDetails(details.method, call.timeout, call.metadata, details.credentials,
                                             details.wait_for_ready)
        return started, finishes

    async def _unary(self, continuation: Callable[..., Any], details: grpc.aio.ClientCallDetails,
                     request: Any) -> Any:
        details, finishes = self._start(details)
        call = await continuation(details, request)
        if not finishes:
            return call
        try:
            await call
        except grpc.aio.AioRpcError as exc:
            _finish(finishes, exc.code())
        except BaseException:
            _finish(finishes, grpc.StatusCode.CANCELLED)
            raise
        else:
            _finish(finishes, grpc.StatusCode.OK)
        return call

    async def _streaming(self, continuation: Callable[..., Any], details: grpc.aio.ClientCallDetails,
                         request: Any) -> Any:
        details, finishes = self._start(details)
        call = await continuation(details, request)
        if finishes:
            call.add_done_callback(lambda done: _finish_later(finishes, done))
        return call


def _finish(finishes: Sequence[Finish], code: grpc.StatusCode | None) -> None:
    for finish in finishes:
        finish(grpc.StatusCode.CANCELLED if code is None else code)


def _finish_later(finishes: Sequence[Finish], call: grpc.aio.Call) -> None:
    # A done callback cannot await ``call.code()``; the status is known by now, so read it in a task.
    async def read() -> None:
        try:
            code = await call.code()
        except Exception:  # noqa: BLE001 - a cancelled call has no code to read
            code = grpc.StatusCode.CANCELLED
        _finish(finishes, code)

    try:
        asyncio.get_running_loop().create_task(read())
    except RuntimeError:  # no loop any more (interpreter shutdown)
        pass


class _UnaryUnary(_Outbound, grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation: Callable[..., Any], details: grpc.aio.ClientCallDetails,
                                    request: Any) -> Any:
        return await self._unary(continuation, details, request)


class _UnaryStream(_Outbound, grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(self, continuation: Callable[..., Any], details: grpc.aio.ClientCallDetails,
                                     request: Any) -> Any:
        return await self._streaming(continuation, details, request)


class _StreamUnary(_Outbound, grpc.aio.StreamUnaryClientInterceptor):
    async def intercept_stream_unary(self, continuation: Callable[..., Any], details: grpc.aio.ClientCallDetails,
                                     request_iterator: Any) -> Any:
        return await self._streaming(continuation, details, request_iterator)


class _StreamStream(_Outbound, grpc.aio.StreamStreamClientInterceptor):
    async def intercept_stream_stream(self, continuation: Callable[..., Any], details: grpc.aio.ClientCallDetails,
                                      request_iterator: Any) -> Any:
        return await self._streaming(continuation, details, request_iterator)


def client_interceptors(concerns: Sequence[ClientConcern]) -> list[grpc.aio.ClientInterceptor]:
    """The channel interceptors running ``concerns`` (in order) on every kind of call; none without any."""
    if not concerns:
        return []
    return [_UnaryUnary(concerns), _UnaryStream(concerns), _StreamUnary(concerns), _StreamStream(concerns)]
