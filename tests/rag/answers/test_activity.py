"""The answer service says when it is working, so background warm-up can yield the cores to questions."""

from __future__ import annotations

from services.rag.answers.answering import AnswerService
from services.rag.answers.extractive import ExtractiveAnswerer
from services.rag.retrieval import HybridRetriever

from .fakes import FakeIndex, HashingEncoder, make_chunk


class _WatchedIndex(FakeIndex):
    def __init__(self, chunks) -> None:
        super().__init__(chunks)
        self.service: AnswerService | None = None
        self.seen_busy: list[bool] = []

    def keyword_search(self, tenant, query, k, document_ids=None):
        assert self.service is not None
        self.seen_busy.append(self.service.busy)
        return super().keyword_search(tenant, query, k, document_ids)


async def test_the_service_is_busy_while_it_searches_or_answers_and_idle_after() -> None:
    index = _WatchedIndex([make_chunk("t", "d", "The Lyon warehouse was opened in 1998 by Claire Dubois.", 0)])
    service = index.service = AnswerService(HybridRetriever(index, index.encoder), ExtractiveAnswerer(HashingEncoder()))
    assert not service.busy
    answer = await service.answer("t", "When was the Lyon warehouse opened?")
    assert "1998" in answer.answer
    await service.search("t", "Lyon warehouse", 3, [])
    assert index.seen_busy and all(index.seen_busy)
    assert not service.busy
