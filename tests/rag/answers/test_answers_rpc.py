"""Query, StreamQuery and Search through a real in-process RAG server (real stores and MiniLM)."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from docuthinker.rag.v1 import answers_pb2
from docuthinker.rag.v1 import rag_service_pb2 as pb
from services.rag.answers.model import REFUSAL

SUPPORTED = answers_pb2.SUPPORT_STATUS_SUPPORTED
INSUFFICIENT = answers_pb2.SUPPORT_STATUS_INSUFFICIENT


def violations(error: grpc.aio.AioRpcError) -> list[str]:
    status = rpc_status.from_call(error)
    fields = []
    for detail in status.details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            fields += [v.field for v in bad.field_violations]
    return fields


async def test_supported_answer_cites_the_exact_span_of_the_page_text(rag):
    answer = (await rag.query("acme", "When was the Lyon warehouse opened?")).answer
    assert answer.support_status == SUPPORTED
    assert "1998" in answer.answer and "[1]" in answer.answer
    assert answer.engine.provider == "local"
    citation = answer.citations[0]
    assert citation.filename == "handbook.txt" and citation.marker == 1
    assert citation.document_id == rag.documents[("acme", "handbook.txt")]
    page_text = await rag.section_text("acme", citation.document_id, citation.page)
    assert page_text[citation.char_start : citation.char_end] == citation.excerpt
    assert "opened in 1998" in citation.excerpt
    assert answer.retrieved_chunks and all(c.provenance.document_id for c in answer.retrieved_chunks)


async def test_unanswerable_question_abstains_with_the_fixed_sentence(rag):
    answer = (await rag.query("acme", "What is the boiling point of liquid nitrogen on Mars?")).answer
    assert answer.support_status == INSUFFICIENT
    assert answer.answer == REFUSAL
    assert not answer.citations


async def test_tenant_b_never_sees_tenant_a_chunks(rag):
    acme_doc = rag.documents[("acme", "handbook.txt")]
    globex = await rag.search("globex", "Lyon warehouse turbine blades", top_k=10)
    assert globex.results and {r.provenance.document_id for r in globex.results} == {rag.documents[("globex", "globex.txt")]}
    acme = await rag.search("acme", "Globex reactor core liquid sodium", top_k=10)
    assert rag.documents[("globex", "globex.txt")] not in {r.provenance.document_id for r in acme.results}
    answer = (await rag.query("acme", "Who founded Globex?")).answer
    assert answer.support_status == INSUFFICIENT and "Scorpio" not in answer.answer
    assert "Scorpio" in (await rag.query("globex", "Who founded Globex?")).answer.answer
    with pytest.raises(grpc.aio.AioRpcError) as err:  # another tenant's id does not exist for this caller
        await rag.query("globex", "When was it opened?", document_ids=[acme_doc])
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


async def test_document_filter_restricts_evidence(rag):
    cafeteria = rag.documents[("acme", "cafeteria.txt")]
    results = (await rag.search("acme", "turbine blades inspected", document_ids=[cafeteria])).results
    assert results and {r.provenance.document_id for r in results} == {cafeteria}


async def test_search_reports_fusion_and_component_scores(rag):
    for fusion in (pb.FUSION_METHOD_RRF, pb.FUSION_METHOD_SCORE, pb.FUSION_METHOD_KEYWORD_ONLY):
        reply = await rag.search("acme", "turbine blade inspection", top_k=2, fusion=fusion)
        assert reply.fusion == fusion and len(reply.results) <= 2
        assert "inspected every six months" in reply.results[0].text
    default = await rag.search("acme", "turbine blade inspection")
    assert default.fusion != pb.FUSION_METHOD_UNSPECIFIED and len(default.results) <= 6
    assert default.results[0].keyword_score > 0 and default.results[0].dense_score > 0


@pytest.mark.parametrize(
    ("request_kwargs", "field"),
    [({"question": "   "}, "question"), ({"question": "x" * 2001}, "question"),
     ({"question": "Why?", "top_k": 51}, "top_k"), ({"question": "Why?", "top_k": -1}, "top_k")],
)
async def test_invalid_requests_name_the_field(rag, request_kwargs, field):
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await rag.stub.Query(pb.QueryRequest(**request_kwargs), metadata=rag.meta("acme"))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in violations(err.value)


async def test_unknown_document_id_is_not_found(rag):
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await rag.query("acme", "When was the warehouse opened?", document_ids=["nope"])
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert violations(err.value) == ["document_ids"]


async def test_stream_query_retrieval_then_deltas_citations_and_done(rag):
    events = [e async for e in rag.stub.StreamQuery(
        pb.StreamQueryRequest(question="How often are turbine blades inspected?"), metadata=rag.meta("acme"))]
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds[0] == "retrieval" and kinds[-1] == "done"
    assert kinds.count("done") == 1 and "answer_delta" in kinds and "citation" in kinds
    done = events[-1].done
    assert "".join(e.answer_delta for e in events if e.WhichOneof("event") == "answer_delta") == done.answer
    assert [e.citation for e in events if e.WhichOneof("event") == "citation"] == list(done.citations)
    assert "six months" in done.answer and done.support_status == SUPPORTED
