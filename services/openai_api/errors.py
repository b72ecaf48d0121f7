"""Errors in OpenAI's shape (``{"error": {"message", "type", "param", "code"}}``) with the matching HTTP status.

A rag failure arrives as a ``RemoteError`` keeping its ``google.rpc.Status``: its code picks the HTTP status as Envoy's
transcoder would, its ``ErrorInfo`` reason becomes ``code`` and its first ``BadRequest`` field ``param``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc
from google.rpc import code_pb2, error_details_pb2, status_pb2

from services.runtime.errors import RemoteError

# gRPC code -> (HTTP status, OpenAI error type)
_BY_CODE: dict[int, tuple[int, str]] = {
    code_pb2.INVALID_ARGUMENT: (400, "invalid_request_error"),
    code_pb2.FAILED_PRECONDITION: (400, "invalid_request_error"),
    code_pb2.OUT_OF_RANGE: (400, "invalid_request_error"),
    code_pb2.UNAUTHENTICATED: (401, "authentication_error"),
    code_pb2.PERMISSION_DENIED: (403, "permission_error"),
    code_pb2.NOT_FOUND: (404, "not_found_error"),
    code_pb2.ALREADY_EXISTS: (409, "conflict_error"),
    code_pb2.ABORTED: (409, "conflict_error"),
    code_pb2.RESOURCE_EXHAUSTED: (429, "rate_limit_error"),
    code_pb2.UNIMPLEMENTED: (501, "api_error"),
    code_pb2.UNAVAILABLE: (503, "api_error"),
    code_pb2.DEADLINE_EXCEEDED: (504, "timeout_error"),
}


@dataclass(frozen=True)
class ApiError(Exception):
    status: int
    message: str
    type: str = "invalid_request_error"
    code: str | None = None
    param: str | None = None

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def invalid_request(message: str, *, param: str | None = None, code: str | None = "invalid_request") -> ApiError:
    return ApiError(400, message, "invalid_request_error", code, param)


def from_status(status: status_pb2.Status) -> ApiError:
    """An in-band ``google.rpc.Status`` (a stream's error event, or a failed call's details)."""
    http_status, kind = _BY_CODE.get(status.code, (500, "api_error"))
    reason, param = None, None
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR) and reason is None:
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason = info.reason or None
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR) and param is None:
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            param = bad.field_violations[0].field if bad.field_violations else None
    message = status.message or code_pb2.Code.Name(status.code)
    return ApiError(http_status, message, kind, reason or code_pb2.Code.Name(status.code).lower(), param)


def from_remote(exc: RemoteError) -> ApiError:
    """A failed rag call (``errors.remote_error``), from the status it kept."""
    status = status_pb2.Status()
    status.CopyFrom(exc.status)
    if exc.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) and not status.message:
        status.message = f"the answer engine is unavailable: {exc.code.name}"
    return from_status(status)
