"""Wires the orchestrator into the shared runtime: the composition root, and nothing else.

All state lives in one SQLite file under ``<data_dir>/orchestrator``. Background work
(dead-letter retries, warming the intent classifier, MCP connections) starts with the
server and stops with it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import cast

from docuthinker.graph.v1 import graph_service_pb2
from docuthinker.nlp.v1 import nlp_service_pb2
from docuthinker.orchestrator.v1 import orchestrator_service_pb2, orchestrator_service_pb2_grpc
from docuthinker.rag.v1 import rag_service_pb2
from services.clients.graph import GraphClient
from services.clients.nlp import NlpClient
from services.clients.rag import RagClient
from services.models.embedder import get_embedder
from services.orchestrator.agent_loop import AgentLoop
from services.orchestrator.batch import BatchProcessor
from services.orchestrator.chat import ChatResponder
from services.orchestrator.circuit_breaker import CircuitBreakers
from services.orchestrator.conversation_answers import ConversationAnswers, RagAnswerSource
from services.orchestrator.conversations import ConversationStore
from services.orchestrator.costs import CostTracker
from services.orchestrator.database import open_database
from services.orchestrator.dlq import DeadLetterQueue
from services.orchestrator.downstream import Peers, provider_circuit, service_circuit
from services.orchestrator.evals.evaluations import Evaluations
from services.orchestrator.evals.metrics import register_eval_metrics
from services.orchestrator.evals.rag_source import GroundedAnswers, identities
from services.orchestrator.evals.rag_source import RagAnswerSource as EvalAnswerSource
from services.orchestrator.evals.runner import EvalRunner
from services.orchestrator.evals.sets import SetLimits
from services.orchestrator.evals.store import EvalStore
from services.orchestrator.health import DOWNSTREAM, HealthProbe
from services.orchestrator.insights import InsightStore
from services.orchestrator.intents import Encoder, IntentClassifier
from services.orchestrator.llm import LanguageModels
from services.orchestrator.mcp.client import McpHub
from services.orchestrator.observability import register_metrics
from services.orchestrator.operations import Operations
from services.orchestrator.servicer import Components, OrchestratorServicer
from services.orchestrator.settings import OrchestratorSettings
from services.orchestrator.summarizer import conversation_summarizer
from services.orchestrator.supervisor import Supervisor, llm_classifier
from services.orchestrator.tokens import TokenBudget
from services.orchestrator.tools import ToolRegistry, register_builtins
from services.orchestrator.user_conversations import UserConversations
from services.providers.model_server import ModelServerFile
from services.providers.pricing import load_price_table
from services.providers.router import Router
from services.providers.settings import ProviderSettings
from services.runtime import ChannelPool, MeshSettings, ServiceBinding
from services.runtime.backoff import Backoff
from services.storage.settings import StorageSettings

FULL_NAME = orchestrator_service_pb2.DESCRIPTOR.services_by_name["OrchestratorService"].full_name
PEER_SERVICES = [rag_service_pb2.DESCRIPTOR.services_by_name["RagService"].full_name,
                 nlp_service_pb2.DESCRIPTOR.services_by_name["NlpService"].full_name,
                 graph_service_pb2.DESCRIPTOR.services_by_name["GraphService"].full_name]

log = logging.getLogger("docuthinker.orchestrator")


def binding(
    settings: MeshSettings,
    *,
    config: OrchestratorSettings | None = None,
    router: Router | None = None,
    encoder_factory: Callable[[], Encoder] | None = None,
    storage: StorageSettings | None = None,
) -> ServiceBinding:
    config = config or OrchestratorSettings()
    providers = ProviderSettings()
    router = router or Router.from_settings(providers)
    prices = load_price_table(providers.prices_file)
    db = open_database(settings.data_dir, storage or StorageSettings())

    breakers = CircuitBreakers(db, threshold=config.circuit_failure_threshold, cooldown_s=config.circuit_cooldown_s)
    costs = CostTracker(
        db,
        prices,
        daily_budget=config.daily_budget_usd,
        monthly_budget=config.monthly_budget_usd,
        tenant_daily_budget=config.tenant_daily_budget_usd,
        tenant_monthly_budget=config.tenant_monthly_budget_usd,
        warning_ratio=config.budget_warning_ratio,
        retention_days=config.cost_retention_days,
    )
    llm = LanguageModels(router, breakers, costs)
    llm.install()
    breakers.declare(
        [service_circuit(s) for s in DOWNSTREAM]
        + [provider_circuit(p) for p in dict.fromkeys(router.providers_for("chat") + router.providers_for("agent"))]
    )

    channels = ChannelPool(settings)
    rag = RagClient(channels)
    peers = Peers.guarded(NlpClient(channels), rag, GraphClient(channels), breakers)
    summarize = conversation_summarizer(llm, peers.nlp)
    tokens = TokenBudget(prices)
    dlq = DeadLetterQueue(db, max_retries=config.dlq_max_retries,
                          backoff=Backoff(config.dlq_backoff_s, config.dlq_backoff_max_s),
                          claim_s=config.dlq_claim_s)
    register_metrics(breakers, dlq, costs)
    insights = InsightStore(db)
    conversations = ConversationStore(
        db,
        summarize,
        max_messages=config.conversation_max_messages,
        keep_last=config.conversation_keep_last,
        max_conversations=config.max_conversations,
    )
    health = HealthProbe(settings, channels)
    eval_store = EvalStore(db, max_sets=config.eval_max_sets)
    register_eval_metrics(eval_store)
    evaluations = Evaluations(
        eval_store,
        EvalRunner(eval_store, EvalAnswerSource(cast(GroundedAnswers, peers.rag)), identities=identities,
                   max_concurrent_runs=config.eval_max_concurrent_runs, item_concurrency=config.eval_item_concurrency,
                   max_inflight=config.eval_max_inflight, item_timeout_s=config.eval_item_timeout_s,
                   lease_s=config.eval_lease_s),
        SetLimits(max_items=config.eval_max_set_items),
    )
    operations = Operations(peers, ChatResponder(llm, conversations, insights, tokens, summarize), insights, costs,
                            health)
    for name in operations.names():
        dlq.register(name, functools.partial(operations.run, name))

    classifier = IntentClassifier(
        encoder_factory or get_embedder, min_confidence=config.intent_min_confidence, llm=llm_classifier(llm)
    )
    registry = ToolRegistry()
    register_builtins(registry, operations)
    hub = McpHub(config.mcp_server_configs(), registry, config.mcp_timeout_s)
    components = Components(
        health=health,
        supervisor=Supervisor(classifier, operations, dlq, costs, llm, tokens, config.max_batch_documents),
        agent=AgentLoop(registry, llm, config.agent_max_iterations),
        batch=BatchProcessor(
            operations,
            dlq,
            batch_size=config.batch_size,
            concurrency=config.batch_concurrency,
            max_documents=config.max_batch_documents,
        ),
        tools=registry,
        tokens=tokens,
        costs=costs,
        circuits=breakers,
        dlq=dlq,
        conversations=conversations,
        evaluations=evaluations,
        user_conversations=(user_conversations := UserConversations(db)),
        # Streamed straight from rag: the circuit breakers wrap unary calls (a stream's failure still reaches
        # the caller in-band).
        conversation_answers=ConversationAnswers(user_conversations, RagAnswerSource(rag)),
        model_servers=ModelServerFile(providers.model_server_file) if providers.model_server_file else None,
        providers=providers,
    )
    servicer = OrchestratorServicer(components)
    background: list[asyncio.Task] = []

    async def warm_classifier() -> None:
        try:
            await asyncio.to_thread(classifier.warm)
        except Exception:
            log.exception("warming the intent classifier failed")

    async def on_start() -> None:
        background.append(asyncio.create_task(dlq.run(config.dlq_poll_s), name="dlq-retries"))
        background.append(asyncio.create_task(warm_classifier(), name="warm-classifier"))
        await hub.start()

    async def on_stop() -> None:
        await evaluations.runner.stop()
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
        await hub.stop()
        await asyncio.to_thread(breakers.close)
        db.close()

    return ServiceBinding(
        name="orchestrator",
        full_names=[FULL_NAME],
        register=lambda server: orchestrator_service_pb2_grpc.add_OrchestratorServiceServicer_to_server(
            servicer, server
        ),
        on_start=on_start,
        on_stop=on_stop,
        channels=channels,
        # grpcurl at the gateway lists and describes every public service through this one (envoy_config).
        gateway_reflection=PEER_SERVICES,
    )

