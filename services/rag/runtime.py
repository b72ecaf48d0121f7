"""Assembles the RAG service's stores and pipeline under one data directory.

Layout of ``<DOCUTHINKER_DATA_DIR>/rag``: ``metadata.sqlite3`` (SQLite WAL), ``originals/``
(uploaded bytes by content hash), ``chroma/`` (vectors: the SQLite vector log; the folder keeps the name it had when Chroma held them), ``bm25/`` (keyword indexes).
With ``DOCUTHINKER_RAG_VECTOR_BACKEND=chroma`` the vectors are on a Chroma server instead (``store.chroma_vectors``).
With ``DOCUTHINKER_STORE_BACKEND=postgres`` all of it lives in the shared PostgreSQL database
instead (``services.rag.store.pg_*``), and the data directory holds only per-replica caches.
"""

from __future__ import annotations

import asyncio
import logging
import pathlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from services.rag.catalog import DocumentCatalog
from services.rag.graph_sync.port import DisabledGraphSync, GraphSync
from services.rag.ingest.chunking import ChunkerConfig
from services.rag.ingest.embedding import TextEmbedder
from services.rag.ingest.ocr import OcrConfig, reader_from
from services.rag.ingest.parser_pool import ParserPool, ParserPoolConfig
from services.rag.ingest.parsers import AudioReader, ParseLimits
from services.rag.ingest.pipeline import IngestionPipeline, PipelineConfig
from services.rag.keyword_refresh import KeywordRefresher
from services.rag.locks import KeyedLocks
from services.rag.reindex import embedder_identity, open_vectors, reembed_all, reindex_shared
from services.rag.settings import RagSettings
from services.rag.store import BlobStore, ChunkIndex, KeywordIndex, MetadataStore
from services.rag.store.ports import BlobPort, ChunkIndexPort, KeywordPort, MetadataPort, VectorsPort
from services.storage.settings import StorageSettings

if TYPE_CHECKING:  # the PostgreSQL backend is imported only where it is chosen
    from services.rag.store.pg_blobs import PostgresBlobStore
    from services.rag.store.pg_index import Bm25Keywords, FullTextKeywords, PostgresChunkIndex, PostgresVectors
    from services.rag.store.pg_metadata import PostgresMetadataStore

log = logging.getLogger("docuthinker.rag")


def metadata_path(data_dir: pathlib.Path) -> pathlib.Path:
    return pathlib.Path(data_dir) / "rag" / "metadata.sqlite3"


def pipeline_config(settings: RagSettings, max_upload_bytes: int,
                    audio: AudioReader | None = None) -> PipelineConfig:
    return PipelineConfig(
        max_upload_bytes=max_upload_bytes,
        chunker=ChunkerConfig(size=settings.chunk_size, overlap=settings.chunk_overlap),
        limits=ParseLimits(
            max_pages=settings.max_pages,
            max_sheet_cells=settings.max_sheet_cells,
            max_sheet_rows_scanned=settings.max_sheet_rows_scanned,
            max_unzipped_bytes=settings.max_unzipped_bytes,
            max_compression_ratio=settings.max_compression_ratio,
            max_text_chars=settings.max_text_chars,
            max_image_pixels=settings.max_image_pixels,
            table_block_chars=settings.chunk_size,
            max_record_chars=settings.max_record_chars,
            max_chunks=settings.max_chunks_per_document,
            max_page_content_bytes=settings.pdf_max_page_content_bytes,
            max_page_operators=settings.pdf_max_page_operators,
            max_page_chars=settings.pdf_max_page_chars,
            max_content_bytes=settings.pdf_max_content_bytes,
            max_operators=settings.pdf_max_operators,
        ),
        parsers=parser_pool(settings),
        ocr=reader_from(OcrConfig(
            enabled=settings.ocr_enabled,
            languages=settings.ocr_languages,
            dpi=settings.ocr_dpi,
            max_pages=settings.ocr_max_pages,
            page_timeout_s=settings.ocr_page_timeout_s,
            tesseract_cmd=settings.ocr_tesseract_cmd,
            detect_orientation=settings.ocr_detect_orientation,
            workers=settings.ocr_workers,
        )),
        embed_progress_every=settings.embed_progress_every,
        max_tenant_chunks=settings.max_tenant_chunks,
        audio=audio,
        lease_s=settings.ingest_lease_s,
    )


def parser_pool(settings: RagSettings) -> ParserPool | None:
    if not settings.parser_isolation:
        return None
    return ParserPool(ParserPoolConfig(
        workers=settings.parser_workers, memory_mb=settings.parser_memory_mb, page_cpu_s=settings.parser_page_cpu_s,
        document_cpu_s=settings.parser_document_cpu_s, recycle_rss_mb=settings.parser_recycle_rss_mb,
        recycle_jobs=settings.parser_recycle_jobs,
    ))


@dataclass
class RagRuntime:
    metadata: MetadataPort
    blobs: BlobPort
    vectors: VectorsPort
    keyword: KeywordPort
    index: ChunkIndexPort
    refresher: KeywordRefresher
    pipeline: IngestionPipeline
    catalog: DocumentCatalog

    @classmethod
    def open(
        cls,
        data_dir: pathlib.Path,
        settings: RagSettings,
        max_upload_bytes: int,
        embedder: TextEmbedder,
        graph_sync: GraphSync | None = None,
        audio: AudioReader | None = None,
        *,
        storage: StorageSettings,
    ) -> RagRuntime:
        """Opens (or creates) every store and rebuilds FAISS from the vector log; blocking (run it in a thread)."""
        root = pathlib.Path(data_dir) / "rag"
        # Each branch holds its backend's classes (their own wiring calls are not the ports'); assigning them
        # to the port-typed names below is where mypy checks that both backends fit ``store.ports``.
        metadata: MetadataPort
        blobs: BlobPort
        vectors: VectorsPort
        keyword: KeywordPort
        index: ChunkIndexPort
        if storage.postgres and settings.vector_backend != "local":
            # pgvector holds the vectors beside the chunk rows, in the same transactions: a second vector store
            # would be one more copy to keep in step, for nothing.
            raise ValueError("DOCUTHINKER_RAG_VECTOR_BACKEND=chroma needs DOCUTHINKER_STORE_BACKEND=embedded: "
                             "with postgres the vectors live in PostgreSQL (pgvector)")
        if storage.postgres:
            pg_metadata, blobs, pg_vectors, keyword, index = open_postgres_stores(
                root, storage, embedder.name, embedder.dimension, settings.ingest_lease_s,
                identity=embedder_identity(embedder))
            reindex_shared(pg_vectors, pg_metadata, settings, embedder)
            metadata, vectors = pg_metadata, pg_vectors
            loaded, orphans = 0, 0  # nothing to rebuild: searches read the database
        else:
            sqlite = MetadataStore(metadata_path(data_dir), lease_s=settings.ingest_lease_s)
            sqlite.release_all_leases()  # this process owns the file: a lease in it is a dead process's
            blobs = BlobStore(root / "originals")
            local_vectors, stale = open_vectors(root, settings, embedder)
            loaded, orphans = local_vectors.rebuild(sqlite.known_chunk_ids())
            if stale:
                reembed_all(sqlite, local_vectors, embedder)
            bm25 = KeywordIndex(root / "bm25", sqlite)
            bm25.load()
            metadata, vectors, keyword, index = sqlite, local_vectors, bm25, ChunkIndex(sqlite, local_vectors, bm25)
        locks = KeyedLocks()
        graph_sync = graph_sync or DisabledGraphSync()
        pipeline = IngestionPipeline(
            index, blobs, embedder, graph_sync,
            pipeline_config(settings, max_upload_bytes, audio), on_change=lambda tenant: refresher.notify(tenant),
            locks=locks,
        )
        # BM25 rebuilds wait for ingestion to go idle: they would compete with the embedder for the cores.
        refresher = KeywordRefresher(keyword, settings.keyword_refresh_delay_s, busy=lambda: pipeline.busy)
        catalog = DocumentCatalog(index, blobs, locks, on_change=refresher.notify, graph=graph_sync)
        log.info("stores open", extra={"fields": {"data_dir": str(root), "vectors": loaded, "orphans": orphans,
                                                  "collection": vectors.collection,
                                                  "backend": storage.store_backend}})
        return cls(metadata, blobs, vectors, keyword, index, refresher, pipeline, catalog)

    async def close(self) -> None:
        await self.pipeline.close()
        if self.pipeline.parsers is not None:
            await asyncio.to_thread(self.pipeline.parsers.close)
        await self.refresher.close()
        await asyncio.to_thread(self.vectors.flush)
        await asyncio.to_thread(self.metadata.close)


def open_postgres_stores(
    root: pathlib.Path, storage: StorageSettings, model_name: str, dimension: int, lease_s: float = 30.0,
    identity: str | None = None,
) -> tuple[PostgresMetadataStore, BlobStore | PostgresBlobStore, PostgresVectors, Bm25Keywords | FullTextKeywords,
           PostgresChunkIndex]:
    """The same ports on the shared database (migrated on open); BM25 caches, if chosen, stay per replica.
    ``identity``: the embedder's (the vectors' check is ``reindex.reindex_shared``)."""
    from services.rag.store.pg_blobs import PostgresBlobStore
    from services.rag.store.pg_index import Bm25Keywords, FullTextKeywords, PostgresChunkIndex, PostgresVectors
    from services.rag.store.pg_metadata import PostgresMetadataStore
    from services.storage.postgres import shared

    db = shared(storage.dsn(), storage.postgres_pool_size)
    metadata = PostgresMetadataStore(db, lease_s=lease_s)
    blobs: BlobStore | PostgresBlobStore = (
        BlobStore(root / "originals") if storage.postgres_blobs == "filesystem" else PostgresBlobStore(db))
    vectors = PostgresVectors(db, model_name, dimension, storage.postgres_hnsw_ef_search, identity)
    keyword: Bm25Keywords | FullTextKeywords
    if storage.postgres_keyword == "bm25":
        cache_dir, lock = _cache_slot(root / "bm25-cache")
        cache = KeywordIndex(cache_dir, metadata)
        cache.load()
        keyword = Bm25Keywords(cache, metadata, lock)
    else:
        keyword = FullTextKeywords(db)
    return metadata, blobs, vectors, keyword, PostgresChunkIndex(metadata, vectors, keyword)


def _cache_slot(parent: pathlib.Path):
    """A cache directory no other live process uses: replicas may share a data directory, and a
    restarted one takes a free slot again (usually its own, so its BM25 indexes are still warm)."""
    import fasteners

    parent.mkdir(parents=True, exist_ok=True)
    for slot in range(256):
        lock = fasteners.InterProcessLock(str(parent / f"slot-{slot}.lock"))
        if lock.acquire(blocking=False):
            return parent / f"slot-{slot}", lock
    raise RuntimeError(f"no free BM25 cache slot under {parent}")
