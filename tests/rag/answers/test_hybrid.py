"""HybridRetriever over a fake index: tenant scoping, filters, fusion choice, reranking, graph expansion."""

from __future__ import annotations

from services.rag.retrieval import FusionMethod, HybridRetriever, RetrievalConfig, RetrievedChunk

from .fakes import FakeIndex, make_chunk

CHUNKS = [
    make_chunk("acme", "d1", "The warehouse in Lyon stores spare turbine blades.", 0),
    make_chunk("acme", "d1", "Turbine blades are inspected every six months.", 1),
    make_chunk("acme", "d2", "The cafeteria serves lunch from noon.", 0),
    make_chunk("acme", "d3", "Lyon office opening hours are nine to five.", 0),
    make_chunk("globex", "g1", "Globex secret: turbine blades are made of titanium.", 0),
]


def retriever(**kwargs) -> tuple[HybridRetriever, FakeIndex]:
    index = FakeIndex(CHUNKS)
    return HybridRetriever(index, index.encoder, **kwargs), index


def test_results_come_only_from_the_callers_tenant():
    hybrid, index = retriever()
    acme = hybrid.retrieve("acme", "turbine blades titanium", top_k=10)
    assert acme and all(h.chunk.tenant == "acme" for h in acme)
    globex = hybrid.retrieve("globex", "turbine blades", top_k=10)
    assert [h.chunk.document_id for h in globex] == ["g1"]
    assert {call[1] for call in index.calls} == {"acme", "globex"}
    assert hybrid.retrieve("initech", "turbine blades") == []


def test_document_filter_is_passed_to_both_retrievers():
    hybrid, index = retriever()
    hits = hybrid.retrieve("acme", "Lyon", top_k=5, document_ids=["d3"])
    assert [h.chunk.document_id for h in hits] == ["d3"]
    assert {call[3] for call in index.calls} == {("d3",)}


def test_default_top_k_and_candidate_depth():
    hybrid, index = retriever(config=RetrievalConfig(default_top_k=2, candidate_factor=2))
    assert len(hybrid.retrieve("acme", "Lyon turbine blades lunch")) == 2
    assert {call[2] for call in index.calls} == {4}


def test_single_retriever_modes_query_one_index_only():
    hybrid, index = retriever()
    hybrid.retrieve("acme", "turbine", fusion=FusionMethod.KEYWORD_ONLY)
    assert [c[0] for c in index.calls] == ["keyword"]
    index.calls.clear()
    dense = hybrid.retrieve("acme", "turbine", fusion=FusionMethod.DENSE_ONLY)
    assert [c[0] for c in index.calls] == ["dense"]
    assert all(h.keyword_score == 0.0 and h.dense_score > 0 for h in dense if h.score > 0)


def test_component_scores_are_reported_for_fused_hits():
    hybrid, _ = retriever()
    for fusion in (FusionMethod.RRF, FusionMethod.SCORE):
        best = hybrid.retrieve("acme", "turbine blades inspected", top_k=1, fusion=fusion)[0]
        assert best.chunk.text.startswith("Turbine blades are inspected")
        assert best.dense_score > 0 and best.keyword_score == 3.0


class ReverseReranker:
    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def rerank(self, query, candidates):
        self.seen.append([c.chunk.chunk_id for c in candidates])
        return list(reversed(candidates))


def test_reranker_hook_sees_the_whole_pool_and_reorders_it():
    plain, _ = retriever(config=RetrievalConfig(default_top_k=2))
    reranker = ReverseReranker()
    reranked, _ = retriever(config=RetrievalConfig(default_top_k=2), reranker=reranker)
    query = "turbine blades Lyon"
    before = plain.retrieve("acme", query, top_k=10)
    after = reranked.retrieve("acme", query)
    assert len(reranker.seen) == 1 and len(reranker.seen[0]) == len(before) > 2
    assert [h.chunk.chunk_id for h in after] == [h.chunk.chunk_id for h in reversed(before)][:2]


async def test_graph_expansion_appends_chunks_of_related_documents():
    asked: list[tuple[str, str, int]] = []

    async def related(tenant: str, document_id: str, limit: int):
        asked.append((tenant, document_id, limit))
        return ["d2"] if document_id == "d1" else []

    hybrid, _ = retriever(related_documents=related)
    plain = await hybrid.search("acme", "turbine blades inspected", top_k=2, document_ids=["d1"])
    assert not any(h.via_graph for h in plain) and asked == []
    hits = await hybrid.search("acme", "turbine blades inspected", top_k=2, document_ids=["d1"], expand_with_graph=True)
    assert [h.chunk.document_id for h in hits if not h.via_graph] == ["d1", "d1"]
    assert [h.chunk.document_id for h in hits if h.via_graph] == ["d2"]
    assert asked == [("acme", "d1", 3)], "the tenant goes with the call, explicitly"
    assert isinstance(hits[0], RetrievedChunk)
