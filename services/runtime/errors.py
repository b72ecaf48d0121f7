"""Domain errors and their mapping to ``google.rpc.Status`` (AIP-193).

Domain code raises these; the server interceptor turns them into a gRPC status whose
``grpc-status-details-bin`` trailer carries ``ErrorInfo`` and ``BadRequest`` details,
which Envoy's transcoder renders as the JSON body of the HTTP error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import Message
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

ERROR_DOMAIN = "docuthinker.dev"


@dataclass(frozen=True)
class FieldViolation:
    field: str
    description: str


@dataclass
class DomainError(Exception):
    """A failure the caller can act on; ``reason`` is a stable UPPER_SNAKE identifier."""

    message: str
    reason: str = "ERROR"
    metadata: Mapping[str, str] = field(default_factory=dict)
    violations: Sequence[FieldViolation] = ()
    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message

    def to_status_proto(self) -> status_pb2.Status:
        details = []
        info = error_details_pb2.ErrorInfo(reason=self.reason, domain=ERROR_DOMAIN, metadata=dict(self.metadata))
        details.append(_pack(info))
        if self.violations:
            bad = error_details_pb2.BadRequest(
                field_violations=[
                    error_details_pb2.BadRequest.FieldViolation(field=v.field, description=v.description)
                    for v in self.violations
                ]
            )
            details.append(_pack(bad))
        return status_pb2.Status(code=self.code.value[0], message=self.message, details=details)


def _pack(message: Message) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


class _Kind(DomainError):
    """A domain error of one status code; subclasses name the code and the default reason."""

    _status: ClassVar[grpc.StatusCode] = grpc.StatusCode.UNKNOWN
    _default_reason: ClassVar[str] = "UNKNOWN"

    def __init_subclass__(cls, status: grpc.StatusCode | None = None, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if status is not None:
            cls._status, cls._default_reason = status, status.name

    def __init__(
        self,
        message: str,
        reason: str | None = None,
        metadata: Mapping[str, str] | None = None,
        violations: Sequence[FieldViolation] = (),
    ) -> None:
        super().__init__(message, self._default_reason if reason is None else reason, dict(metadata or {}),
                         tuple(violations), self._status)


class InvalidArgument(_Kind, status=grpc.StatusCode.INVALID_ARGUMENT):
    """The request is malformed; usually carries field violations."""


class NotFound(_Kind, status=grpc.StatusCode.NOT_FOUND):
    """The named resource does not exist for this tenant."""


class AlreadyExists(_Kind, status=grpc.StatusCode.ALREADY_EXISTS):
    """The resource already exists."""


class FailedPrecondition(_Kind, status=grpc.StatusCode.FAILED_PRECONDITION):
    """The system is not in a state to serve this request (e.g. no provider configured)."""


class Aborted(_Kind, status=grpc.StatusCode.ABORTED):
    """A concurrent actor changed the resource first (e.g. another replica took over the work)."""


class Unauthenticated(_Kind, status=grpc.StatusCode.UNAUTHENTICATED):
    """The caller did not prove who it is (no or a wrong credential)."""


class PermissionDenied(_Kind, status=grpc.StatusCode.PERMISSION_DENIED):
    """The caller is known but may not do this (its role or tenant does not allow it)."""


class ResourceExhausted(_Kind, status=grpc.StatusCode.RESOURCE_EXHAUSTED):
    """A size, quota or budget limit was exceeded."""


class Unavailable(_Kind, status=grpc.StatusCode.UNAVAILABLE):
    """A dependency is down; retrying later may succeed."""


class DeadlineExceeded(_Kind, status=grpc.StatusCode.DEADLINE_EXCEEDED):
    """The operation ran out of time."""


class Unimplemented(_Kind, status=grpc.StatusCode.UNIMPLEMENTED):
    """The operation is not available in this build."""


class Internal(_Kind, status=grpc.StatusCode.INTERNAL):
    """A bug: logged with its traceback, reported without it."""


def require(condition: bool, field_name: str, description: str) -> None:
    """Raises InvalidArgument with one field violation unless ``condition`` holds."""
    if not condition:
        raise InvalidArgument(
            f"invalid {field_name}: {description}",
            violations=[FieldViolation(field_name, description)],
        )


TRACE_ID_KEY = "trace_id"


def status_from_exception(exc: BaseException, trace_id: str | None = None) -> status_pb2.Status:
    """The in-band ``google.rpc.Status`` for any exception (domain or not).

    With a ``trace_id`` (tracing on), ``ErrorInfo.metadata["trace_id"]`` names the request's trace,
    so a user can quote it and an operator find the trace; an error without ``ErrorInfo`` gets one.
    """
    if isinstance(exc, DomainError):
        status = exc.to_status_proto()
    elif isinstance(exc, grpc.aio.AioRpcError):  # a peer's failure no typed client mapped: its status as sent
        status = remote_error(exc, "peer").status
    else:
        status = status_pb2.Status(code=code_pb2.INTERNAL, message="internal error")
    if trace_id:
        _add_trace_id(status, trace_id)
    return status


def _add_trace_id(status: status_pb2.Status, trace_id: str) -> None:
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            info.metadata[TRACE_ID_KEY] = trace_id
            detail.Pack(info)
            return
    reason = code_pb2.Code.Name(status.code) if status.code in code_pb2.Code.values() else "UNKNOWN"
    info = error_details_pb2.ErrorInfo(reason=reason, domain=ERROR_DOMAIN, metadata={TRACE_ID_KEY: trace_id})
    status.details.insert(0, _pack(info))


class RemoteError(DomainError):
    """A failure another service reported, with its whole ``google.rpc.Status`` kept.

    ``reason``, ``metadata`` and ``violations`` are read from the status's ``ErrorInfo`` and
    ``BadRequest``; re-raised by a servicer, the status (every detail) reaches the caller as it was.
    ``remote_error`` makes it an instance of its code's kind too (``Unavailable``, ``NotFound`` ...),
    so ``except Unavailable`` means the same for a local and a remote failure.
    """

    def __init__(self, service: str, status: status_pb2.Status) -> None:
        code = _code(status.code)
        reason, metadata, violations = code.name, {}, []
        for detail in status.details:
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                reason, metadata = info.reason or reason, dict(info.metadata)
            elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                violations = [FieldViolation(v.field, v.description) for v in bad.field_violations]
        DomainError.__init__(self, f"{service}: {status.message or code.name}", reason, metadata, tuple(violations),
                             code)
        self.service = service
        self.status = status

    def to_status_proto(self) -> status_pb2.Status:
        status = status_pb2.Status()
        status.CopyFrom(self.status)
        status.message = self.message
        return status


def remote_error(exc: grpc.aio.AioRpcError, service: str) -> RemoteError:
    """The one mapping of a failed downstream call to a domain error (see ``RemoteError``).

    The status comes from the ``grpc-status-details-bin`` trailer when the peer sent one; a
    failure without it (a refused connection, a deadline) keeps its code and message.
    """
    try:
        status = rpc_status.from_call(exc)
    except ValueError:  # a trailer whose code or message disagrees with the call's
        status = None
    if status is None:
        status = status_pb2.Status(code=exc.code().value[0], message=exc.details() or "")
    return status_error(status, service)


def status_error(status: status_pb2.Status, service: str) -> RemoteError:
    """A peer's in-band ``google.rpc.Status`` (a stream's error event) as the same domain error."""
    return _REMOTE_KINDS.get(_code(status.code), RemoteError)(service, status)


def _code(value: int) -> grpc.StatusCode:
    for code in grpc.StatusCode:
        if code.value[0] == value:
            return code
    return grpc.StatusCode.UNKNOWN


# Every kind, so ``except PermissionDenied`` catches a peer's PERMISSION_DENIED as it catches a local one;
# a kind added above is mapped without a second list to keep in step.
_REMOTE_KINDS: dict[grpc.StatusCode, type[RemoteError]] = {
    kind._status: type(f"Remote{kind.__name__}", (RemoteError, kind), {}) for kind in _Kind.__subclasses__()
}
