"""Settings of the RAG service, read from ``DOCUTHINKER_RAG_*`` environment variables.

The upload byte limit is mesh-wide (``DOCUTHINKER_MAX_UPLOAD_BYTES`` in ``MeshSettings``)
because Envoy enforces the same number on REST bodies; the data directory is the mesh's too.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class RagSettings(BaseSettings):
    """Chunking, embedding and parser safety limits of the ingestion pipeline."""

    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_RAG_", frozen=True, extra="ignore")

    chunk_size: int = Field(default=900, ge=100, le=8000)
    """Largest chunk, in characters; chunks end on paragraph or sentence boundaries."""
    chunk_overlap: int = Field(default=120, ge=0)
    """Characters repeated from the end of one chunk at the start of the next; must be < chunk_size."""
    embed_progress_every: int = Field(default=128, ge=1)
    """Chunks embedded between two "embedded k of n" progress events (one encode call each)."""
    max_pages: int = Field(default=2000, ge=1)
    """PDFs with more pages are refused (INVALID_ARGUMENT, reason TOO_MANY_PAGES)."""
    max_sheet_cells: int = Field(default=2_000_000, ge=1)
    """Non-empty cells read from one workbook before it is refused."""
    max_sheet_rows_scanned: int = Field(default=4_000_000, ge=1)
    """Row records walked in one workbook (empty ones included) before it is refused."""
    max_unzipped_bytes: int = Field(default=256 * 1024 * 1024, ge=1)
    """Declared uncompressed size of all members of a DOCX/XLSX archive."""
    max_compression_ratio: float = Field(default=200.0, gt=1)
    """Largest uncompressed/compressed ratio of one archive member bigger than 1 MiB."""
    max_text_chars: int = Field(default=20_000_000, ge=1)
    """Extracted characters per document before it is refused."""
    max_record_chars: int = Field(default=131_072, ge=1024)
    """Characters of one CSV/TSV record (a "line"); a longer one refuses the file (INVALID_ARGUMENT, RECORD_TOO_LONG)."""
    max_chunks_per_document: int = Field(default=25_000, ge=1)
    """Chunks one document may become; more refuses it (INVALID_ARGUMENT, TOO_MANY_CHUNKS)."""
    max_tenant_chunks: int = Field(default=2_000_000, ge=0)
    """Chunks one tenant may hold over all its documents; an upload past it is refused (RESOURCE_EXHAUSTED,
    TENANT_CHUNK_QUOTA: delete documents first). 0: no quota."""
    pdf_max_page_content_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    """Decompressed content-stream bytes of one PDF page (forms counted as often as drawn); more refuses
    the document before PDFium reads the page (INVALID_ARGUMENT, PDF_PAGE_CONTENT_TOO_LARGE)."""
    pdf_max_page_operators: int = Field(default=1_000_000, ge=1000)
    """Drawing and text operators of one PDF page (PDF_PAGE_TOO_MANY_OPERATORS)."""
    pdf_max_page_chars: int = Field(default=400_000, ge=1000)
    """Characters shown by one PDF page's text operators (PDF_PAGE_TOO_MUCH_TEXT)."""
    pdf_max_content_bytes: int = Field(default=512 * 1024 * 1024, ge=1024)
    """Decompressed content-stream bytes of a whole PDF (PDF_CONTENT_TOO_LARGE)."""
    pdf_max_operators: int = Field(default=20_000_000, ge=1000)
    """Drawing and text operators of a whole PDF (PDF_TOO_MANY_OPERATORS)."""
    parser_isolation: bool = True
    """Parse documents (all but recordings) in worker processes under memory and CPU limits
    (``ingest.parser_pool``); off: in the service's own process, without those limits."""
    parser_workers: int = Field(default=2, ge=1, le=64)
    """Parser worker processes: documents parsed at once."""
    parser_memory_mb: int = Field(default=1024, ge=0)
    """Memory one parser worker may take for a document beyond what it holds idle (its address-space
    limit); a document needing more is refused (PARSER_MEMORY_LIMIT, or PARSER_CRASHED when the parser
    library dies of it). 0: no limit."""
    parser_page_cpu_s: float = Field(default=20.0, gt=0)
    """CPU seconds one PDF page may take to read (PDF_PAGE_CPU_LIMIT)."""
    parser_document_cpu_s: float = Field(default=300.0, gt=0)
    """CPU seconds one document may take to parse, OCR's Tesseract processes aside (PARSE_CPU_LIMIT)."""
    parser_recycle_rss_mb: int = Field(default=400, ge=64)
    """A parser worker holding more memory than this after a document exits (its memory returns)."""
    parser_recycle_jobs: int = Field(default=500, ge=1)
    """Documents after which a parser worker exits and a fresh one takes its place."""
    max_image_pixels: int = Field(default=60_000_000, ge=1_000_000)
    """Pixels of one page image (an uploaded image's frame, a scanned PDF page rendered for OCR)."""
    ocr_enabled: bool = True
    """Read scanned PDF pages (no text layer, only images) and image uploads with Tesseract. Off,
    or without Tesseract installed, such documents are refused (FAILED_PRECONDITION, OCR_UNAVAILABLE)."""
    ocr_languages: str = Field(default="eng", pattern=r"^[A-Za-z_]+(\+[A-Za-z_]+)*$")
    """Tesseract languages joined by '+', e.g. "eng+deu" (each needs its tesseract-ocr-LANG package)."""
    ocr_dpi: int = Field(default=200, ge=72, le=600)
    """Resolution at which scanned PDF pages are rendered for OCR."""
    ocr_max_pages: int = Field(default=50, ge=1)
    """Pages one document may need OCR for; more is refused (INVALID_ARGUMENT, reason TOO_MANY_OCR_PAGES): about 1-3 s per page."""
    ocr_page_timeout_s: float = Field(default=60.0, gt=0)
    """OCR of one page taking longer fails the document (DEADLINE_EXCEEDED)."""
    ocr_tesseract_cmd: str = "tesseract"
    """The Tesseract binary: a name on PATH or a path."""
    ocr_detect_orientation: bool = True
    """Detect pages scanned sideways or upside down and read them turned upright (about 30% more OCR time)."""
    ocr_workers: int = Field(default=2, ge=1, le=64)
    """Pages of one document read by OCR at the same time, one Tesseract process (one core) each."""
    faiss_threads: int = Field(default=1, ge=1, le=256)
    """OpenMP threads FAISS may use for one search; raise it for a lone client on a many-core machine. Default 1:
    leaves the other cores to concurrent requests, and ran 2.4x faster with another request running
    (bench/results/settings-measurements.md)."""
    hnsw_threshold: int = Field(default=50_000, ge=1)
    """Vectors in one tenant's index past which it becomes approximate (HNSW, fp16 storage); smaller stay exact."""
    hnsw_m: int = Field(default=32, ge=4, le=128)
    """HNSW graph neighbours per vector. Default: 48 and 64 gained no recall over 32 for 45-95% more graph memory
    (bench/results/ann-scale-2026-12-03-100k-sweep.json)."""
    hnsw_ef_construction: int = Field(default=200, ge=8, le=2048)
    """HNSW candidate list while inserting. Default: recall@10 0.9977 of exact at 1M chunks, building far faster
    than any embedding rate (bench/results/ann-scale-2026-12-03-1m.json)."""
    hnsw_ef_search: int = Field(default=256, ge=8, le=4096)
    """HNSW candidate list per search. Default: recall@10 above 0.997 at 100k and 1M chunks where 128 drops 1M to
    0.9935, too close to the 0.99 goal (bench/results/ann-scale-2026-12-03-1m.json)."""
    vector_backend: Literal["local", "chroma"] = "local"
    """Where chunk vectors live with the embedded (SQLite) metadata store: ``local``, the vector log and per-tenant
    FAISS/HNSW indexes in the data directory; ``chroma``, a Chroma server you already run
    (``DOCUTHINKER_RAG_CHROMA_URL``), one collection per tenant. Default ``local``: for 20k vectors it added 88 MiB
    to the rag process, Chroma 82 MiB there (its client) plus a 184 MiB server, and searched 50x slower over HTTP
    (bench/results/chroma-server-memory-2026-12-07.json). With
    ``DOCUTHINKER_STORE_BACKEND=postgres`` the vectors are pgvector's and ``chroma`` is refused at startup."""
    chroma_url: str = Field(default="http://127.0.0.1:8000", pattern=r"^https?://[^/\s]+/?$")
    """The Chroma server of ``DOCUTHINKER_RAG_VECTOR_BACKEND=chroma`` (e.g. started with ``chroma run``); an
    unreachable one fails the start, naming this URL."""
    chroma_prefix: str = Field(default="docuthinker", pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,40}$")
    """Prefix of the Chroma collection names, so several deployments can share one Chroma server."""
    reindex_on_model_change: bool = False
    """At startup, when the vectors on disk come from another embedder (``DOCUTHINKER_EMBED_RUNTIME`` or the
    weights changed), drop them and re-embed every chunk with the current one. Off: such a start fails with a
    message saying so, and nothing is mixed."""
    keyword_refresh_delay_s: float = Field(default=1.0, ge=0)
    """Quiet period after a change before the tenant's BM25 index is rebuilt in the background."""
    resume_on_startup: bool = True
    """Resume documents left mid-ingestion by a crash, a shutdown or a dead replica (else mark them failed)."""
    ingest_lease_s: float = Field(default=30.0, gt=0)
    """How long a replica's claim on a document it is ingesting lasts unrenewed (it renews it every third of
    this while it works). With ``postgres``, a document whose replica died is taken over by another replica
    once its lease has run out."""
    ingest_sweep_interval_s: float = Field(default=0.0, ge=0)
    """Seconds between two sweeps of a replica for unfinished documents nobody holds a lease on (resumed from
    their stored bytes). 0: half of ``DOCUTHINKER_RAG_INGEST_LEASE_S``."""

    @property
    def sweep_interval_s(self) -> float:
        return self.ingest_sweep_interval_s or self.ingest_lease_s / 2

    @model_validator(mode="after")
    def _overlap_below_size(self) -> RagSettings:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"DOCUTHINKER_RAG_CHUNK_OVERLAP ({self.chunk_overlap}) must be smaller than "
                f"DOCUTHINKER_RAG_CHUNK_SIZE ({self.chunk_size})"
            )
        return self
