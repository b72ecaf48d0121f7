"""The reduced cluster drill (issue #40): the image's containers on three stand-in hosts, one rag container killed
mid-ingestion, one host's link cut.

It runs only where the image already exists (`make image`; building it takes minutes, far more than `make test`
may spend), as root with podman: elsewhere it skips and says why. The full drills, with their counts in
bench/results/cluster-<date>.json, are `make cluster-up cluster-chaos cluster-down`.
"""

from __future__ import annotations

import os
import shutil

import pytest

from tools.cluster import IMAGE, drills, mesh, net, state, traffic
from tools.cluster.__main__ import down, up

pytestmark = [pytest.mark.e2e, pytest.mark.cluster]


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces and rootful podman)"
    missing = [tool for tool in ("podman", "nsenter", "ip", "nft") if not shutil.which(tool)]
    if missing:
        return f"{', '.join(missing)} missing (apt-get install podman runc nftables; see docs/containers.md)"
    if not mesh.image_exists():
        return f"image {IMAGE} not built: `make image` builds it (minutes; too slow to build inside make test)"
    if any(ns.startswith("dt40-") for ns in net.namespaces()):
        return "a stand-in cluster is already up (make cluster-down removes it)"
    return None


@pytest.fixture(scope="module")
def cluster():
    reason = _why_not()
    if reason:
        pytest.skip(reason)
    try:
        yield up(profile="drill")
    finally:
        down()


def test_a_rag_container_killed_mid_ingestion_loses_and_duplicates_nothing(cluster):
    lease_s = float(mesh.environment()["DOCUTHINKER_RAG_INGEST_LEASE_S"])
    kill = drills.kill_rag_mid_ingestion(lease_s)
    # The large document was caught mid-ingestion, and the surviving replica finished it from the stored bytes.
    assert kill["large_document_status_at_kill"] not in (state.READY, state.FAILED), kill
    assert kill["large_document_settled_s_after_kill"] is not None, kill
    assert (kill["ready"], kill["lost"], kill["failed"]) == (kill["expected"], 0, 0), kill
    assert kill["duplicated_documents"] == 0 and kill["chunk_rows_not_matching_count"] == 0, kill


def test_a_cut_host_is_routed_around_and_rejoins_on_its_own(cluster):
    cut = drills.cut_link(net.HOSTS[2], cut_s=15, before_s=5, after_s=20)
    assert cut["searches"]["during_cut"] > 0, cut
    assert cut["envoy_marked_rag_unhealthy_s_after_cut"] is not None, cut
    assert cut["rag_rejoined_envoy_s_after_restore"] is not None, cut
    gateway = traffic.client("cutcheck")
    assert state.wait_for(lambda: traffic.search(gateway, "depth of reach 3")[0] == 200, 30) is not None
