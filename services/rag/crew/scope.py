"""One crew run's access to its document: search, topics, and which agent used which tool.

The runner uses a ``ToolScope`` directly (async, on the server's loop) to gather each task's
evidence before the crew starts; the CrewAI tools (``tools``) call it from the crew's worker
thread through ``blocking``, which submits the coroutine to the server's loop with the RPC's
request context (tenant, request id, deadline) bound: retrieval and the NLP channel belong to
that loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

from services.rag.crew.evidence import EvidenceSearch, Snippet, Topic, TopicSource, snippets
from services.rag.crew.settings import CrewSettings
from services.runtime import request_context

SEARCH = "document_search"
TOPICS = "document_topics"

T = TypeVar("T")


class ToolLog:
    """Which tools ran for which agent (thread-safe: tools run in the crew's thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._used: dict[str, list[str]] = {}

    def record(self, agent_key: str, tool: str) -> None:
        with self._lock:
            names = self._used.setdefault(agent_key, [])
            if tool not in names:
                names.append(tool)

    def used(self, agent_key: str) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._used.get(agent_key, ()))


class ToolScope:
    """One crew run's view of the document: its tenant, its document, its services."""

    def __init__(
        self,
        *,
        tenant: str,
        document_id: str,
        text: Callable[[], Awaitable[str]],
        search: EvidenceSearch,
        topic_source: TopicSource,
        settings: CrewSettings,
        loop: asyncio.AbstractEventLoop,
        context: request_context.RequestContext | None,
        log: ToolLog,
    ) -> None:
        self.tenant = tenant
        self.document_id = document_id
        self._text = text
        self._search = search
        self._topic_source = topic_source
        self._settings = settings
        self._loop = loop
        self._context = context
        self.log = log
        self._topics: list[Topic] | None = None

    async def find(self, agent_key: str, query: str) -> list[Snippet]:
        self.log.record(agent_key, SEARCH)
        hits = await self._search.search(self.tenant, query, self._settings.search_top_k, [self.document_id])
        return snippets(hits, self._settings.snippet_chars)

    async def topics(self, agent_key: str) -> list[Topic]:
        self.log.record(agent_key, TOPICS)
        if self._topics is None:  # one NLP call per crew run, however many agents ask
            self._topics = list(await self._topic_source.topics(await self._text(), self._settings.max_topics))
        return self._topics

    def blocking(self, make: Callable[[], Awaitable[T]]) -> T:
        """Runs ``make()`` on the server's loop from the crew's thread, in the RPC's context."""

        async def bound() -> T:
            token = request_context.bind(self._context) if self._context is not None else None
            try:
                return await make()
            finally:
                if token is not None:
                    request_context.unbind(token)

        return asyncio.run_coroutine_threadsafe(bound(), self._loop).result()
