"""The gateway's own answers and limits, on the real Envoy binary with no service behind it:
every Envoy-generated error is google.rpc.Status JSON, and rate, connection and header limits hold."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager, nullcontext

import grpc
import httpx
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import HealthServicer

from gateway import envoy_config, observability, static_site
from gateway.edge_policy import LOCAL_REPLIES, EdgeSettings
from services.launcher.mesh import envoy_binary
from services.launcher.probes import EnvoyAdmin, free_port, healthy_clusters
from services.runtime.config import SERVICE_NAMES, MeshSettings


class _AnswerAfterTheWholeRequest(grpc.GenericRpcHandler):
    """Any RPC but health: reads the whole request stream, then UNIMPLEMENTED. Answering before the
    body has arrived would race the transcoder's own refusal of a body it cannot parse."""

    def service(self, handler_call_details):
        def unimplemented(requests, context):
            for _ in requests:
                pass
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "health-only upstream")

        return grpc.stream_stream_rpc_method_handler(unimplemented)


@contextmanager
def health_only_upstreams(ports: dict[str, int]) -> Iterator[None]:
    """One gRPC server on every service port that only answers health checks (SERVING): Envoy routes to it,
    and any RPC it forwards comes back UNIMPLEMENTED, an upstream answer rather than Envoy's own."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((_AnswerAfterTheWholeRequest(),))
    health = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    for name in SERVICE_NAMES:
        server.add_insecure_port(f"127.0.0.1:{ports[f'{name}_port']}")
    for service in ("", *(f"docuthinker.{n}.v1.{n.capitalize()}Service" for n in SERVICE_NAMES)):
        health.set(service, health_pb2.HealthCheckResponse.SERVING)
    server.start()
    try:
        yield
    finally:
        server.stop(0)


@contextmanager
def lone_envoy(tmp_path, edge: EdgeSettings, with_upstreams: bool = False, **mesh) -> Iterator[str]:
    """Envoy on free ports; its upstreams either absent (no healthy host anywhere) or health-only."""
    ports = {f"{name}_port": free_port() for name in (*SERVICE_NAMES, "gateway")}
    with health_only_upstreams(ports) if with_upstreams else nullcontext():
        with _envoy(tmp_path, edge, ports, mesh) as base:
            if with_upstreams:
                deadline = time.monotonic() + 30
                while len(healthy_clusters(_admin(tmp_path))) < len(SERVICE_NAMES):
                    assert time.monotonic() < deadline, "clusters never turned healthy"
                    time.sleep(0.1)
            yield base


@contextmanager
def _envoy(tmp_path, edge: EdgeSettings, ports: dict[str, int], mesh: dict) -> Iterator[str]:
    settings = MeshSettings(**ports, **mesh, data_dir=tmp_path, gateway_stats_port=0)
    config = envoy_config.write(tmp_path / "envoy.yaml", settings, edge=edge)
    proc = subprocess.Popen([envoy_binary(), "-c", str(config), "--disable-hot-restart", "--log-level", "error",
                             "--base-id", str(ports["gateway_port"] % 60000)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{settings.gateway_port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            if _admin(tmp_path).ready():  # the admin's, so the public rate limiter sees only the test's requests
                break
            assert time.monotonic() < deadline, "envoy did not start"
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(10)


def _admin(tmp_path) -> EnvoyAdmin:
    return EnvoyAdmin(observability.admin_socket(MeshSettings(data_dir=tmp_path)))


def active_connections(tmp_path, reached, timeout_s: float = 30.0) -> int:
    """Envoy's count of open client connections once ``reached(count)`` holds (read from its admin socket)."""
    deadline = time.monotonic() + timeout_s
    while True:
        stats = _admin(tmp_path).get("/stats", {"filter": r"^http\.ingress\.downstream_cx_active$", "format": "json"},
                                     timeout=5).json()
        count = int(stats["stats"][0]["value"])
        if reached(count):
            return count
        assert time.monotonic() < deadline, f"{count} open connections after {timeout_s}s"
        time.sleep(0.05)


NO_LIMITS = EdgeSettings(client_rps=0, tenant_rps=0)


def _status(reply: httpx.Response, http_status: int, reason: str) -> dict:
    assert reply.status_code == http_status, reply.text
    assert reply.headers["content-type"].startswith("application/json"), reply.headers
    body = reply.json()
    assert body["code"] == LOCAL_REPLIES[http_status][0] and body["message"].strip()
    info = [d for d in body["details"] if d["@type"].endswith("google.rpc.ErrorInfo")]
    assert info and info[0]["reason"] == reason and info[0]["domain"] == "docuthinker.dev"
    return body


def test_every_answer_envoy_makes_itself_is_a_google_rpc_status(tmp_path):
    with lone_envoy(tmp_path, NO_LIMITS, with_upstreams=True) as base:
        bad_json = httpx.post(f"{base}/v1/graph/query", content=b"{bad", timeout=10)
        assert "Expected" in _status(bad_json, 400, "BAD_REQUEST")["message"]
        _status(httpx.post(f"{base}/v1/graph/query", json={"cypher": 42}, timeout=10), 400, "BAD_REQUEST")
        _status(httpx.get(f"{base}/v1/graph/stats?bogus=1", timeout=10), 400, "BAD_REQUEST")
        assert "Could not resolve" in _status(httpx.get(f"{base}/v1/no-such-route", timeout=10), 404,
                                              "NOT_FOUND")["message"]
        # An upstream's own answer is left as it is (here UNIMPLEMENTED from the health-only server).
        forwarded = httpx.post(f"{base}/v1/search", json={"query": "anything"}, timeout=10)
        assert forwarded.status_code == 501 and forwarded.json()["message"] == "health-only upstream", forwarded.text
    with lone_envoy(tmp_path, NO_LIMITS) as base:
        down = httpx.post(f"{base}/v1/search", json={"query": "anything"}, timeout=10)
        assert "no healthy upstream" in _status(down, 503, "SERVICE_UNAVAILABLE")["message"]


def test_rate_limits_per_client_and_per_tenant_answer_429_with_retry_info(tmp_path):
    def stats(base: str, tenant: str) -> httpx.Response:
        return httpx.get(f"{base}/v1/graph/stats", headers={"x-tenant-id": tenant}, timeout=10)

    # Per tenant: acme spends its burst of 3 (at most one more token refills meanwhile); globex is untouched.
    with lone_envoy(tmp_path, EdgeSettings(client_rps=1000, tenant_rps=1, tenant_burst=3)) as base:
        acme = [stats(base, "acme") for _ in range(6)]
        assert [r.status_code for r in acme[:3]] == [503] * 3
        limited = [r for r in acme if r.status_code == 429]
        assert len(limited) >= 2, [r.status_code for r in acme]
        body = _status(limited[0], 429, "RATE_LIMITED")
        assert limited[0].headers["retry-after"] == "1"
        assert any(d["@type"].endswith("google.rpc.RetryInfo") for d in body["details"])
        assert [stats(base, "globex").status_code for _ in range(3)] == [503] * 3
    # Per client: one address spends its burst whatever tenant it names.
    with lone_envoy(tmp_path, EdgeSettings(client_rps=1, client_burst=3, tenant_rps=0)) as base:
        codes = [stats(base, f"tenant-{i}").status_code for i in range(6)]
        assert codes[:3] == [503] * 3 and codes.count(429) >= 2, codes
        # The web app's files count against no budget: a page load asks for all of them at once, and with them
        # limited the app started without its modules after a few reloads.
        site = [httpx.get(f"{base}{path}", timeout=10).status_code for _ in range(3) for path in static_site.site_files()]
        assert set(site) == {200}, site
        assert 429 in [stats(base, "tenant-x").status_code for _ in range(4)]  # while the API stays limited


def test_slow_header_senders_are_cut_off_and_connections_are_capped(tmp_path):
    edge = EdgeSettings(client_rps=0, tenant_rps=0, request_headers_timeout_s=1.0, max_connections=30)
    with lone_envoy(tmp_path, edge) as base:
        port = int(base.rsplit(":", 1)[1])
        slow = []
        for _ in range(20):  # slowloris: a request line and one header, then nothing
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")
            slow.append(s)
        closed = 0
        for s in slow:
            try:
                while s.recv(4096):  # Envoy may send a 408 before closing
                    pass
                closed += 1
            except (ConnectionResetError, TimeoutError):
                closed += 1 if isinstance(s, socket.socket) else 0
            finally:
                s.close()
        assert closed == 20, f"{20 - closed} slow connections were still open after 10 s"

        held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(30)]
        try:
            active_connections(tmp_path, lambda n: n >= 30)  # Envoy has accepted all of them: the cap is reached
            refused = 0
            for _ in range(5):
                try:
                    reply = httpx.get(f"{base}/v1/graph/stats", timeout=5)
                    assert reply.status_code != 200
                except httpx.TransportError:
                    refused += 1
            assert refused == 5, f"{5 - refused} requests got through past the connection limit"
        finally:
            for s in held:
                s.close()
        active_connections(tmp_path, lambda n: n < 30)
        assert httpx.get(f"{base}/v1/graph/stats", timeout=5).status_code == 503  # room again once they close
