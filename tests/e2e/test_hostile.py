"""Issue #38's hostile client, replayed through the real mesh and Envoy (loopback only, bounded): PDF bombs
beside a neighbour tenant, list-building Cypher against the graph process, and the smaller items (a form
post as a document, a DOCX entity, data-file modes, a client that cuts its stream). The drills live in
``hostile.py``; ``python -m bench.hostile_ingest`` runs them on a fresh mesh and writes the counts."""

from __future__ import annotations

import pytest

from tests.e2e import hostile

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def client(mesh):
    with mesh.http(timeout=180) as http:
        yield http


def test_four_pdf_bombs_are_refused_and_the_neighbour_is_unaffected(mesh, client) -> None:
    counts = hostile.pdf_bombs(mesh, client)
    print(hostile.dump(counts))
    assert counts["refused_400"] == 4 and counts["other_statuses"] == [], counts
    assert counts["reasons"] == ["PDF_PAGE_TOO_MUCH_TEXT"]
    assert counts["bomb_documents_stored"] == 0
    assert counts["rag_under_1_5_gb_after_s"] is not None and counts["rag_under_1_5_gb_after_s"] <= 30
    assert counts["rag_rss_mb"]["peak"] < 1536, counts
    assert counts["neighbour"]["uploads_failed"] == 0 and counts["neighbour"]["questions_failed"] == 0


def test_every_list_building_query_is_refused_and_the_graph_stays_small(mesh, client) -> None:
    counts = hostile.list_builders(mesh, client)
    print(hostile.dump(counts))
    assert counts["unexpected"] == [], counts["unexpected"]
    assert counts["refused_400"] == counts["list_building_queries"]
    assert counts["allowed_200"] == counts["ordinary_queries"]
    assert counts["graph_rss_mb"]["peak"] < 1024, counts


def test_the_smaller_items(mesh, client) -> None:
    counts = hostile.small_items(mesh, client)
    print(hostile.dump(counts))
    assert counts["multipart"] == {"status": 400, "reason": "MULTIPART_NOT_SUPPORTED"}
    assert counts["docx_entity"] == {"status": 200, "text_after_entity_kept": True}
    assert counts["data_modes"]["entries_readable_by_others"] == 0, counts["data_modes"]
    assert counts["cancelled_stream_logged"]
