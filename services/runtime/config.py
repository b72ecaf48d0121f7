"""Mesh-wide configuration, read from environment variables in one place.

Every variable is listed in the README's configuration table. Service-specific settings
live next to their service (e.g. ``services.rag.settings``) and use the same prefix.
"""

from __future__ import annotations

import pathlib

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

SERVICE_NAMES = ("orchestrator", "rag", "nlp", "graph")


DEFAULT_TENANT = "default"
"""``MeshSettings.default_tenant`` unless configured; also the tenant of work outside any request."""


class MeshSettings(BaseSettings):
    """Addresses, data location and runtime behaviour shared by every process."""

    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_", frozen=True, extra="ignore")

    host: str = "127.0.0.1"
    """Interface the services bind to and dial each other on."""
    orchestrator_port: int = 50050
    """gRPC port of the orchestrator service."""
    rag_port: int = 50051
    """gRPC port of the RAG service."""
    nlp_port: int = 50052
    """gRPC port of the NLP service."""
    graph_port: int = 50053
    """gRPC port of the graph service."""
    openai_api_port: int = 50054
    """HTTP port of the OpenAI-compatible chat API (``/v1/chat/completions``, ``/v1/models``; Envoy routes to it)."""
    gateway_port: int = 8080
    """Envoy's public listener (REST and gRPC)."""
    gateway_admin_port: int = 9901
    """Envoy admin interface, bound to 127.0.0.1 only."""
    gateway_stats_port: int = 0
    """An Envoy listener serving only its Prometheus stats (``/stats/prometheus``), for a Prometheus that cannot
    reach the admin port (a cluster); 0: none."""
    data_dir: pathlib.Path = pathlib.Path("data")
    """Root of every embedded store (SQLite, Chroma, FAISS, BM25, graph)."""
    log_dir: pathlib.Path = pathlib.Path("logs")
    """Where ``make run`` writes one log per process."""
    log_level: str = "INFO"
    """Log level of every process (JSON lines on stderr)."""
    default_tenant: str = DEFAULT_TENANT
    """Tenant used when a request carries no ``x-tenant-id`` metadata."""
    shutdown_grace_s: float = Field(default=5.0, ge=0)
    """How long in-flight RPCs may run after SIGTERM before they are cancelled."""
    downstream_timeout_s: float = Field(default=30.0, gt=0)
    """Deadline for calls to other services when the caller set none."""
    max_message_bytes: int = 64 * 1024 * 1024
    """gRPC message size limit (uploads are bounded by ``max_upload_bytes``)."""
    max_upload_bytes: int = Field(default=25 * 1024 * 1024, gt=0)
    """Largest accepted document: Envoy answers 413 above it, the RAG service RESOURCE_EXHAUSTED."""

    metrics_enabled: bool = True
    """Record RPC metrics and serve them (``/metrics``) on each process's metrics port."""
    orchestrator_metrics_port: int = 9460
    """Prometheus ``/metrics`` port of the orchestrator (Envoy's are on its admin port, ``/stats/prometheus``)."""
    rag_metrics_port: int = 9461
    """Prometheus ``/metrics`` port of the RAG service."""
    nlp_metrics_port: int = 9462
    """Prometheus ``/metrics`` port of the NLP service."""
    graph_metrics_port: int = 9463
    """Prometheus ``/metrics`` port of the graph service."""
    otlp_endpoint: str = ""
    """OTLP/gRPC trace collector (``host:port``) for Envoy and every service; empty: tracing off."""
    trace_sample_ratio: float = Field(default=1.0, ge=0, le=1)
    """Share of requests traced (Envoy samples at the edge; services follow its decision)."""

    def port_of(self, service: str) -> int:
        return int(getattr(self, f"{service}_port"))

    def metrics_port_of(self, service: str) -> int:
        return int(getattr(self, f"{service}_metrics_port"))

    def address_of(self, service: str) -> str:
        return f"{self.host}:{self.port_of(service)}"
