"""The chunk index over the real stores, on every backend: SQLite, the vector log, FAISS and bm25s in a temporary
directory; the same with the vectors on a real Chroma server (``embedded-chroma``); and a real PostgreSQL with
pgvector (a fresh database per test). The same tests run on each."""

from __future__ import annotations

import numpy as np
import pytest

from services.rag.documents import (
    DocumentStatus,
    GraphSyncState,
    Section,
    vector_key,
)
from services.rag.store import KeywordIndex
from services.rag.store.vectors import EmbedderMismatchError
from tests.support import records

from .fakes import HashEmbedder
from .probes import held_by_each_store

EMBED = HashEmbedder()

pytestmark = pytest.mark.store_backends("embedded", "embedded-chroma", "postgres", "postgres-bm25")  # every backend


def embedded_only(store_backend: str, why: str, faiss: bool = False) -> None:
    """Skips PostgreSQL, and with ``faiss`` the embedded stores with their vectors on Chroma too."""
    if store_backend != "embedded" and (faiss or store_backend != "embedded-chroma"):
        pytest.skip(why)


def _document(runtime, tenant: str, texts: list[str], name: str = "doc.txt"):
    """A record (PENDING, inserted) and one chunk per text, as ingestion would build them."""
    body = "\n\n".join(texts)
    record = records.document(body, tenant=tenant, filename=name)
    runtime.metadata.upsert_document(record)
    return record, [Section(text=body)], records.chunks_of(record, texts)


def _index(runtime, record, sections, chunks):
    runtime.index.stage_vectors(record.tenant, record.document_id, chunks, EMBED.encode([c.text for c in chunks]))
    runtime.index.publish(record, sections, chunks, GraphSyncState.DISABLED)


def test_staged_vectors_are_invisible_until_published(open_runtime) -> None:
    runtime = open_runtime()
    record, sections, chunks = _document(runtime, "acme", ["turbine blades inspection", "cafeteria lunch menu"])
    query = EMBED.encode(["turbine blades"])[0]
    runtime.index.stage_vectors("acme", record.document_id, chunks, EMBED.encode([c.text for c in chunks]))
    assert held_by_each_store(runtime, "acme", [c.chunk_id for c in chunks])["visible"] == 0
    assert len(runtime.vectors.stored_ids("acme", record.document_id)) == 2  # written...
    assert runtime.index.dense_search("acme", query, 5) == []  # ...but not visible
    assert runtime.index.keyword_search("acme", "turbine", 5) == []
    assert runtime.index.get_chunks("acme", [c.chunk_id for c in chunks]) == []
    runtime.index.publish(record, sections, chunks, GraphSyncState.DISABLED)
    assert runtime.index.dense_search("acme", query, 1)[0][0] == chunks[0].chunk_id
    assert runtime.index.keyword_search("acme", "turbine", 5)[0][0] == chunks[0].chunk_id
    got = runtime.index.get_chunks("acme", [chunks[1].chunk_id, chunks[0].chunk_id])
    assert [c.chunk_id for c in got] == [chunks[1].chunk_id, chunks[0].chunk_id]  # order asked
    assert got[1].provenance == chunks[0].provenance and got[1].text == chunks[0].text


def test_reads_are_strictly_tenant_scoped(open_runtime) -> None:
    runtime = open_runtime()
    a = _document(runtime, "acme", ["secret turbine design notes"])
    b = _document(runtime, "globex", ["secret turbine design notes", "globex holiday calendar"])
    _index(runtime, *a)
    _index(runtime, *b)
    query = EMBED.encode(["secret turbine design"])[0]
    acme_ids = {c.chunk_id for c in a[2]}
    assert {cid for cid, _ in runtime.index.dense_search("acme", query, 10)} == acme_ids
    assert {cid for cid, _ in runtime.index.keyword_search("acme", "secret turbine", 10)} == acme_ids
    assert runtime.index.get_chunks("globex", list(acme_ids)) == []
    assert runtime.index.dense_search("initech", query, 10) == []
    assert runtime.index.keyword_search("initech", "secret", 10) == []


def test_document_filter(open_runtime) -> None:
    runtime = open_runtime()
    one = _document(runtime, "acme", ["blades in Lyon warehouse"], "one.txt")
    two = _document(runtime, "acme", ["blades in Paris office"], "two.txt")
    _index(runtime, *one)
    _index(runtime, *two)
    query = EMBED.encode(["blades"])[0]
    only_two = [two[0].document_id]
    assert [c for c, _ in runtime.index.dense_search("acme", query, 5, only_two)] == [two[2][0].chunk_id]
    assert [c for c, _ in runtime.index.keyword_search("acme", "blades", 5, only_two)] == [two[2][0].chunk_id]
    assert runtime.index.dense_search("acme", query, 5, ["unknown"]) == []


def test_remove_document_clears_every_store(open_runtime) -> None:
    runtime = open_runtime()
    keep = _document(runtime, "acme", ["kept chunk about rivers"], "keep.txt")
    gone = _document(runtime, "acme", ["doomed chunk about stones", "second doomed chunk"], "gone.txt")
    _index(runtime, *keep)
    _index(runtime, *gone)
    ids = [c.chunk_id for c in gone[2]]
    assert set(held_by_each_store(runtime, "acme", ids).values()) == {2}
    assert runtime.index.remove_document("acme", gone[0].document_id) == 2
    assert set(held_by_each_store(runtime, "acme", ids).values()) == {0}
    assert runtime.metadata.get_document("acme", gone[0].document_id) is None
    assert runtime.index.keyword_search("acme", "rivers", 5)[0][0] == keep[2][0].chunk_id


def test_faiss_is_rebuilt_from_the_vector_log_and_orphans_are_dropped(open_runtime, store_backend) -> None:
    embedded_only(store_backend, "FAISS and the vector log: PostgreSQL searches its one vector table, Chroma its "
                  "collections (its orphans: test_vector_backends.py)", faiss=True)
    runtime = open_runtime()
    record, sections, chunks = _document(runtime, "acme", ["durable vector text", "another durable text"])
    _index(runtime, *(record, sections, chunks))
    orphan = _document(runtime, "acme", ["written before a crash, never published"], "orphan.txt")
    runtime.index.stage_vectors("acme", orphan[0].document_id, orphan[2], EMBED.encode([orphan[2][0].text]))
    runtime.metadata.close()

    reopened = open_runtime()  # a restart: new SQLite connection, Chroma client, empty FAISS
    assert reopened.vectors.faiss_count("acme") == 2
    assert reopened.vectors.stored_ids("acme", orphan[0].document_id) == []
    hits = reopened.index.dense_search("acme", EMBED.encode(["durable vector"])[0], 2)
    assert {c for c, _ in hits} == {c.chunk_id for c in chunks}


def test_keyword_index_is_persisted_and_reloaded_fresh(open_runtime, tmp_path, store_backend) -> None:
    embedded_only(store_backend, "BM25 files: PostgreSQL's full-text index is transactional")
    runtime = open_runtime()
    record, sections, chunks = _document(runtime, "acme", ["persisted keyword index text"])
    _index(runtime, record, sections, chunks)
    assert runtime.keyword.refresh("acme") is True
    assert runtime.keyword.refresh("acme") is False  # nothing changed since
    reloaded = KeywordIndex(tmp_path / "rag" / "bm25", runtime.metadata)
    reloaded.load()
    assert reloaded.is_fresh("acme")
    assert reloaded.search("acme", "keyword", 3)[0][0] == chunks[0].chunk_id


def test_republishing_fewer_chunks_drops_the_extra_vectors(open_runtime) -> None:
    runtime = open_runtime()
    record, sections, chunks = _document(runtime, "acme", ["first part", "second part", "third part"])
    _index(runtime, record, sections, chunks)
    assert runtime.metadata.claim_document("acme", record.document_id)  # a re-index (it holds the lease)...
    _index(runtime, record, sections, chunks[:1])  # ...that produced one chunk
    assert set(held_by_each_store(runtime, "acme", [c.chunk_id for c in chunks[1:]]).values()) == {0}
    assert set(held_by_each_store(runtime, "acme", [chunks[0].chunk_id]).values()) == {1}
    assert runtime.metadata.get_document("acme", record.document_id).chunk_count == 1


def test_the_tenant_chunk_count_follows_publication_re_index_and_removal(open_runtime) -> None:
    runtime = open_runtime()
    first = _document(runtime, "acme", ["one", "two", "three"], "a.txt")
    second = _document(runtime, "acme", ["four", "five"], "b.txt")
    other = _document(runtime, "globex", ["six"], "c.txt")
    assert runtime.metadata.count_chunks("acme") == 0  # inserted, not yet published
    for doc in (first, second, other):
        _index(runtime, *doc)
    assert (runtime.metadata.count_chunks("acme"), runtime.metadata.count_chunks("globex")) == (5, 1)
    record, sections, chunks = first
    assert runtime.metadata.claim_document("acme", record.document_id)
    _index(runtime, record, sections, chunks[:1])  # a re-index that produced one chunk
    assert runtime.metadata.count_chunks("acme") == 3
    runtime.index.remove_document("acme", second[0].document_id)
    assert (runtime.metadata.count_chunks("acme"), runtime.metadata.count_chunks("globex")) == (1, 1)
    assert runtime.metadata.count_chunks("initech") == 0
    assert open_runtime().metadata.count_chunks("acme") == 1  # a restart reads the same


def test_a_store_from_before_the_chunk_counts_is_recounted_at_open(open_runtime, store_backend) -> None:
    embedded_only(store_backend, "the embedded store's own counter table")
    runtime = open_runtime()
    _index(runtime, *_document(runtime, "acme", ["one", "two"]))
    with runtime.metadata._tx() as db:  # as an older version left it: no counts, no triggers
        for name in ("tenant_chunks_on_insert", "tenant_chunks_on_update", "tenant_chunks_on_delete"):
            db.execute(f"DROP TRIGGER {name}")
        db.execute("DROP TABLE tenant_chunks")
    runtime.metadata.close()
    reopened = open_runtime()
    assert reopened.metadata.count_chunks("acme") == 2
    _index(reopened, *_document(reopened, "acme", ["three"], "b.txt"))
    assert reopened.metadata.count_chunks("acme") == 3


def test_chunk_reads_use_the_narrow_key_not_a_tenant_scan(open_runtime, store_backend) -> None:
    """Every read of a search names its chunks, keys or documents; SQLite must look those up
    directly. With many ids in the IN list its planner preferred the (tenant, vector_key) or
    status index, which walks every chunk of the tenant (50 to 170 ms per search at 100k chunks)."""
    embedded_only(store_backend, "SQLite's query planner")
    runtime = open_runtime()
    record, sections, chunks = _document(runtime, "acme", [f"chunk number {i}" for i in range(40)])
    _index(runtime, record, sections, chunks)
    statements: list[str] = []
    conn = runtime.metadata._conn
    conn.set_trace_callback(statements.append)
    ids = [c.chunk_id for c in chunks]
    assert len(runtime.index.get_chunks("acme", ids)) == 40
    assert len(runtime.metadata.visible_ids_for_keys("acme", [vector_key(c) for c in ids])) == 40
    assert len(runtime.metadata.visible_chunk_ids("acme", [record.document_id])) == 40
    conn.set_trace_callback(None)
    reads = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(reads) == 3
    for sql in reads:
        plan = " | ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
        assert "documents_by_status" not in plan and "chunks_by_key (tenant=?)" not in plan, (sql[:80], plan)
        assert "SCAN" not in plan, (sql[:80], plan)


def test_no_store_reads_or_changes_another_tenants_data(open_runtime) -> None:
    """Every store is reached with the wrong tenant for data that exists under another one."""
    runtime = open_runtime()
    record, sections, chunks = _document(runtime, "acme", ["confidential turbine tolerances"])
    _index(runtime, record, sections, chunks)
    runtime.blobs.put("acme", record.content_sha256, b"original bytes")
    doc, ids = record.document_id, [c.chunk_id for c in chunks]
    query = EMBED.encode(["confidential turbine"])[0]

    assert runtime.metadata.get_document("globex", doc) is None
    assert runtime.metadata.list_documents("globex", 10) == [] and runtime.metadata.count_documents("globex") == 0
    assert runtime.metadata.document_chunks("globex", doc) == []
    assert runtime.metadata.visible_chunk_ids("globex", [doc]) == []
    assert runtime.index.get_chunks("globex", ids) == []
    assert runtime.index.dense_search("globex", query, 5, [doc]) == []
    assert runtime.index.keyword_search("globex", "confidential", 5, [doc]) == []
    assert runtime.blobs.get("globex", record.content_sha256) is None
    assert not runtime.blobs.exists("globex", record.content_sha256)

    runtime.blobs.delete("globex", record.content_sha256)
    assert runtime.metadata.clear_chunks("globex", doc) == []
    assert runtime.index.remove_document("globex", doc) == 0
    assert runtime.metadata.delete_document("globex", doc) == []
    assert runtime.blobs.get("acme", record.content_sha256) == b"original bytes"  # all still there for acme
    assert runtime.metadata.get_document("acme", doc).status is DocumentStatus.READY
    assert set(held_by_each_store(runtime, "acme", ids).values()) == {1}
    assert runtime.index.dense_search("acme", query, 5)[0][0] == ids[0]
class _Int8HashEmbedder(HashEmbedder):
    """The same vectors under another identity: what switching DOCUTHINKER_EMBED_RUNTIME looks like."""

    identity = "test-hash-embedder/int8"


class _DyingInt8HashEmbedder(_Int8HashEmbedder):
    """Dies on its second call: a re-index cut short (the process killed mid-way)."""

    def encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        if self.calls:
            raise SystemExit("killed mid re-index")
        return super().encode(texts, batch_size)


def test_a_re_index_cut_short_is_never_taken_for_a_finished_one(open_runtime) -> None:
    runtime = open_runtime()
    for name in ("a.txt", "b.txt"):
        _index(runtime, *_document(runtime, "acme", [f"text of {name}"], name))
    runtime.metadata.close()

    with pytest.raises(SystemExit):
        open_runtime(_DyingInt8HashEmbedder(), reindex_on_model_change=True)
    # Half the chunks hold new vectors, but the store is not stamped as the new embedder's.
    with pytest.raises(EmbedderMismatchError, match="re-index in progress"):
        open_runtime(_Int8HashEmbedder())
    switched = _Int8HashEmbedder()
    reindexed = open_runtime(switched, reindex_on_model_change=True)  # redone from the start
    assert sum(switched.calls) == 2
    assert len(reindexed.index.dense_search("acme", switched.encode(["text"])[0], 5)) == 2
    reindexed.metadata.close()
    open_runtime(_Int8HashEmbedder()).metadata.close()  # finished now: opens without the flag


def test_switching_embedder_re_embeds_nothing_silently(open_runtime) -> None:
    runtime = open_runtime()
    record, sections, chunks = _document(runtime, "acme", ["durable vector text", "another durable text"])
    _index(runtime, record, sections, chunks)
    runtime.metadata.close()

    switched = _Int8HashEmbedder()
    with pytest.raises(EmbedderMismatchError, match="REINDEX_ON_MODEL_CHANGE"):
        open_runtime(switched)
    assert switched.calls == []  # refused before anything was embedded or mixed

    reindexed = open_runtime(switched, reindex_on_model_change=True)  # the explicit re-index path
    assert sum(switched.calls) == 2
    assert reindexed.vectors.identity == "test-hash-embedder/int8"
    hits = reindexed.index.dense_search("acme", switched.encode(["durable vector"])[0], 2)
    assert {c for c, _ in hits} == {c.chunk_id for c in chunks}
    reindexed.metadata.close()
    with pytest.raises(EmbedderMismatchError):
        open_runtime(HashEmbedder())  # and now the old embedder is the stranger


# Not on `fts` (plain "postgres"): that keyword mode indexes the chunk text alone (a generated tsvector column).
@pytest.mark.store_backends("embedded", "postgres-bm25")
def test_keyword_search_finds_a_chunk_by_its_documents_name_and_headings(open_runtime) -> None:
    runtime = open_runtime()
    record, sections, chunks = _document(runtime, "acme", ["Best regards,\nMallori"], name="delivery-memo.pdf")
    _index(runtime, record, sections, chunks)
    other, sections, other_chunks = _document(runtime, "acme", ["Kind regards from the depot."], name="notes.txt")
    _index(runtime, other, sections, other_chunks)
    runtime.keyword.refresh("acme")
    # Users name the document ("who signed the memo"); the chunk text never says "memo".
    assert [c for c, _ in runtime.index.keyword_search("acme", "who signed the memo", 5)] == [chunks[0].chunk_id]
    # Camel-case and underscored file names count as their words.
    assert runtime.metadata.visible_texts("acme")[1][0][1].endswith("delivery memo")
