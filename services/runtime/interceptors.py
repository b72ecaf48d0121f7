"""Server and client interceptors: request id, tenant, deadline, logging and errors.

Server side, every handler kind is wrapped so that:
- a ``RequestContext`` (request id, tenant, deadline) is bound for the RPC's duration;
- a ``DomainError`` becomes a rich ``google.rpc.Status``; anything else becomes INTERNAL
  (logged with its traceback, reported without it); ``NotImplementedError`` becomes a clear
  UNIMPLEMENTED;
- a server stream that fails after its first message ends with an in-band terminal
  ``error`` event instead (HTTP/1.1 clients behind the transcoder never see trailers);
  before the first message the failure is the RPC status, so REST callers get the right
  HTTP code.
Client side, calls carry the request id and tenant on, and the caller's remaining deadline.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable

import grpc
from google.protobuf import descriptor_pool, message_factory
from grpc_status import rpc_status

from services.runtime import request_context
from services.runtime.errors import DomainError, InvalidArgument, FieldViolation, status_from_exception

log = logging.getLogger("docuthinker.rpc")

_UNTRACKED_PREFIXES = ("/grpc.health.v1.", "/grpc.reflection.")


def _metadata(details: grpc.HandlerCallDetails) -> dict[str, str]:
    return {k.lower(): v for k, v in (details.invocation_metadata or ()) if isinstance(v, str)}


def _stream_response_class(method: str):
    """The response class of a server-streaming method, if it has an in-band ``error`` field."""
    try:
        full = method.lstrip("/").replace("/", ".")
        desc = descriptor_pool.Default().FindMethodByName(full)
    except KeyError:
        return None
    output = desc.output_type
    if "error" not in output.fields_by_name:
        return None
    return message_factory.GetMessageClass(output)


async def _abort(context: grpc.aio.ServicerContext, exc: BaseException) -> None:
    status = rpc_status.to_status(status_from_exception(exc))
    await context.abort(status.code, status.details, trailing_metadata=status.trailing_metadata)


class ServerInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, service_name: str, default_tenant: str) -> None:
        self._service = service_name
        self._default_tenant = default_tenant

    async def intercept_service(
        self,
        continuation: Callable,
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or method.startswith(_UNTRACKED_PREFIXES):
            return handler
        headers = _metadata(handler_call_details)
        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(
                self._wrap_unary(handler.unary_unary, method, headers),
                handler.request_deserializer,
                handler.response_serializer,
            )
        if handler.stream_unary:
            return grpc.stream_unary_rpc_method_handler(
                self._wrap_unary(handler.stream_unary, method, headers),
                handler.request_deserializer,
                handler.response_serializer,
            )
        response_class = _stream_response_class(method)
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(
                self._wrap_stream(handler.unary_stream, method, headers, response_class),
                handler.request_deserializer,
                handler.response_serializer,
            )
        return grpc.stream_stream_rpc_method_handler(
            self._wrap_stream(handler.stream_stream, method, headers, response_class),
            handler.request_deserializer,
            handler.response_serializer,
        )

    def _context_for(self, headers: dict[str, str], context: grpc.aio.ServicerContext):
        tenant = headers.get(request_context.TENANT_HEADER) or self._default_tenant
        if not request_context.TENANT_PATTERN.match(tenant):
            raise InvalidArgument(
                "invalid tenant id in x-tenant-id metadata",
                reason="INVALID_TENANT",
                violations=[FieldViolation("x-tenant-id", "1-64 letters, digits, '.', '_' or '-'")],
            )
        remaining = context.time_remaining()
        return request_context.RequestContext(
            request_id=headers.get(request_context.REQUEST_ID_HEADER) or uuid.uuid4().hex,
            tenant=tenant,
            deadline=None if remaining is None else time.monotonic() + remaining,
        )

    def _log(self, method: str, ctx, code: str, started: float, exc: BaseException | None = None) -> None:
        fields = {
            "service": self._service,
            "method": method,
            "code": code,
            "duration_ms": round((time.perf_counter() - started) * 1000, 2),
            "request_id": ctx.request_id if ctx else None,
            "tenant": ctx.tenant if ctx else None,
        }
        if exc is not None and not isinstance(exc, DomainError):
            log.error("rpc failed", extra={"fields": fields}, exc_info=exc)
        else:
            log.info("rpc", extra={"fields": fields})

    def _wrap_unary(self, behavior, method: str, headers: dict[str, str]):
        async def wrapper(request, context: grpc.aio.ServicerContext):
            started = time.perf_counter()
            ctx = None
            token = None
            try:
                ctx = self._context_for(headers, context)
                token = request_context.bind(ctx)
                result = await behavior(request, context)
                self._log(method, ctx, "OK", started)
                return result
            except grpc.aio.AbortError:
                self._log(method, ctx, "ABORTED_BY_HANDLER", started)
                raise
            except NotImplementedError:
                exc = _unimplemented(method)
                self._log(method, ctx, exc.code.name, started, exc)
                await _abort(context, exc)
            except Exception as exc:  # noqa: BLE001 - the mapping of last resort
                self._log(method, ctx, getattr(getattr(exc, "code", None), "name", "INTERNAL"), started, exc)
                await _abort(context, exc)
            finally:
                if token is not None:
                    request_context.unbind(token)

        return wrapper

    def _wrap_stream(self, behavior, method: str, headers: dict[str, str], response_class):
        async def wrapper(request, context: grpc.aio.ServicerContext) -> AsyncIterator:
            started = time.perf_counter()
            ctx = None
            token = None
            sent = 0
            try:
                ctx = self._context_for(headers, context)
                token = request_context.bind(ctx)
                async for message in behavior(request, context):
                    sent += 1
                    yield message
                self._log(method, ctx, "OK", started)
            except grpc.aio.AbortError:
                raise
            except Exception as exc:  # noqa: BLE001
                if isinstance(exc, NotImplementedError):
                    exc = _unimplemented(method)
                self._log(method, ctx, getattr(getattr(exc, "code", None), "name", "INTERNAL"), started, exc)
                if sent and response_class is not None:
                    yield response_class(error=status_from_exception(exc))
                    return
                await _abort(context, exc)
            finally:
                if token is not None:
                    request_context.unbind(token)

        return wrapper


def _unimplemented(method: str) -> DomainError:
    from services.runtime.errors import Unimplemented

    return Unimplemented(f"{method.lstrip('/')} is not implemented yet in this build of DocuThinker")


class _ClientPropagation:
    """Adds request id and tenant metadata and the caller's remaining deadline to a call."""

    def __init__(self, default_timeout: float) -> None:
        self._default_timeout = default_timeout

    def _details(self, details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        ctx = request_context.current()
        metadata = grpc.aio.Metadata(*(details.metadata or ()))
        timeout = details.timeout
        if ctx is not None:
            if request_context.TENANT_HEADER not in metadata:
                metadata.add(request_context.TENANT_HEADER, ctx.tenant)
            if request_context.REQUEST_ID_HEADER not in metadata:
                metadata.add(request_context.REQUEST_ID_HEADER, ctx.request_id)
            remaining = ctx.time_remaining()
            if remaining is not None:
                timeout = remaining if timeout is None else min(timeout, remaining)
        if timeout is None:
            timeout = self._default_timeout
        return grpc.aio.ClientCallDetails(
            details.method, timeout, metadata, details.credentials, details.wait_for_ready
        )


class UnaryUnaryPropagation(_ClientPropagation, grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation, client_call_details, request):
        return await continuation(self._details(client_call_details), request)


class UnaryStreamPropagation(_ClientPropagation, grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(self, continuation, client_call_details, request):
        return await continuation(self._details(client_call_details), request)


class StreamUnaryPropagation(_ClientPropagation, grpc.aio.StreamUnaryClientInterceptor):
    async def intercept_stream_unary(self, continuation, client_call_details, request_iterator):
        return await continuation(self._details(client_call_details), request_iterator)


class StreamStreamPropagation(_ClientPropagation, grpc.aio.StreamStreamClientInterceptor):
    async def intercept_stream_stream(self, continuation, client_call_details, request_iterator):
        return await continuation(self._details(client_call_details), request_iterator)


def client_interceptors(default_timeout: float) -> list:
    return [
        UnaryUnaryPropagation(default_timeout),
        UnaryStreamPropagation(default_timeout),
        StreamUnaryPropagation(default_timeout),
        StreamStreamPropagation(default_timeout),
    ]
