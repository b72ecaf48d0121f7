"""The three ways the serving benchmark calls retrieval (Search) and answers (Query).

- ``inprocess``: the domain call the servicer makes (``AnswerService.search`` / ``.answer``),
  built by the service's own ``build_answering`` over stores opened in this process;
- ``grpc``: the rag service's port directly, one ``grpc.aio`` channel (HTTP/2 multiplexed);
- ``rest``: Envoy's REST listener (gRPC-JSON transcoding), one pooled ``aiohttp`` session
  (httpx's async client cost ~0.9 ms more per call here, which the mesh would have been blamed for).

Each call checks its reply (retrieved chunks present; an abstention is a valid answer) so a
fast failure is never timed as a fast success, and returns the ranked chunk ids for the
agreement check.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import aiohttp
import grpc

from services.clients.rag import RagClient
from services.rag.answers.answering import AnswerService

WAYS = ("inprocess", "grpc", "rest")
OPERATIONS = ("search", "query")
TIMEOUT_S = 120.0

Ids = list[str]
CallFactory = Callable[[str, str], Callable[[str], Awaitable[Ids]]]
"""(operation, tenant) -> call(text) -> ranked chunk ids."""


class EmptyReply(RuntimeError):
    """A reply without the results the benchmark corpus guarantees."""


def _checked(ids: Ids, what: str) -> Ids:
    if not ids:
        raise EmptyReply(f"{what} returned no chunks")
    return ids


def inprocess(answers: AnswerService) -> CallFactory:
    def factory(operation: str, tenant: str):
        async def search(text: str) -> Ids:
            hits = await answers.search(tenant, text, 0, [])
            return _checked([h.chunk.chunk_id for h in hits], "search")

        async def query(text: str) -> Ids:
            answer = await answers.answer(tenant, text)
            return _checked([c.chunk.chunk_id for c in answer.retrieved], "query")

        return search if operation == "search" else query

    return factory


@dataclass
class GrpcClient:
    target: str
    mesh_metadata: tuple[tuple[str, str], ...] = ()
    """The mesh credential (``Mesh.grpc_metadata()``): a service port refuses callers without it."""

    def __post_init__(self) -> None:
        # A bare channel (no mesh interceptors or retries): what a plain gRPC client of the service pays.
        self._channel = grpc.aio.insecure_channel(self.target)
        self._rag = RagClient(self._channel)

    def factory(self, operation: str, tenant: str):
        metadata = (*self.mesh_metadata, ("x-tenant-id", tenant))

        async def search(text: str) -> Ids:
            found = await self._rag.search(text, metadata=metadata, timeout=TIMEOUT_S)
            return _checked([r["chunk_id"] for r in found.get("results", ())], "search")

        async def query(text: str) -> Ids:
            answer = await self._rag.answer(text, metadata=metadata, timeout=TIMEOUT_S)
            return _checked([c.chunk_id for c in answer.retrieved_chunks], "query")

        return search if operation == "search" else query

    async def close(self) -> None:
        await self._channel.close()


@dataclass
class RestClient:
    base_url: str
    token_for: Callable[[str], str | None] | None = None
    """A bearer token for a tenant (``Mesh.mint``); None: auth is off at the gateway."""

    def __post_init__(self) -> None:
        # Created inside the running event loop (the benchmark's), as aiohttp requires.
        self._client = aiohttp.ClientSession(
            base_url=self.base_url, timeout=aiohttp.ClientTimeout(total=TIMEOUT_S),
            connector=aiohttp.TCPConnector(limit=128),
        )

    def factory(self, operation: str, tenant: str):
        token = self.token_for(tenant) if self.token_for is not None else None
        headers = {"authorization": f"Bearer {token}"} if token else {"x-tenant-id": tenant}

        async def post(path: str, body: dict) -> dict:
            async with self._client.post(path, json=body, headers=headers) as reply:
                if reply.status != 200:
                    raise EmptyReply(f"HTTP {reply.status}: {(await reply.text())[:200]}")
                return await reply.json()

        async def search(text: str) -> Ids:
            body = await post("/v1/search", {"query": text})
            return _checked([r["chunk_id"] for r in body.get("results", [])], "search")

        async def query(text: str) -> Ids:
            answer = (await post("/v1/query", {"question": text})).get("answer", {})
            return _checked([c["chunk_id"] for c in answer.get("retrieved_chunks", [])], "query")

        return search if operation == "search" else query

    async def close(self) -> None:
        await self._client.close()
