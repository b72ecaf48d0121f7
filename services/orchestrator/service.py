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

from docuthinker.orchestrator.v1 import orchestrator_service_pb2, orchestrator_service_pb2_grpc
from services.graph.client import GraphClient
from services.models.embedder import get_embedder
from services.nlp.client import NlpClient
from services.orchestrator.agent_loop import AgentLoop
from services.orchestrator.batch import BatchProcessor
from services.orchestrator.chat import ChatResponder
from services.orchestrator.circuit_breaker import CircuitBreakers
from services.orchestrator.conversations import ConversationStore
from services.orchestrator.costs import CostTracker
from services.orchestrator.database import open_database
from services.orchestrator.dlq import DeadLetterQueue
from services.orchestrator.downstream import Peers, provider_circuit, service_circuit
from services.orchestrator.operations import Operations
from services.orchestrator.health import DOWNSTREAM, HealthProbe
from services.orchestrator.insights import InsightStore
from services.orchestrator.intents import Encoder, IntentClassifier
from services.orchestrator.llm import LanguageModels
from services.orchestrator.mcp.client import McpHub
from services.orchestrator.observability import register_metrics
from services.orchestrator.servicer import Components, OrchestratorServicer
from services.orchestrator.settings import OrchestratorSettings
from services.orchestrator.summarizer import conversation_summarizer
from services.orchestrator.supervisor import Supervisor, llm_classifier
from services.orchestrator.tokens import TokenBudget
from services.orchestrator.tools import ToolRegistry, register_builtins
from services.providers.pricing import load_price_table
from services.providers.router import Router
from services.providers.settings import ProviderSettings
from services.rag.client import RagClient
from services.runtime import ChannelPool, MeshSettings, ServiceBinding
from services.storage.settings import StorageSettings

FULL_NAME = orchestrator_service_pb2.DESCRIPTOR.services_by_name["OrchestratorService"].full_name

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
    peers = Peers.guarded(NlpClient(channels), RagClient(channels), GraphClient(channels), breakers)
    summarize = conversation_summarizer(llm, peers.nlp)
    tokens = TokenBudget(prices)
    dlq = DeadLetterQueue(db, max_retries=config.dlq_max_retries, backoff_s=config.dlq_backoff_s,
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
    )
    servicer = OrchestratorServicer(components)
    background: list[asyncio.Task] = []

    async def warm_classifier() -> None:
        try:
            await asyncio.to_thread(classifier.warm)
        except Exception:  # noqa: BLE001 - classification will retry the load and report then
            log.exception("warming the intent classifier failed")

    async def on_start() -> None:
        background.append(asyncio.create_task(dlq.run(config.dlq_poll_s), name="dlq-retries"))
        background.append(asyncio.create_task(warm_classifier(), name="warm-classifier"))
        await hub.start()

    async def on_stop() -> None:
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
    )

