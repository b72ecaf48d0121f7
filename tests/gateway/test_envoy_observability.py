"""Envoy's part in observability: the OpenTelemetry tracer (only with a collector), the JSON access log with
trace ids, and the stats-only listener; every variant is validated by the real Envoy binary."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from gateway import envoy_config, observability
from services.launcher.mesh import envoy_binary
from services.runtime.config import MeshSettings


def _hcm(config: dict, listener: str = "public") -> dict:
    found = [entry for entry in config["static_resources"]["listeners"] if entry["name"] == listener]
    return found[0]["filter_chains"][0]["filters"][0]["typed_config"]


def _validate(tmp_path, config: dict) -> None:
    path = tmp_path / "envoy.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    done = subprocess.run([envoy_binary(), "--mode", "validate", "-c", str(path), "--disable-hot-restart"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_tracing_is_off_without_a_collector(tmp_path):
    config = envoy_config.render(MeshSettings())
    assert "tracing" not in _hcm(config)
    assert observability.COLLECTOR_CLUSTER not in {c["name"] for c in config["static_resources"]["clusters"]}
    log_format = _hcm(config)["access_log"][0]["typed_config"]["log_format"]["json_format"]
    assert log_format["trace_id"] == "%TRACE_ID%" and log_format["status"] == "%RESPONSE_CODE%"
    _validate(tmp_path, config)


@pytest.mark.parametrize(("endpoint", "ratio", "percent"), [("127.0.0.1:4317", 0.1, 10.0),
                                                             ("http://collector.local:4317", 1.0, 100.0)])
def test_a_collector_turns_on_envoys_opentelemetry_tracer(tmp_path, endpoint, ratio, percent):
    config = envoy_config.render(MeshSettings(otlp_endpoint=endpoint, trace_sample_ratio=ratio))
    tracing = _hcm(config)["tracing"]
    assert tracing["random_sampling"] == {"value": percent}
    provider = tracing["provider"]
    assert provider["name"] == "envoy.tracers.opentelemetry"
    assert provider["typed_config"]["grpc_service"]["envoy_grpc"]["cluster_name"] == observability.COLLECTOR_CLUSTER
    collector = [c for c in config["static_resources"]["clusters"] if c["name"] == observability.COLLECTOR_CLUSTER][0]
    address = collector["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]["socket_address"]
    assert (address["address"], address["port_value"]) == (endpoint.split("//")[-1].split(":")[0], 4317)
    assert collector["type"] == ("STATIC" if endpoint.startswith("127.") else "STRICT_DNS")
    _validate(tmp_path, config)


def test_the_stats_listener_serves_only_prometheus_stats(tmp_path):
    config = envoy_config.render(MeshSettings(gateway_stats_port=9902))
    routes = _hcm(config, "stats")["route_config"]["virtual_hosts"][0]["routes"]
    assert [r["match"]["path"] for r in routes] == ["/stats/prometheus"]
    assert routes[0]["route"]["cluster"] == observability.ADMIN_CLUSTER
    unlisted = envoy_config.render(MeshSettings(gateway_stats_port=0))["static_resources"]["listeners"]
    assert "stats" not in {entry["name"] for entry in unlisted}
    _validate(tmp_path, config)
