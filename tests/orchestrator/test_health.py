"""``/v1/health`` calls a service SERVING only once the gateway routes to it (Envoy's own view, from its stats
listener), so a client told SERVING is never answered "no healthy upstream"; where the gateway cannot be asked,
the service's own answer stands."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from services.orchestrator.health import NOT_ROUTED, GatewayView, HealthProbe
from services.runtime.config import MeshSettings


class _Channels:
    """Every downstream service answers its own health check SERVING."""

    async def serving_status(self, service: str, timeout_s: float) -> str:
        return "SERVING"


@contextmanager
def _stats_listener(text: str) -> Iterator[str]:
    """Envoy's stats listener: ``/stats/prometheus`` with the given body (the filter applied by Envoy)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            assert self.path.startswith("/stats/prometheus?filter=")
            body = text.encode()
            self.send_response(200)
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


STATS = """# TYPE envoy_cluster_membership_healthy gauge
envoy_cluster_membership_healthy{envoy_cluster_name="graph"} 1
envoy_cluster_membership_healthy{envoy_cluster_name="nlp"} 2
envoy_cluster_membership_healthy{envoy_cluster_name="rag"} 0
"""


async def test_a_service_envoy_does_not_route_to_yet_is_not_serving(tmp_path):
    with _stats_listener(STATS) as target:
        settings = MeshSettings(data_dir=tmp_path, gateway_stats_target=target)
        report = {s.name: s for s in await HealthProbe(settings, _Channels()).check_all()}  # type: ignore[arg-type]
    assert report["rag"].status == "NOT_SERVING" and report["rag"].detail == NOT_ROUTED
    assert report["nlp"].status == report["graph"].status == "SERVING"


async def test_without_the_gateways_view_a_services_own_answer_stands(tmp_path):
    unasked = MeshSettings(data_dir=tmp_path)  # no stats target (Kubernetes): not consulted
    assert {s.status for s in await HealthProbe(unasked, _Channels()).check_all()} == {"SERVING"}  # type: ignore[arg-type]
    silent = GatewayView("127.0.0.1:9", timeout_s=0.5)  # nothing listens: the gateway cannot be asked
    assert await silent.healthy_hosts() is None
    report = await HealthProbe(unasked, _Channels(), gateway=silent).check_all()  # type: ignore[arg-type]
    assert {s.status for s in report} == {"SERVING"}
