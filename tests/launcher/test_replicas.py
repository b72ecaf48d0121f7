"""The launcher's replica plan: ports per replica, every peer's target, refusal on per-process stores."""

from __future__ import annotations

import os

import pytest

from services.launcher.mesh import REPLICA_PORT_STRIDE, Mesh
from services.launcher.probes import free_port
from services.launcher.settings import LauncherSettings, parse_replicas

POSTGRES = {"DOCUTHINKER_STORE_BACKEND": "postgres"}


def test_replicas_get_own_ports_and_every_peer_dials_all_of_them(tmp_path):
    before = dict(os.environ)
    mesh = Mesh(data_dir=tmp_path / "d", log_dir=tmp_path / "l", replicas={"rag": 2, "nlp": 3}, extra_env=POSTGRES)
    assert os.environ == before  # the children's settings are built from their environment, not the launcher's
    assert mesh.replicas_of("rag") == ["rag", "rag-2"] and mesh.replicas_of("graph") == ["graph"]
    rag, rag2 = mesh.children["rag"], mesh.children["rag-2"]
    assert rag2.port == rag.port + REPLICA_PORT_STRIDE and rag2.metrics_port == rag.metrics_port + REPLICA_PORT_STRIDE
    assert rag2.env == {"DOCUTHINKER_RAG_PORT": str(rag2.port), "DOCUTHINKER_RAG_METRICS_PORT": str(rag2.metrics_port)}
    assert mesh.env["DOCUTHINKER_RAG_TARGET"] == f"127.0.0.1:{rag.port},127.0.0.1:{rag2.port}"
    assert mesh.settings.peer_of("nlp").target.startswith("ipv4:") and len(mesh.settings.peer_of("nlp").endpoints) == 3
    assert len({c.port for c in mesh.children.values()}) == len(mesh.children)
    assert {"rag-2", "nlp-3"} <= set(mesh.metrics_urls())


def test_auto_ports_give_every_replica_a_free_port(tmp_path):
    mesh = Mesh(data_dir=tmp_path / "d", log_dir=tmp_path / "l", auto_ports=True, replicas={"orchestrator": 2},
                extra_env=POSTGRES)
    ports = [p for c in mesh.children.values() for p in (c.port, c.metrics_port) if p is not None]
    assert len(set(ports)) == len(ports)


def test_a_free_port_is_never_handed_out_twice():
    # The kernel's pick for bind(0) is random within the ephemeral range: 500 picks without the record held 4 to 14
    # repeats here (so a mesh's 25 picks repeat one about one time in 60, and its second child dies on EADDRINUSE).
    ports = [free_port() for _ in range(500)]
    assert len(set(ports)) == len(ports)


def test_a_wildcard_bind_is_dialled_on_loopback(tmp_path):
    mesh = Mesh(data_dir=tmp_path / "d", log_dir=tmp_path / "l", extra_env={"DOCUTHINKER_HOST": "0.0.0.0"})
    assert mesh.settings.host == "0.0.0.0"
    assert mesh.grpc_target("rag") == f"127.0.0.1:{mesh.children['rag'].port}"
    assert mesh.base_url.startswith("http://127.0.0.1:")


@pytest.mark.parametrize(("replicas", "env", "why"), [
    ({"rag": 2}, {}, "DOCUTHINKER_STORE_BACKEND=postgres"),
    ({"orchestrator": 2}, {}, "DOCUTHINKER_STORE_BACKEND=postgres"),
    ({"graph": 2}, POSTGRES, "DOCUTHINKER_GRAPH_BACKEND=neo4j"),
    ({"search": 2}, POSTGRES, "no such service"),
    ({"nlp": 0}, {}, "at least 1"),
])
def test_replicas_of_per_process_state_are_refused(tmp_path, replicas, env, why):
    with pytest.raises(ValueError, match=why):
        Mesh(data_dir=tmp_path / "d", log_dir=tmp_path / "l", replicas=replicas, extra_env=env)


def test_nlp_is_stateless_and_may_have_replicas_on_embedded_stores(tmp_path):
    assert Mesh(data_dir=tmp_path / "d", log_dir=tmp_path / "l", replicas={"nlp": 2}).replicas_of("nlp") == ["nlp", "nlp-2"]


def test_replicas_setting_and_flag_syntax(monkeypatch):
    assert parse_replicas("rag=2, nlp=2,orchestrator=2") == {"rag": 2, "nlp": 2, "orchestrator": 2}
    with pytest.raises(ValueError, match="SERVICE=COUNT"):
        parse_replicas("rag:2")
    monkeypatch.setenv("DOCUTHINKER_LAUNCHER_REPLICAS", "rag=3")
    assert LauncherSettings().replicas == {"rag": 3}
