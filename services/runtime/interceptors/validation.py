"""Request validation: a request naming an enum number its enum does not define is refused before the handler
runs (INVALID_ARGUMENT, ``services.runtime.request_validation``)."""

from __future__ import annotations

from typing import Any

from services.runtime import request_validation
from services.runtime.interceptors.server import Inbound, Messages, ServerCall


class Validation(Inbound):
    async def unary(self, call: ServerCall, request: Any) -> Any:
        request_validation.check_request(request)
        return await self.inner.unary(call, request)

    def stream(self, call: ServerCall, request: Any) -> Messages:
        request_validation.check_request(request)
        return self.inner.stream(call, request)
