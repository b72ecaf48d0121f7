"""Mesh-wide configuration, read from environment variables in one place.

Every variable is listed in the README's configuration table. Service-specific settings
live next to their service (e.g. ``services.rag.settings``) and use the same prefix.
"""

from __future__ import annotations

import pathlib
from collections.abc import Mapping
from typing import TypeVar

from pydantic import Field
from pydantic_settings import BaseSettings, EnvSettingsSource, SettingsConfigDict
from pydantic_settings.sources.utils import parse_env_vars

from services.runtime.peers import Peer, parse_peer

SERVICE_NAMES = ("orchestrator", "rag", "nlp", "graph")


DEFAULT_TENANT = "default"
"""``MeshSettings.default_tenant`` unless configured; also the tenant of work outside any request."""


class MeshSettings(BaseSettings):
    """Addresses, data location and runtime behaviour shared by every process."""

    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_", frozen=True, extra="ignore")

    host: str = "127.0.0.1"
    """Interface every process binds to (its gRPC, metrics and HTTP ports; ``0.0.0.0`` in a container). Peers are
    dialled at their ``*_TARGET``, never at this."""
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
    orchestrator_target: str = ""
    """Where peers and Envoy reach the orchestrator: ``host:port``, a comma list of IP ``host:port`` (replicas), or
    ``dns:///name:port`` (every address of the name, e.g. a headless Service); calls are balanced round-robin.
    Empty: this machine, on ``DOCUTHINKER_ORCHESTRATOR_PORT``."""
    rag_target: str = ""
    """Where peers and Envoy reach the RAG service (forms as ``DOCUTHINKER_ORCHESTRATOR_TARGET``)."""
    nlp_target: str = ""
    """Where peers and Envoy reach the NLP service (forms as ``DOCUTHINKER_ORCHESTRATOR_TARGET``)."""
    graph_target: str = ""
    """Where peers and Envoy reach the graph service (forms as ``DOCUTHINKER_ORCHESTRATOR_TARGET``)."""
    openai_api_target: str = ""
    """Where Envoy reaches the OpenAI-compatible chat API (forms as ``DOCUTHINKER_ORCHESTRATOR_TARGET``)."""
    max_connection_age_s: float = Field(default=300.0, gt=0)
    """A server closes each client connection (gracefully) after this long, so clients re-resolve ``dns:///``
    targets and spread over replicas added since (a scale-out)."""
    gateway_port: int = 8080
    """Envoy's public listener (REST and gRPC)."""
    gateway_admin_socket: pathlib.Path | None = None
    """Envoy's admin interface (config dump, stats, ``/quitquitquit``): a unix socket of mode 0600, so only the
    mesh's own user reaches it, never a TCP port. Unset: ``<data_dir>/run/gateway-admin.sock``."""
    gateway_stats_port: int = 9902
    """An Envoy listener serving only its Prometheus stats (``/stats/prometheus``, read-only): what Prometheus
    scrapes and where the orchestrator reads which services Envoy routes to; 0: none."""
    gateway_stats_target: str = ""
    """Where services read Envoy's view of its upstreams (the stats listener, ``host:port``): ``/v1/health`` calls a
    service SERVING only once Envoy routes to it. The launcher sets it; empty: not consulted."""
    data_dir: pathlib.Path = pathlib.Path("data")
    """Root of every embedded store (SQLite, vector log, FAISS, BM25, graph)."""
    log_dir: pathlib.Path = pathlib.Path("logs")
    """Where ``make run`` writes one log per process."""
    log_level: str = "INFO"
    """Log level of every process (JSON lines on stderr)."""
    default_tenant: str = DEFAULT_TENANT
    """Tenant used when a request carries no ``x-tenant-id`` metadata."""
    shutdown_grace_s: float = Field(default=5.0, ge=0)
    """How long in-flight RPCs may run after SIGTERM before they are cancelled; then as long again for work left in
    worker threads (a model warm-up, a computation whose caller has gone) before the process exits without it."""
    downstream_timeout_s: float = Field(default=30.0, gt=0)
    """Deadline for calls to other services when the caller set none."""
    peer_keepalive_s: float = Field(default=2.0, gt=0)
    """Services ping the peers they call this often (HTTP/2 PING) while connected (``services/runtime/keepalive.py``)."""
    peer_keepalive_timeout_s: float = Field(default=3.0, gt=0)
    """A peer whose connection answers no ping for this long is declared gone: its calls end with UNAVAILABLE
    (a paused or hung peer fails its callers within about ``peer_keepalive_s`` + this, not at their deadline)."""
    max_message_bytes: int = 64 * 1024 * 1024
    """gRPC message size limit (uploads are bounded by ``max_upload_bytes``)."""
    max_upload_bytes: int = Field(default=25 * 1024 * 1024, gt=0)
    """Largest accepted document: Envoy answers 413 above it, the RAG service INVALID_ARGUMENT (UPLOAD_TOO_LARGE)."""
    device: str = "cpu"
    """Where the models of every process run: ``cpu``, or ``cuda`` (``cuda:N``) for a GPU. The embedder uses it with
    ``DOCUTHINKER_EMBED_RUNTIME=torch`` (the ONNX runtimes are CPU-only) and falls back to the CPU when PyTorch sees no
    GPU; speech-to-text runs Whisper on the GPU in float16 (int8 on the CPU). One rule for both:
    ``services.runtime.devices.compute_device``."""

    mesh_credential_file: pathlib.Path | None = None
    """The per-mesh secret service ports require of every caller but health checks and reflection
    (``services/runtime/mesh_auth.py``); the launcher creates ``<data_dir>/auth/mesh-credential`` on first start
    and sets this for every child. Unset: service ports accept any caller (a warning is logged)."""

    metrics_enabled: bool = True
    """Record RPC metrics and serve them (``/metrics``) on each process's metrics port."""
    orchestrator_metrics_port: int = 9460
    """Prometheus ``/metrics`` port of the orchestrator (Envoy's are on its stats listener, ``/stats/prometheus``)."""
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

    @property
    def local_host(self) -> str:
        """The address a process on this machine dials this machine's services at."""
        return "127.0.0.1" if self.host in ("0.0.0.0", "", "::") else self.host

    def peer_of(self, service: str) -> Peer:
        """How to reach ``service``: its ``*_TARGET``, or this machine's port when that is empty."""
        configured = str(getattr(self, f"{service}_target"))
        return parse_peer(configured or f"{self.local_host}:{self.port_of(service)}")

    def address_of(self, service: str) -> str:
        return str(self.peer_of(service))


S = TypeVar("S", bound=BaseSettings)


def settings_from_env(cls: type[S], env: Mapping[str, str]) -> S:
    """``cls`` read from ``env`` instead of this process's environment (the launcher's settings of its children)."""

    class _Mapping(EnvSettingsSource):
        def _load_env_vars(self) -> Mapping[str, str | None]:
            return parse_env_vars(env, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str)

    return cls(**_Mapping(cls)())
