"""The ops files of deploy/observability: alert rules pass promtool (syntax and their unit tests), the scrape
configs are valid and match the launcher's ports, and the Grafana dashboard shows the mesh's metrics."""

from __future__ import annotations

import json
import pathlib
import re
import shutil
import subprocess

import pytest
import yaml
from prometheus_client import REGISTRY

import services.runtime.domain_metrics
import services.runtime.metrics  # noqa: F401
from services.launcher.mesh import Mesh
from services.launcher.prometheus import scrape_config

ROOT = pathlib.Path(__file__).resolve().parents[2]
OPS = ROOT / "deploy" / "observability"
# Registered at scrape time by the services that own the state (orchestrator, rag).
STATE_GAUGES = {"docuthinker_graph_outbox", "docuthinker_dlq_letters", "docuthinker_circuit_breaker_state",
                "docuthinker_llm_budget"}


def promtool(*args: str) -> str:
    exe = shutil.which("promtool")
    if exe is None:
        pytest.fail("promtool is missing: run tools/system_packages.sh (Debian package `prometheus`)")
    done = subprocess.run([exe, *args], cwd=OPS, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_alert_rules_pass_promtool_check_and_their_unit_tests():
    assert "SUCCESS: 6 rules found" in promtool("check", "rules", "alerts.yml")
    promtool("test", "rules", "alerts_test.yml")
    names = {r["alert"] for g in yaml.safe_load((OPS / "alerts.yml").read_text())["groups"] for r in g["rules"]}
    assert names == {"DocuThinkerServiceDown", "DocuThinkerHighErrorRate", "DocuThinkerHighLatencyP95",
                     "DocuThinkerGraphOutboxLag", "DocuThinkerDeadLettersGrowing", "DocuThinkerBudgetNearLimit"}


@pytest.mark.parametrize("config", ["prometheus.yml", "prometheus-k8s.yml"])
def test_scrape_configs_are_valid(config):
    promtool("check", "config", config)


def test_local_scrape_config_matches_the_launchers_default_ports(tmp_path, monkeypatch):
    for key in [k for k in __import__("os").environ if k.startswith("DOCUTHINKER_")]:
        monkeypatch.delenv(key)
    rendered = scrape_config(Mesh(data_dir=tmp_path / "d", log_dir=tmp_path / "l"))
    committed = yaml.safe_load((OPS / "prometheus.yml").read_text())

    def targets(config):
        return {j["job_name"]: (j["metrics_path"], j["static_configs"][0]["targets"]) for j in config["scrape_configs"]}

    assert targets(committed) == targets(rendered)
    assert set(targets(committed)) == {"orchestrator", "rag", "nlp", "graph", "envoy"}


def test_k8s_scrape_config_targets_every_component_on_its_metrics_port():
    config = yaml.safe_load((OPS / "prometheus-k8s.yml").read_text())
    ports = {j["job_name"]: j["dns_sd_configs"][0]["port"] for j in config["scrape_configs"]}
    assert ports == {"orchestrator": 9460, "rag": 9461, "nlp": 9462, "graph": 9463, "envoy": 9902}
    services = {d["metadata"]["name"]: d["spec"]["ports"][0]["port"]
                for d in yaml.safe_load_all((ROOT / "deploy" / "k8s" / "metrics.yaml").read_text())}
    for job, port in ports.items():
        name = "gateway" if job == "envoy" else job
        assert services[f"docuthinker-{name}-metrics"] == port
        if job != "envoy":
            manifest = (ROOT / "deploy" / "k8s" / f"{job}.yaml").read_text()
            assert f"{{name: metrics, containerPort: {port}}}" in manifest


def test_grafana_dashboard_is_json_with_the_expected_panels_on_real_metrics():
    dashboard = json.loads((OPS / "grafana-dashboard.json").read_text())
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    titles = {p["title"] for p in panels}
    for expected in ("Requests per second by service", "Errors per second by gRPC code", "p95 RPC latency by service",
                     "Envoy: downstream requests by status class", "Documents ingested by status",
                     "Graph outbox depth and oldest age", "Abstention rate", "LLM tokens per second",
                     "LLM cost (USD per hour)", "Circuit breaker state (0 closed, 1 half-open, 2 open)",
                     "Dead letters by state", "LLM budget use", "p95 graph-sync lag"):
        assert expected in titles, expected
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
    known = {m.name for m in REGISTRY.collect()} | STATE_GAUGES
    for panel in panels:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            for name in re.findall(r"\b(docuthinker_[a-z_]+)", target["expr"]):
                base = re.sub(r"_(bucket|count|sum|total)$", "", name)
                assert name in known or base in known, (panel["title"], name)
