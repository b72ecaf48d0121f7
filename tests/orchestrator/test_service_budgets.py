"""Budgets, costs and their tenancy through the orchestrator in-process over real gRPC (fake downstream services)."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from docuthinker.nlp.v1 import nlp_service_pb2 as nlp_pb
from docuthinker.orchestrator.v1 import orchestrator_service_pb2 as pb

from .harness import ADMIN, events


async def test_tiny_budget_rejects_paid_requests_before_streaming(make_orchestrator):
    orchestrator = make_orchestrator(daily_budget_usd=1e-9)
    stub = await orchestrator.start()
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await events(stub.Process(pb.ProcessRequest(intent="chat.general", message="hello there")))
    assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert orchestrator.openai.requests == []
    # no LLM involved: still served
    stream = await events(stub.Process(pb.ProcessRequest(intent="document.analytics", text="Two words.")))
    assert stream[-1].done.success


async def test_token_check_and_costs(stub):
    check = await stub.CheckTokens(pb.CheckTokensRequest(
        model="gpt-3.5-turbo", messages=[pb.ChatMessage(role="user", content="x" * 4000)]))
    assert (check.allowed, check.used, check.context_window) == (True, 1000, 16385)
    await events(stub.Process(pb.ProcessRequest(intent="chat.general", message="hello")))
    costs = await stub.GetCosts(pb.GetCostsRequest(period="today"))
    assert costs.by_provider["openai"].requests == 1 and costs.by_intent["chat.general"].cost > 0
    assert costs.daily_budget == 10.0 and costs.monthly_budget == 200.0
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await stub.GetCosts(pb.GetCostsRequest(period="decade"))
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_llm_spend_of_the_nlp_service_counts_in_costs_and_budgets(make_orchestrator, fake_mesh):
    orchestrator = make_orchestrator(daily_budget_usd=0.05)
    stub = await orchestrator.start()
    fake_mesh.nlp.rewrite_usage = [
        nlp_pb.LlmUsage(provider="anthropic", model="claude-haiku-4-5", calls=2, input_tokens=900,
                        output_tokens=300, cost_usd=0.06),
        nlp_pb.LlmUsage(provider="local", model="smollm2", calls=1, input_tokens=50, output_tokens=20),
    ]
    await events(stub.Process(pb.ProcessRequest(intent="document.rewrite", text="hey", options={"style": "formal"})))
    costs = await stub.GetCosts(pb.GetCostsRequest(period="today"), metadata=ADMIN)
    assert set(costs.by_provider) == {"anthropic"}, "local models are free and not recorded"
    assert costs.by_provider["anthropic"].cost == pytest.approx(0.06)
    assert costs.by_intent["document.rewrite"].cost == pytest.approx(0.06)
    assert costs.daily_spent == pytest.approx(0.06) and costs.warning

    # The NLP service's spend is the orchestrator's to enforce: the next paid request is refused.
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await events(stub.Process(pb.ProcessRequest(intent="document.rewrite", text="hey")))
    assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


async def test_each_tenant_is_charged_and_limited_on_its_own(make_orchestrator, fake_mesh):
    stub = await make_orchestrator(tenant_daily_budget_usd=0.05).start()
    fake_mesh.nlp.rewrite_usage = [nlp_pb.LlmUsage(provider="anthropic", model="claude-haiku-4-5", calls=1,
                                                   input_tokens=900, output_tokens=300, cost_usd=0.06)]
    t1, t2 = [("x-tenant-id", "t1")], [("x-tenant-id", "t2")]
    rewrite = pb.ProcessRequest(intent="document.rewrite", text="hey")
    await events(stub.Process(rewrite, metadata=t1))

    with pytest.raises(grpc.aio.AioRpcError) as error:
        await events(stub.Process(rewrite, metadata=t1))
    assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    info = error_details_pb2.ErrorInfo()
    assert rpc_status.from_call(error.value).details[0].Unpack(info)
    assert (info.reason, info.metadata["tenant"], info.metadata["budget"]) == ("TENANT_BUDGET_EXCEEDED", "t1", "daily")

    assert (await events(stub.Process(rewrite, metadata=t2)))[-1].done.success, "another tenant still has budget"
    costs = await stub.GetCosts(pb.GetCostsRequest(period="today"), metadata=t1 + ADMIN)
    assert costs.total_requests == 2 and costs.daily_spent == pytest.approx(0.12), "the mesh-wide view is unchanged"
    assert costs.tenant == "t1" and costs.tenant_total_requests == 1
    assert costs.tenant_total_cost == pytest.approx(0.06) and costs.tenant_daily_spent == pytest.approx(0.06)
    assert costs.tenant_monthly_spent == pytest.approx(0.06)
    assert (costs.tenant_daily_budget, costs.tenant_monthly_budget) == (0.05, 0.0)
    assert costs.warning, "t1 is beyond its own limit"
    other = await stub.GetCosts(pb.GetCostsRequest(period="today"), metadata=[("x-tenant-id", "t3")])
    assert (other.tenant, other.tenant_total_requests, other.tenant_daily_spent, other.warning) == ("t3", 0, 0, False)
    asked = (await events(stub.Process(pb.ProcessRequest(intent="system.costs"), metadata=t2)))[-1].done
    report = dict(asked.data["results"])
    assert report["tenant"]["tenant"] == "t2" and report["tenant"]["total_cost"] == pytest.approx(0.06)


async def test_a_user_sees_its_tenants_costs_and_dead_letters_an_admin_every_tenants(make_orchestrator, fake_mesh):
    stub = await make_orchestrator().start()
    fake_mesh.nlp.rewrite_usage = [nlp_pb.LlmUsage(provider="anthropic", model="claude-haiku-4-5", calls=1,
                                                   input_tokens=900, output_tokens=300, cost_usd=0.06)]
    t1, t2 = [("x-tenant-id", "t1")], [("x-tenant-id", "t2")]
    await events(stub.Process(pb.ProcessRequest(intent="document.rewrite", text="hey"), metadata=t1))
    fake_mesh.switches["nlp"].down = True
    await events(stub.Process(pb.ProcessRequest(intent="document.sentiment", text="A good day."), metadata=t1))
    fake_mesh.switches["nlp"].down = False

    user = await stub.GetCosts(pb.GetCostsRequest(period="today"), metadata=t2)
    assert (user.total_requests, dict(user.by_provider), user.daily_spent) == (0, {}, 0.0), "t1's spend is not t2's"
    owner = await stub.GetCosts(pb.GetCostsRequest(period="today"), metadata=t1)
    assert owner.total_requests == 1 and owner.by_provider["anthropic"].cost == pytest.approx(0.06)
    assert owner.daily_spent == 0.0, "the mesh-wide spend is an admin's to see"
    admin = await stub.GetCosts(pb.GetCostsRequest(period="today"), metadata=t2 + ADMIN)
    assert admin.total_requests == 1 and admin.daily_spent == pytest.approx(0.06)
    assert (await stub.GetCosts(pb.GetCostsRequest(tenant="t2"), metadata=t1 + ADMIN)).total_requests == 0

    assert (await stub.ListDeadLetters(pb.ListDeadLettersRequest(), metadata=t2)).retrying == 0
    assert (await stub.ListDeadLetters(pb.ListDeadLettersRequest(), metadata=t1)).retrying == 1
    assert (await stub.ListDeadLetters(pb.ListDeadLettersRequest(), metadata=t2 + ADMIN)).retrying == 1
    assert (await stub.ListDeadLetters(pb.ListDeadLettersRequest(tenant="t1"), metadata=t1)).retrying == 1
    for call in (stub.GetCosts(pb.GetCostsRequest(tenant="t1"), metadata=t2),
                 stub.ListDeadLetters(pb.ListDeadLettersRequest(tenant="t1"), metadata=t2),
                 stub.ListDeadLetters(pb.ListDeadLettersRequest(tenant="t1"),
                                      metadata=t2 + [("x-docuthinker-role", "admin,admin")])):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await call
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        info = error_details_pb2.ErrorInfo()
        assert rpc_status.from_call(refused.value).details[0].Unpack(info) and info.reason == "ADMIN_ROLE_REQUIRED"


async def test_nlp_results_without_llm_calls_record_nothing(make_orchestrator, fake_mesh):
    stub = await make_orchestrator().start()
    await events(stub.Process(pb.ProcessRequest(intent="document.rewrite", text="hey")))
    assert (await stub.GetCosts(pb.GetCostsRequest())).total_requests == 0
