"""The NLP service as the analysis pipeline (and the crew's ``document_topics``) need it.

Text is sent inline: NLP fetching a document's text by id would be a round trip back into
this very service. ``services.clients.nlp.NlpClient`` is the mesh's implementation; calls run
in the RPC's request context, so the tenant, request id and the caller's remaining deadline
travel with them.
"""

from __future__ import annotations

from typing import Protocol

from services.clients.nlp import Engine, Sentiment, Summary, Topic, Translation

__all__ = ["Engine", "NlpPort", "Sentiment", "Summary", "Translation"]


class NlpPort(Protocol):
    async def summarize(self, text: str, max_sentences: int) -> Summary: ...

    async def topics(self, text: str, limit: int) -> list[Topic]: ...

    async def sentiment(self, text: str) -> Sentiment: ...

    async def translate(self, text: str, target_language: str) -> Translation: ...
