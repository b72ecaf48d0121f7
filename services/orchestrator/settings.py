"""Settings of the orchestrator, read from ``DOCUTHINKER_*`` environment variables in one place."""

from __future__ import annotations

import json
from dataclasses import dataclass

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


@dataclass(frozen=True)
class McpServerConfig:
    """An external MCP server reached over stdio."""

    name: str
    """Short name; its tools appear as source ``mcp:<name>``."""
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    """Extra environment variables for the server process."""


class OrchestratorSettings(BaseSettings):
    """Resilience, budget, conversation, batch, evaluation and agent knobs of the orchestrator."""

    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_", frozen=True, extra="ignore")

    circuit_failure_threshold: int = Field(default=3, ge=1)
    """Consecutive failures that open a circuit (per provider and per downstream service)."""
    circuit_cooldown_s: float = Field(default=60.0, ge=0)
    """How long an open circuit waits before letting one half-open probe through."""
    daily_budget_usd: float = Field(default=10.0, ge=0)
    """LLM spend allowed per UTC day; requests beyond it get RESOURCE_EXHAUSTED (HTTP 429)."""
    monthly_budget_usd: float = Field(default=200.0, ge=0)
    """LLM spend allowed per UTC calendar month."""
    tenant_daily_budget_usd: float = Field(default=0.0, ge=0)
    """LLM spend one tenant may make per UTC day, within the mesh's budget; 0 means no per-tenant limit."""
    tenant_monthly_budget_usd: float = Field(default=0.0, ge=0)
    """LLM spend one tenant may make per UTC calendar month; 0 means no per-tenant limit."""
    budget_warning_ratio: float = Field(default=0.8, gt=0, le=1)
    """Share of a budget at which reports carry a warning (and the log says so)."""
    cost_retention_days: int = Field(default=62, ge=31)
    """Cost records older than this are pruned (monthly reports need 31 days)."""
    dlq_max_retries: int = Field(default=3, ge=0)
    """Automatic retries of a dead letter before it is parked for inspection."""
    dlq_backoff_s: float = Field(default=30.0, gt=0)
    """First retry delay of a dead letter; doubled on each further retry up to ``dlq_backoff_max_s``, each delay less
    up to a fifth at random so orchestrators' retries of letters that failed together spread out
    (``services/runtime/backoff.py``)."""
    dlq_backoff_max_s: float = Field(default=6 * 3600.0, gt=0)
    """Longest delay between two automatic retries of a dead letter."""
    dlq_poll_s: float = Field(default=5.0, gt=0)
    """How often the background task looks for dead letters that are due."""
    dlq_claim_s: float = Field(default=600.0, gt=0)
    """How long one orchestrator's claim on a dead letter it replays or retries keeps others from running it
    (renewed every third of it while the handler runs); an orchestrator that dies mid-attempt leaves the
    letter to the others after this."""
    conversation_max_messages: int = Field(default=20, ge=2)
    """Above this many messages the older ones are summarised."""
    conversation_keep_last: int = Field(default=10, ge=1)
    """Messages kept verbatim after a summarisation."""
    max_conversations: int = Field(default=10_000, ge=1)
    """Conversations kept per tenant; beyond it the tenant's own least recently used one is evicted."""
    batch_size: int = Field(default=10, ge=1)
    """Documents per batch of a batch request."""
    batch_concurrency: int = Field(default=3, ge=1)
    """Batches processed at the same time."""
    max_batch_documents: int = Field(default=1000, ge=1)
    """Largest batch request accepted."""
    agent_max_iterations: int = Field(default=10, ge=1, le=50)
    """Default cap of model turns in one agent run."""
    intent_min_confidence: float = Field(default=0.32, ge=0, le=1)
    """Offline classifier: below this similarity to the nearest intent's centroid the request falls back to
    chat.general (statements and noise scored 0.11-0.28, requests worded unlike any example 0.35-0.82; int8)."""
    eval_max_set_items: int = Field(default=500, ge=1, le=10_000)
    """Most questions one evaluation set may hold (a larger upload gets RESOURCE_EXHAUSTED)."""
    eval_max_sets: int = Field(default=100, ge=1)
    """Evaluation sets one tenant may keep."""
    eval_max_concurrent_runs: int = Field(default=2, ge=1)
    """Evaluation runs one tenant may have in progress at once, across every orchestrator replica."""
    eval_item_concurrency: int = Field(default=2, ge=1, le=32)
    """Questions of one evaluation run asked at the same time."""
    eval_max_inflight: int = Field(default=4, ge=1)
    """Questions of every evaluation run of one orchestrator asked at once (leaves the rest to interactive users)."""
    eval_item_timeout_s: float = Field(default=120.0, gt=0)
    """Deadline of one question of an evaluation run; a question past it is recorded as an error."""
    eval_lease_s: float = Field(default=60.0, gt=0)
    """How long a run stays owned by its orchestrator without a renewal (renewed every third of it); a run
    whose orchestrator died is marked interrupted after this."""
    mcp_servers: str = ""
    """External MCP servers as a JSON list of {name, command, args, env}; their tools join the agent's registry."""
    mcp_tenant: str = ""
    """Tenant the MCP server (``make mcp``) acts for; empty means the mesh's default tenant."""
    mcp_timeout_s: float = Field(default=30.0, gt=0)
    """Deadline of one MCP tool call and of connecting to an MCP server."""

    def mcp_server_configs(self) -> tuple[McpServerConfig, ...]:
        return parse_mcp_servers(self.mcp_servers)


def parse_mcp_servers(spec: str) -> tuple[McpServerConfig, ...]:
    """``[{"name": "fs", "command": "npx", "args": ["-y", "..."]}]`` -> configs; empty -> none."""
    if not spec.strip():
        return ()
    entries = json.loads(spec)
    if not isinstance(entries, list):
        raise ValueError("DOCUTHINKER_MCP_SERVERS must be a JSON list of {name, command, args}")
    configs = []
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("name") or not entry.get("command"):
            raise ValueError(f"bad DOCUTHINKER_MCP_SERVERS entry {entry!r}: name and command are required")
        env = entry.get("env") or {}
        configs.append(
            McpServerConfig(
                name=str(entry["name"]),
                command=str(entry["command"]),
                args=tuple(str(a) for a in entry.get("args") or ()),
                env=tuple((str(k), str(v)) for k, v in env.items()),
            )
        )
    return tuple(configs)
