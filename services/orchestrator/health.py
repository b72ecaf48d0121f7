"""Aggregated health of the mesh: the orchestrator's view of every downstream service.

Under ``make run`` the launcher's supervisor restarts services that die; its view (state,
restarts, last exit) is read from its state file in the data directory and shown beside each
service's own gRPC health, so ``/v1/health`` says a service is down *and* being restarted.

A service that answers SERVING is not yet reachable through the gateway: Envoy routes to it only
once its own health check of the service has passed (up to two seconds after a restart). So when
the gateway's stats listener is known (``gateway_stats_target``, set by the launcher), the report
asks Envoy how many healthy hosts it holds per cluster, and a service Envoy routes none of its
requests to is NOT_SERVING, with the reason in ``detail``. Where the gateway cannot be asked the
service's own answer stands.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass

import httpx

from services.models.cpu_features import cpu_features
from services.models.embedder import identity
from services.models.int8_kernels import last_check
from services.models.settings import embedder_settings
from services.runtime.clients import ChannelPool
from services.runtime.config import MeshSettings
from services.runtime.errors import RemoteError
from services.runtime.supervision import read_state

DOWNSTREAM = ("rag", "nlp", "graph")
NOT_ROUTED = "SERVING, but the gateway does not route to it yet: its health check has not passed"
_HEALTHY_HOSTS = re.compile(r'^envoy_cluster_membership_healthy\{envoy_cluster_name="([^"]+)"\} (\d+)', re.MULTILINE)

log = logging.getLogger("docuthinker.orchestrator.health")


class GatewayView:
    """Envoy's own view of its upstreams, read from its stats listener (``/stats/prometheus``)."""

    def __init__(self, target: str, timeout_s: float = 1.0) -> None:
        self._url = f"http://{target}/stats/prometheus"
        self._timeout_s = timeout_s

    async def healthy_hosts(self) -> dict[str, int] | None:
        """Healthy hosts per cluster (those Envoy routes to); None when the gateway does not answer."""
        try:
            async with httpx.AsyncClient(timeout=self._timeout_s) as client:
                reply = await client.get(self._url, params={"filter": r"^cluster\.[^.]+\.membership_healthy$"})
            reply.raise_for_status()
        except httpx.HTTPError as exc:
            log.info("gateway view unavailable", extra={"fields": {"error": str(exc) or type(exc).__name__}})
            return None
        return {name: int(count) for name, count in _HEALTHY_HOSTS.findall(reply.text)}


@dataclass(frozen=True)
class ServiceHealth:
    name: str
    status: str  # SERVING, NOT_SERVING, UNKNOWN or UNREACHABLE
    address: str
    latency_ms: float
    detail: str = ""
    supervisor_state: str = ""
    restarts: int = 0
    last_exit: str = ""


class HealthProbe:
    """Checks each downstream service with the standard gRPC health protocol."""

    def __init__(self, settings: MeshSettings, channels: ChannelPool, timeout_s: float = 2.0,
                 gateway: GatewayView | None = None) -> None:
        self._settings = settings
        self._channels = channels
        self._timeout_s = timeout_s
        self._gateway = gateway or (GatewayView(settings.gateway_stats_target) if settings.gateway_stats_target
                                    else None)

    async def _check(self, name: str, routed: dict[str, int] | None) -> ServiceHealth:
        address = self._settings.address_of(name)
        started = time.perf_counter()
        try:
            status, detail = await self._channels.serving_status(name, self._timeout_s), ""
        except RemoteError as exc:
            status, detail = "UNREACHABLE", f"{exc.code.name}: {exc.status.message}"
        if status == "SERVING" and routed is not None and routed.get(name, 0) == 0:
            status, detail = "NOT_SERVING", NOT_ROUTED
        supervised = read_state(self._settings.data_dir).get(name, {})
        return ServiceHealth(
            name, status, address, (time.perf_counter() - started) * 1000, detail,
            supervisor_state=str(supervised.get("state", "")), restarts=int(supervised.get("restarts", 0)),
            last_exit=str(supervised.get("last_exit", "")),
        )

    async def check_all(self) -> list[ServiceHealth]:
        routed = await self._gateway.healthy_hosts() if self._gateway is not None else None
        return list(await asyncio.gather(*(self._check(name, routed) for name in DOWNSTREAM)))

    def supervisor_view(self, name: str) -> dict:
        """The supervisor's entry for ``name`` (e.g. the orchestrator itself, or Envoy as ``gateway``)."""
        return read_state(self._settings.data_dir).get(name, {})


def embedding_model_health() -> dict:
    """This process's embedding model and CPU int8 path, with its load-time kernel check (``int8_kernels``)."""
    runtime = embedder_settings().runtime
    cpu = cpu_features()
    check = last_check() if runtime == "onnx-int8" else None
    return {"identity": identity(runtime), "runtime": runtime, "cpu_model": cpu.model, "cpu_flags": list(cpu.flags),
            "vnni": cpu.vnni, "int8_path": cpu.int8_path,
            "kernel_check": "not_run" if check is None else ("passed" if check.passed else "failed"),
            "kernel_min_cosine": check.min_cosine if check else 0.0}
