"""OpenAI-shaped errors from gRPC statuses, and the request model's checks (no server needed)."""

from __future__ import annotations

import pydantic
import pytest
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2

from services.openai_api import errors, wire


def _status(code: int, message: str, reason: str = "", field: str = "") -> status_pb2.Status:
    status = status_pb2.Status(code=code, message=message)
    if reason:
        detail = any_pb2.Any()
        detail.Pack(error_details_pb2.ErrorInfo(reason=reason, domain="docuthinker"))
        status.details.append(detail)
    if field:
        detail = any_pb2.Any()
        detail.Pack(error_details_pb2.BadRequest(field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=field, description="bad")]))
        status.details.append(detail)
    return status


@pytest.mark.parametrize(("code", "http", "kind"), [
    (code_pb2.INVALID_ARGUMENT, 400, "invalid_request_error"), (code_pb2.UNAUTHENTICATED, 401, "authentication_error"),
    (code_pb2.PERMISSION_DENIED, 403, "permission_error"), (code_pb2.NOT_FOUND, 404, "not_found_error"),
    (code_pb2.RESOURCE_EXHAUSTED, 429, "rate_limit_error"), (code_pb2.UNAVAILABLE, 503, "api_error"),
    (code_pb2.INTERNAL, 500, "api_error")])
def test_grpc_codes_become_openai_statuses_and_types(code, http, kind):
    error = errors.from_status(_status(code, "boom"))
    assert (error.status, error.type, error.message) == (http, kind, "boom")


def test_error_info_reason_is_the_code_and_the_bad_field_the_param():
    error = errors.from_status(_status(code_pb2.INVALID_ARGUMENT, "bad ids", "INVALID_DOCUMENT_ID", "document_ids"))
    assert error.body() == {"error": {"message": "bad ids", "type": "invalid_request_error",
                                      "param": "document_ids", "code": "INVALID_DOCUMENT_ID"}}


def test_the_question_is_the_last_user_message_and_n_must_be_one():
    chat = wire.ChatRequest.model_validate({"model": "docuthinker", "messages": [
        {"role": "user", "content": "first"}, {"role": "assistant", "content": "a"},
        {"role": "user", "content": [{"type": "text", "text": "second"}, {"type": "image_url", "image_url": {}}]}],
        "temperature": 0.2})
    assert chat.question == "second" and not chat.stream
    with pytest.raises(pydantic.ValidationError):
        wire.ChatRequest.model_validate({"model": "docuthinker", "messages": [{"role": "user", "content": "q"}],
                                         "n": 2})
    with pytest.raises(pydantic.ValidationError):
        wire.ChatRequest.model_validate({"model": "docuthinker", "messages": []})
