"""Ports and readiness probes of the processes the launcher starts (gRPC health, Envoy's clusters, HTTP)."""

from __future__ import annotations

import json
import socket
import threading
import urllib.request

import grpc
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


def healthy_clusters(admin_url: str, port: int | None = None) -> set[str]:
    """The clusters for which Envoy holds a healthy host (on ``port``, if given; its admin /clusters view):
    those it routes to."""
    try:
        with urllib.request.urlopen(f"{admin_url}/clusters?format=json", timeout=1) as reply:
            clusters = json.load(reply)
    except (OSError, ValueError):
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
