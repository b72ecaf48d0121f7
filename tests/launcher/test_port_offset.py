"""``--port-offset N``: every port of a second mesh on this machine from one number."""

from __future__ import annotations

import pytest

from services.launcher.mesh import Mesh
from services.launcher.settings import offset_ports


def test_every_port_moves_by_the_offset_and_a_port_that_is_off_stays_off():
    moved = offset_ports({"DOCUTHINKER_RAG_PORT": "6000"}, 100)
    assert moved["DOCUTHINKER_GATEWAY_PORT"] == "8180" and moved["DOCUTHINKER_GATEWAY_STATS_PORT"] == "10002"
    assert "DOCUTHINKER_GATEWAY_ADMIN_PORT" not in moved  # the admin interface is a socket in the mesh's data dir
    assert moved["DOCUTHINKER_RAG_PORT"] == "6100"  # from its configured value
    assert moved["DOCUTHINKER_ORCHESTRATOR_METRICS_PORT"] == "9560"
    assert moved["DOCUTHINKER_OPENAI_API_PORT"] == "50154"
    assert "DOCUTHINKER_GATEWAY_STATS_PORT" not in offset_ports({"DOCUTHINKER_GATEWAY_STATS_PORT": "0"}, 100)  # off
    assert offset_ports({}, 0) == {}
    with pytest.raises(ValueError):
        offset_ports({}, 70_000)


def test_a_mesh_planned_with_the_offset_uses_the_moved_ports(tmp_path, monkeypatch):
    for name, value in offset_ports({}, 1000).items():
        monkeypatch.setenv(name, value)
    mesh = Mesh(data_dir=tmp_path / "data", log_dir=tmp_path / "logs")
    assert mesh.settings.gateway_port == 9080 and mesh.base_url.endswith(":9080")
    assert mesh.children["rag"].port == 51051 and mesh.children["graph"].metrics_port == 10463
    assert mesh.env["DOCUTHINKER_ORCHESTRATOR_TARGET"].endswith(":51050")
