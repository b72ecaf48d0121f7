"""REST bodies the gateway streams to rag in pieces (``UploadDocumentBody``, ``IngestDocumentBody``,
``SpokenQueryBody``): Envoy's transcoder sends a raw body bound to a ``google.api.HttpBody`` field of a
client-streaming method as it arrives, at most 1 MiB a message, so the gateway never holds a whole upload.
The first message carries the query parameters (filename, top_k ...) and the body's content type; each
message one piece of the bytes. The pieces are gathered here, refused as soon as they pass the limit.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable
from typing import TypeVar

from google.api import httpbody_pb2

from services.runtime.errors import FieldViolation, InvalidArgument

M = TypeVar("M")


async def gather(requests: AsyncIterable[M], field: str, refuse_size: Callable[[int], None],
                 first_check: Callable[[M], None] = lambda first: None) -> tuple[M, str, bytes]:
    """The first message, the body's content type and its bytes. ``refuse_size`` raises for a size over the
    limit (checked as the pieces arrive); ``first_check`` may refuse the first message before any more bytes."""
    first: M | None = None
    content_type = ""
    parts: list[bytes] = []
    received = 0
    async for message in requests:
        body: httpbody_pb2.HttpBody = getattr(message, field)
        if first is None:
            first, content_type = message, body.content_type
            first_check(message)
        received += len(body.data)
        refuse_size(received)
        parts.append(body.data)
    if first is None:
        raise InvalidArgument("empty request stream: send at least one message", reason="EMPTY_REQUEST_STREAM",
                              violations=[FieldViolation(field, "required")])
    return first, content_type, b"".join(parts)
