"""The image's HEALTHCHECK (services/launcher/healthcheck.py): what it asks for each kind of container process."""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from services.launcher.healthcheck import check
from services.runtime.config import MeshSettings


@pytest.fixture
def listener():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_envoy_and_postgres_are_healthy_while_their_port_accepts(listener):
    settings = MeshSettings(gateway_port=listener)
    assert check(["/opt/venv/bin/envoy", "-c", "/run/envoy.yaml"], settings)[0]
    assert check(["/opt/pg/bin/postgres", "-D", "/pgdata", "-p", str(listener)], settings)[0]
    closed = _closed_port()
    assert not check(["envoy", "-c", "x"], MeshSettings(gateway_port=closed), timeout=1)[0]
    healthy, what = check(["postgres", "-p", str(closed)], settings, timeout=1)
    assert not healthy and str(closed) in what


def test_a_service_is_asked_on_its_own_port_through_the_grpc_health_service():
    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        settings = MeshSettings(rag_port=port, nlp_port=_closed_port())
        command = ["python", "-m", "services.rag"]
        servicer.set("", health_pb2.HealthCheckResponse.SERVING)
        assert check(command, settings) == (True, f"gRPC health of rag at 127.0.0.1:{port}")
        servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
        assert not check(command, settings)[0]
        assert not check(["python", "-m", "services.nlp"], settings, timeout=1)[0]  # nothing listens there
    finally:
        server.stop(None)


def test_an_unknown_process_is_not_reported_unhealthy():
    healthy, what = check(["sleep", "infinity"], MeshSettings())
    assert healthy and "nothing known to check" in what
