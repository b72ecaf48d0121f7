"""OpenAI-compatible chat API over the grounded answer engine: ``POST /v1/chat/completions``, ``GET /v1/models``.

A small aiohttp app run as its own process by the launcher, routed by Envoy for exactly those two paths (the
gRPC-JSON transcoder cannot produce OpenAI's shapes, nor switch between a JSON reply and an SSE stream on one
path). It answers from the caller's library (the tenant in ``x-tenant-id``, set by Envoy from the bearer token when
auth is on) through the rag service's ``Query`` / ``StreamQuery`` (model ``docuthinker``) or ``AgentQuery``
(model ``docuthinker-agent``) over gRPC. Citations travel as ``[n]`` markers in the text and as ``citations`` on
the message (streaming: on the last chunk's delta); errors use OpenAI's error shape and HTTP statuses.

Modules: ``wire`` (OpenAI request/response shapes), ``answers`` (the rag client), ``errors`` (gRPC status to
OpenAI error), ``app`` (the HTTP handlers).
"""
