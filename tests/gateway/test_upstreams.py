"""Envoy's clusters over every replica of a service (list and DNS targets), validated by the real Envoy binary."""

from __future__ import annotations

import subprocess

import yaml

from gateway import envoy_config, rpc_routes
from services.launcher.mesh import envoy_binary
from services.runtime.config import MeshSettings


def _clusters(config: dict) -> dict[str, dict]:
    return {c["name"]: c for c in config["static_resources"]["clusters"]}


def _addresses(cluster: dict) -> list[tuple[str, int]]:
    return [(e["endpoint"]["address"]["socket_address"]["address"], e["endpoint"]["address"]["socket_address"]["port_value"])
            for group in cluster["load_assignment"]["endpoints"] for e in group["lb_endpoints"]]


def _validate(tmp_path, config: dict) -> None:
    path = tmp_path / "envoy.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    done = subprocess.run([envoy_binary(), "--mode", "validate", "-c", str(path), "--disable-hot-restart"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_every_replica_is_an_endpoint_checked_and_ejected_on_its_own(tmp_path):
    settings = MeshSettings(rag_target="127.0.0.1:50051,127.0.0.1:50061", nlp_target="dns:///docuthinker-nlp:50052",
                            openai_api_target="docuthinker-openai-api:50054")
    clusters = _clusters(envoy_config.render(settings))
    rag, nlp, chat, graph = clusters["rag"], clusters["nlp"], clusters["openai_api"], clusters["graph"]
    assert (rag["type"], _addresses(rag)) == ("STATIC", [("127.0.0.1", 50051), ("127.0.0.1", 50061)])
    # A name of many pods (headless Service): Envoy resolves it and holds one host per address.
    assert (nlp["type"], _addresses(nlp)) == ("STRICT_DNS", [("docuthinker-nlp", 50052)])
    assert chat["type"] == "STRICT_DNS" and "http_health_check" in chat["health_checks"][0]
    assert _addresses(graph) == [("127.0.0.1", 50053)]  # empty target: this machine's port
    for cluster in (rag, nlp, graph):
        assert cluster["health_checks"][0]["grpc_health_check"]["service_name"].startswith("docuthinker.")
    for cluster in (rag, nlp):  # replicas (an address list, a DNS name of many pods): ejected one by one
        outliers = cluster["outlier_detection"]
        assert outliers["consecutive_local_origin_failure"] and outliers["enforcing_consecutive_5xx"] == 0
    # A lone host is never ejected (nowhere to move its traffic): only its health check takes it out and back.
    assert "outlier_detection" not in graph
    _validate(tmp_path, envoy_config.render(settings))


def test_retries_of_idempotent_calls_go_to_another_replica():
    routes = rpc_routes.routes("rag", rpc_routes.load_methods()["rag"], replicated=True)
    search = next(r for r in routes if r["name"].endswith("/Search"))["route"]
    predicates = [p["name"] for p in search["retry_policy"]["retry_host_predicate"]]
    assert predicates == ["envoy.retry_host_predicates.previous_hosts"]
    upload = next(r for r in routes if r["name"].endswith("/IngestDocument"))["route"]
    assert "retry_policy" not in upload


def _retry_on(config: dict, path: str) -> str:
    hcm = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    routes = {r["name"]: r["route"] for r in hcm["route_config"]["virtual_hosts"][0]["routes"] if "route" in r}
    return routes[path]["retry_policy"]["retry_on"]


def test_a_call_reset_under_it_is_retried_only_where_another_replica_may_take_it():
    search = "/docuthinker.rag.v1.RagService/Search"
    # A lone replica that was paused: keepalive cut the call after ~5 s; a retry would only wait out a second
    # keepalive on the same stopped process (the ~9 s the README did not say).
    lone = envoy_config.render(MeshSettings())
    assert "reset" not in _retry_on(lone, search).split(",")
    assert "connect-failure" in _retry_on(lone, search)
    for target in ("127.0.0.1:50051,127.0.0.1:50061", "dns:///rag.svc:50051", "rag.svc:50051"):
        replicated = envoy_config.render(MeshSettings(rag_target=target))
        assert "reset" in _retry_on(replicated, search).split(","), target
