"""Ports and readiness probes of the processes the launcher starts (gRPC health, Envoy's admin, HTTP)."""

from __future__ import annotations

import pathlib
import socket
import threading
import urllib.request

import grpc
import httpx
from grpc_health.v1 import health_pb2, health_pb2_grpc

_ISSUED_PORTS: set[int] = set()
_ISSUED_LOCK = threading.Lock()


def free_port() -> int:
    """A port free now and never handed out before by this process.

    The kernel may give the same free port to two binds in a row once the first socket is closed; a mesh picks
    its ~25 ports before any child binds them, so without the record two children would now and then be given
    one port and the second would exit on EADDRINUSE.
    """
    with _ISSUED_LOCK:
        while True:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            if port not in _ISSUED_PORTS:
                _ISSUED_PORTS.add(port)
                return port


def grpc_serving(address: str, timeout: float = 1.0) -> bool:
    try:
        with grpc.insecure_channel(address) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=timeout)
            return reply.status == health_pb2.HealthCheckResponse.SERVING
    except grpc.RpcError:
        return False


class EnvoyAdmin:
    """Envoy's admin interface on its unix socket (``gateway/observability.py``: only the mesh's user opens it)."""

    def __init__(self, socket_path: pathlib.Path) -> None:
        self.socket_path = pathlib.Path(socket_path)

    def get(self, path: str, params: dict[str, str] | None = None, timeout: float = 1.0) -> httpx.Response:
        """A GET of ``path`` (``/clusters``, ``/stats`` ...); raises ``httpx.HTTPError`` when Envoy does not answer."""
        transport = httpx.HTTPTransport(uds=str(self.socket_path))
        with httpx.Client(transport=transport, base_url="http://envoy-admin", timeout=timeout) as client:
            return client.get(path, params=params)

    def ready(self) -> bool:
        try:
            return self.get("/ready").status_code == 200
        except httpx.HTTPError:
            return False


def healthy_clusters(admin: EnvoyAdmin, port: int | None = None) -> set[str]:
    """The clusters for which Envoy holds a healthy host (on ``port``, if given; its admin /clusters view):
    those it routes to."""
    try:
        clusters = admin.get("/clusters", {"format": "json"}).json()
    except (httpx.HTTPError, ValueError):
        return set()
    return {
        cluster.get("name", "")
        for cluster in clusters.get("cluster_statuses", [])
        if any(
            host.get("health_status", {}).get("eds_health_status") == "HEALTHY"
            and not host.get("health_status", {}).get("failed_active_health_check", False)
            and (port is None or host.get("address", {}).get("socket_address", {}).get("port_value") == port)
            for host in cluster.get("host_statuses", [])
        )
    }


def http_serving(url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            return reply.status == 200
    except OSError:
        return False
