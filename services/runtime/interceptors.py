"""Server and client interceptors: request id, tenant, deadline, logging and errors.

Server side, every handler kind is wrapped so that:
- a ``RequestContext`` (request id, tenant, deadline) is bound for the RPC's duration;
- a request message holding an enum number its enum does not define is refused (INVALID_ARGUMENT,
  ``services.runtime.request_validation``) before the handler runs;
- a ``DomainError`` becomes a rich ``google.rpc.Status``; anything else becomes INTERNAL
  (logged with its traceback, reported without it); ``NotImplementedError`` becomes a clear
  UNIMPLEMENTED;
- a server stream that fails after its first message ends with an in-band terminal
  ``error`` event instead (HTTP/1.1 clients behind the transcoder never see trailers);
  before the first message the failure is the RPC status, so REST callers get the right
  HTTP code.
Client side, calls carry the request id, tenant and role on, and the caller's remaining deadline.

Both sides record the mesh's RPC metrics (``services.runtime.metrics``) and, with tracing on,
a span per RPC that continues the caller's trace (``services.runtime.tracing``); an error's
``ErrorInfo.metadata`` then carries the ``trace_id`` a user can quote.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable

import grpc
from google.protobuf import descriptor_pool, message_factory
from grpc_status import rpc_status

from services.runtime import metrics, request_context, request_validation, tracing
from services.runtime.errors import DomainError, FieldViolation, InvalidArgument, status_from_exception

log = logging.getLogger("docuthinker.rpc")

_UNTRACKED_PREFIXES = ("/grpc.health.v1.", "/grpc.reflection.")


def _metadata(details: grpc.HandlerCallDetails) -> dict[str, str]:
    """Text metadata by lower-cased key; a repeated key reads as its values comma-joined, as HTTP
    reads repeated headers, so a duplicated ``x-tenant-id`` is never silently one of its values."""
    headers: dict[str, str] = {}
    for key, value in details.invocation_metadata or ():
        if isinstance(value, str):
            key = key.lower()
            headers[key] = f"{headers[key]},{value}" if key in headers else value
    return headers


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
    status = rpc_status.to_status(status_from_exception(exc, tracing.current_trace_id()))
    await context.abort(status.code, status.details, trailing_metadata=status.trailing_metadata)


class ServerInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, service_name: str, default_tenant: str, record_metrics: bool = True) -> None:
        self._service = service_name
        self._default_tenant = default_tenant
        self._metrics = record_metrics
        self._in_flight = metrics.SERVER_IN_FLIGHT.labels(service_name)

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
        # Absent: the default tenant. Present but empty, repeated or malformed: refused, never the default.
        tenant = headers.get(request_context.TENANT_HEADER, self._default_tenant)
        if not request_context.TENANT_PATTERN.match(tenant):
            raise InvalidArgument(
                "invalid tenant id in x-tenant-id metadata (empty, repeated or malformed)",
                reason="INVALID_TENANT",
                violations=[FieldViolation("x-tenant-id", "one value of 1-64 letters, digits, '.', '_' or '-'")],
            )
        remaining = context.time_remaining()
        return request_context.RequestContext(
            request_id=headers.get(request_context.REQUEST_ID_HEADER) or uuid.uuid4().hex,
            tenant=tenant,
            deadline=None if remaining is None else time.monotonic() + remaining,
            # A repeated or unknown role reads as a user: only one exact "admin" grants more.
            role=request_context.ADMIN if headers.get(request_context.ROLE_HEADER) == request_context.ADMIN
            else request_context.USER,
            subject=headers.get(request_context.SUBJECT_HEADER, ""),
        )

    def _log(self, method: str, ctx, code: str, started: float, exc: BaseException | None = None,
             **extra: object) -> None:
        elapsed = time.perf_counter() - started
        fields = {
            "service": self._service,
            "method": method,
            "code": code,
            "duration_ms": round(elapsed * 1000, 2),
            "request_id": ctx.request_id if ctx else None,
            "tenant": ctx.tenant if ctx else None,
            **extra,
        }
        if code == "CANCELLED":
            # The caller went away (a closed connection, its own deadline or cancel): one line, as for any end.
            log.info("rpc cancelled by the client", extra={"fields": fields})
        elif exc is not None and not isinstance(exc, DomainError):
            log.error("rpc failed", extra={"fields": fields}, exc_info=exc)
        else:
            log.info("rpc", extra={"fields": fields})

    def _begin(self, method: str, headers: dict[str, str]):
        if self._metrics:
            metrics.SERVER_STARTED.labels(self._service, metrics.method_label(method)).inc()
            self._in_flight.inc()
        return tracing.start_server_span(method, headers) if tracing.enabled() else None

    def _end(self, span, method: str, code: str, started: float) -> None:
        """Exactly once per RPC, however it ended (a client that went away mid-stream: CANCELLED)."""
        if self._metrics:
            self._in_flight.dec()
            label = metrics.method_label(method)
            metrics.SERVER_HANDLED.labels(self._service, label, code).inc()
            metrics.SERVER_LATENCY.labels(self._service, label).observe(time.perf_counter() - started)
        if span is not None:
            tracing.end_server_span(span[0], span[1], code)

    def _wrap_unary(self, behavior, method: str, headers: dict[str, str]):
        async def wrapper(request, context: grpc.aio.ServicerContext):
            started = time.perf_counter()
            ctx = None
            token = None
            span = self._begin(method, headers)
            code = "INTERNAL"
            try:
                ctx = self._context_for(headers, context)
                token = request_context.bind(ctx)
                request_validation.check_request(request)
                result = await behavior(request, context)
                code = "OK"
                self._log(method, ctx, code, started)
                return result
            except grpc.aio.AbortError:
                code = "ABORTED_BY_HANDLER"
                self._log(method, ctx, code, started)
                raise
            except asyncio.CancelledError:
                code = "CANCELLED"
                self._log(method, ctx, code, started)
                raise
            except NotImplementedError:
                exc = _unimplemented(method)
                code = exc.code.name
                self._log(method, ctx, code, started, exc)
                await _abort(context, exc)
            except Exception as exc:  # noqa: BLE001 - the mapping of last resort
                code = getattr(getattr(exc, "code", None), "name", "INTERNAL")
                self._log(method, ctx, code, started, exc)
                await _abort(context, exc)
            finally:
                if token is not None:
                    request_context.unbind(token)
                self._end(span, method, code, started)

        return wrapper

    def _wrap_stream(self, behavior, method: str, headers: dict[str, str], response_class):
        async def wrapper(request, context: grpc.aio.ServicerContext) -> AsyncIterator:
            started = time.perf_counter()
            ctx = None
            token = None
            sent = 0
            span = self._begin(method, headers)
            code = "CANCELLED"
            try:
                ctx = self._context_for(headers, context)
                token = request_context.bind(ctx)
                request_validation.check_request(request)
                async for message in behavior(request, context):
                    sent += 1
                    yield message
                code = "OK"
                self._log(method, ctx, code, started)
            except grpc.aio.AbortError:
                code = "ABORTED_BY_HANDLER"
                self._log(method, ctx, code, started, sent=sent)
                raise
            except (asyncio.CancelledError, GeneratorExit):
                code = "CANCELLED"
                self._log(method, ctx, code, started, sent=sent)
                raise
            except Exception as exc:  # noqa: BLE001
                if isinstance(exc, NotImplementedError):
                    exc = _unimplemented(method)
                code = getattr(getattr(exc, "code", None), "name", "INTERNAL")
                self._log(method, ctx, code, started, exc)
                if sent and response_class is not None:
                    yield response_class(error=status_from_exception(exc, tracing.current_trace_id()))
                    return
                await _abort(context, exc)
            finally:
                if token is not None:
                    request_context.unbind(token)
                self._end(span, method, code, started)

        return wrapper


def _unimplemented(method: str) -> DomainError:
    from services.runtime.errors import Unimplemented

    return Unimplemented(f"{method.lstrip('/')} is not implemented yet in this build of DocuThinker")


class _ClientPropagation:
    """Adds request id, tenant and trace metadata and the caller's remaining deadline to a call;
    records the call's metrics (and span) when it completes."""

    def __init__(self, default_timeout: float, record_metrics: bool = True) -> None:
        self._default_timeout = default_timeout
        self._metrics = record_metrics

    def _details(self, details: grpc.aio.ClientCallDetails, trace_headers=None) -> grpc.aio.ClientCallDetails:
        ctx = request_context.current()
        metadata = grpc.aio.Metadata(*(details.metadata or ()))
        timeout = details.timeout
        if ctx is not None:
            if request_context.TENANT_HEADER not in metadata:
                metadata.add(request_context.TENANT_HEADER, ctx.tenant)
            if request_context.REQUEST_ID_HEADER not in metadata:
                metadata.add(request_context.REQUEST_ID_HEADER, ctx.request_id)
            if request_context.ROLE_HEADER not in metadata:
                metadata.add(request_context.ROLE_HEADER, ctx.role)
            if ctx.subject and request_context.SUBJECT_HEADER not in metadata:
                metadata.add(request_context.SUBJECT_HEADER, ctx.subject)
            remaining = ctx.time_remaining()
            if remaining is not None:
                timeout = remaining if timeout is None else min(timeout, remaining)
        for key, value in (trace_headers or {}).items():
            metadata[key] = value
        if timeout is None:
            timeout = self._default_timeout
        return grpc.aio.ClientCallDetails(
            details.method, timeout, metadata, details.credentials, details.wait_for_ready
        )

    def _begin(self, details: grpc.aio.ClientCallDetails):
        method = details.method.decode() if isinstance(details.method, bytes) else details.method
        span, headers = tracing.start_client_span(method) if tracing.enabled() else (None, None)
        record = _ClientCall(method, span, time.perf_counter(), self._metrics) if self._metrics or span else None
        return record, self._details(details, headers)

    async def _unary(self, continuation, client_call_details, request):
        call_record, details = self._begin(client_call_details)
        call = await continuation(details, request)
        if call_record is None:
            return call
        try:
            await call
        except grpc.aio.AioRpcError as exc:
            call_record.done(exc.code())
        except BaseException:
            call_record.done(grpc.StatusCode.CANCELLED)
            raise
        else:
            call_record.done(grpc.StatusCode.OK)
        return call

    async def _streaming(self, continuation, client_call_details, request):
        call_record, details = self._begin(client_call_details)
        call = await continuation(details, request)
        if call_record is not None:
            call.add_done_callback(call_record.on_done)
        return call


class _ClientCall:
    """One outgoing call, between its start and its status."""

    __slots__ = ("method", "span", "started", "record_metrics")

    def __init__(self, method: str, span, started: float, record_metrics: bool) -> None:
        self.method, self.span, self.started, self.record_metrics = method, span, started, record_metrics

    def done(self, code: grpc.StatusCode) -> None:
        if self.record_metrics:
            label = metrics.method_label(self.method)
            metrics.CLIENT_HANDLED.labels(metrics.process_service(), label, code.name).inc()
            elapsed = time.perf_counter() - self.started
            metrics.CLIENT_LATENCY.labels(metrics.process_service(), label).observe(elapsed)
        if self.span is not None:
            tracing.end_client_span(self.span, code.name)

    def on_done(self, call) -> None:
        # A done callback cannot await ``call.code()``; the status is known by now, so read it in a task.
        async def record() -> None:
            try:
                code = await call.code()
            except Exception:  # noqa: BLE001 - a cancelled call has no code to read
                code = grpc.StatusCode.CANCELLED
            self.done(code if code is not None else grpc.StatusCode.CANCELLED)

        try:
            asyncio.get_running_loop().create_task(record())
        except RuntimeError:  # no loop any more (interpreter shutdown)
            pass


class UnaryUnaryPropagation(_ClientPropagation, grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation, client_call_details, request):
        return await self._unary(continuation, client_call_details, request)


class UnaryStreamPropagation(_ClientPropagation, grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(self, continuation, client_call_details, request):
        return await self._streaming(continuation, client_call_details, request)


class StreamUnaryPropagation(_ClientPropagation, grpc.aio.StreamUnaryClientInterceptor):
    async def intercept_stream_unary(self, continuation, client_call_details, request_iterator):
        return await self._streaming(continuation, client_call_details, request_iterator)


class StreamStreamPropagation(_ClientPropagation, grpc.aio.StreamStreamClientInterceptor):
    async def intercept_stream_stream(self, continuation, client_call_details, request_iterator):
        return await self._streaming(continuation, client_call_details, request_iterator)


def client_interceptors(default_timeout: float, record_metrics: bool = True) -> list:
    return [
        UnaryUnaryPropagation(default_timeout, record_metrics),
        UnaryStreamPropagation(default_timeout, record_metrics),
        StreamUnaryPropagation(default_timeout, record_metrics),
        StreamStreamPropagation(default_timeout, record_metrics),
    ]
