"""The evaluation RPCs on a real orchestrator server (fake downstream services): protobuf mapping, errors as
gRPC statuses with their details, tenancy by the x-tenant-id the gateway sets."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from google.api import httpbody_pb2
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from docuthinker.orchestrator.v1 import evaluation_pb2 as epb

CSV = b"question,answers\nWhat is the harbour office?,manages moorings\nWho won in 1850?,unanswerable\n"


def tenant(name: str):
    return [("x-tenant-id", name)]


async def finished(stub, run_id: str, who: str):
    for _ in range(200):
        run = (await stub.GetEvalRun(epb.GetEvalRunRequest(run_id=run_id), metadata=tenant(who))).run
        if run.state != epb.EVAL_RUN_STATE_RUNNING:
            return run
        await asyncio.sleep(0.05)
    raise AssertionError("the run did not end")


async def test_upload_run_items_export_and_tenancy_over_grpc(stub, fake_mesh):
    fake_mesh.rag.add("The harbour office manages moorings, pilots and the fish market.", "harbour.txt")
    created = await stub.CreateEvalSet(epb.CreateEvalSetRequest(
        name="harbour", filename="set.csv", file=httpbody_pb2.HttpBody(content_type="text/csv", data=CSV)),
        metadata=tenant("a"))
    evalset = created.eval_set
    assert (evalset.name, evalset.item_count, dict(evalset.kinds)) == ("harbour", 2, {"answerable": 1,
                                                                                       "unanswerable": 1})
    started = await stub.StartEvalRun(epb.StartEvalRunRequest(set_id=evalset.set_id, top_k=3, label="first"),
                                      metadata=tenant("a"))
    assert started.run.state == epb.EVAL_RUN_STATE_RUNNING and started.run.settings.top_k == 3
    run = await finished(stub, started.run.run_id, "a")
    assert run.state == epb.EVAL_RUN_STATE_SUCCEEDED and run.completed == 2
    assert run.identities["embedder"].startswith("all-MiniLM-L6-v2@") and run.settings.mode == epb.EVAL_MODE_ANSWER
    assert list(run.identities["answer_engines"]) == ["local/extractive"]
    # the fake engine cites nothing: it refuses everything, right only on the unanswerable question
    assert run.totals.overall.abstention_unanswerable == 1.0 and run.totals.overall.answer_correct == 0.0
    assert run.totals.overall.HasField("answer_correct") and not run.totals.per_kind["answerable"].HasField(
        "abstention_unanswerable")
    items = await stub.ListEvalRunItems(epb.ListEvalRunItemsRequest(run_id=run.run_id, page_size=1),
                                        metadata=tenant("a"))
    assert items.total_size == 2 and len(items.items) == 1 and items.next_page_token == "1"
    assert items.items[0].refused and items.items[0].item.answers == ["manages moorings"]
    exported = await stub.ExportEvalRun(epb.ExportEvalRunRequest(run_id=run.run_id), metadata=tenant("a"))
    assert exported.content_type.startswith("text/csv") and exported.data.count(b"\n") == 3

    for call in (stub.GetEvalSet(epb.GetEvalSetRequest(set_id=evalset.set_id), metadata=tenant("b")),
                 stub.GetEvalRun(epb.GetEvalRunRequest(run_id=run.run_id), metadata=tenant("b")),
                 stub.StartEvalRun(epb.StartEvalRunRequest(set_id=evalset.set_id), metadata=tenant("b"))):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    listed = await stub.ListEvalSets(epb.ListEvalSetsRequest(), metadata=tenant("b"))
    assert listed.total_size == 0


async def test_a_malformed_set_is_invalid_argument_with_the_row_in_its_details(stub):
    bad = b"question,answers\nFine?,yes\nBroken?,\n"
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.CreateEvalSet(epb.CreateEvalSetRequest(file=httpbody_pb2.HttpBody(data=bad)),
                                 metadata=tenant("a"))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "row 3" in caught.value.details()
    status = rpc_status.from_call(caught.value)
    info, bad_request = error_details_pb2.ErrorInfo(), error_details_pb2.BadRequest()
    status.details[0].Unpack(info)
    status.details[1].Unpack(bad_request)
    assert info.reason == "MALFORMED_EVAL_SET" and info.metadata["row"] == "3"
    assert bad_request.field_violations[0].field == "row 3"


async def test_bad_page_tokens_and_compare_without_runs_are_refused(stub):
    for call in (stub.ListEvalSets(epb.ListEvalSetsRequest(page_token="abc")),
                 stub.CompareEvalRuns(epb.CompareEvalRunsRequest(base_run_id="x")),
                 stub.StartEvalRun(epb.StartEvalRunRequest(set_id="x", top_k=-1))):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call
        assert caught.value.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND)
