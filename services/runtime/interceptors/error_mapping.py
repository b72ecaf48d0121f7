"""Error mapping: what the handler raised becomes the status the caller reads.

A ``DomainError`` becomes a rich ``google.rpc.Status`` (its ``ErrorInfo.metadata`` carries the
``trace_id`` a user can quote when tracing is on); anything else becomes INTERNAL, reported without its
traceback; ``NotImplementedError`` a clear UNIMPLEMENTED. A server stream that fails after its first
message ends with an in-band terminal ``error`` event instead (HTTP/1.1 clients behind the transcoder never
see trailers); before the first message the failure is the RPC status, so REST callers get the right HTTP code.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, NoReturn

import grpc
from grpc_status import rpc_status

from services.runtime import tracing
from services.runtime.errors import DomainError, Unimplemented, status_from_exception
from services.runtime.interceptors.server import Inbound, Messages, ServerCall

_PASSED_ON = (grpc.aio.AbortError, asyncio.CancelledError)
"""Not errors to map: the handler already chose a status, or the caller went away."""


class ErrorMapping(Inbound):
    async def unary(self, call: ServerCall, request: Any) -> Any:
        try:
            return await self.inner.unary(call, request)
        except _PASSED_ON:
            raise
        except Exception as exc:  # noqa: BLE001 - the mapping of last resort
            await abort(call.context, _noted(call, exc))

    async def stream(self, call: ServerCall, request: Any) -> Messages:
        try:
            async with contextlib.aclosing(self.inner.stream(call, request)) as messages:
                async for message in messages:
                    yield message
        except (*_PASSED_ON, GeneratorExit):
            raise
        except Exception as exc:  # noqa: BLE001 - the mapping of last resort
            error = _noted(call, exc)
            if call.sent and call.response_class is not None:
                yield call.response_class(error=status_from_exception(error, tracing.current_trace_id()))
                return
            await abort(call.context, error)


def _noted(call: ServerCall, exc: Exception) -> BaseException:
    """The error to report for ``exc``, noted on the call (its code and, for the log, the error)."""
    error: BaseException = _unimplemented(call.method) if isinstance(exc, NotImplementedError) else exc
    call.code = getattr(getattr(error, "code", None), "name", "INTERNAL")
    call.error = error
    return error


async def abort(context: grpc.aio.ServicerContext, exc: BaseException) -> NoReturn:
    """Ends the call with the status of ``exc``."""
    status = rpc_status.to_status(status_from_exception(exc, tracing.current_trace_id()))
    await context.abort(status.code, status.details, trailing_metadata=status.trailing_metadata)
    raise AssertionError("ServicerContext.abort returned instead of raising")


def _unimplemented(method: str) -> DomainError:
    return Unimplemented(f"{method.lstrip('/')} is not implemented yet in this build of DocuThinker")
