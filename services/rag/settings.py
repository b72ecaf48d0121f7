"""Settings of the RAG service, read from ``DOCUTHINKER_RAG_*`` environment variables.

The upload byte limit is mesh-wide (``DOCUTHINKER_MAX_UPLOAD_BYTES`` in ``MeshSettings``)
because Envoy enforces the same number on REST bodies; the data directory is the mesh's too.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class RagSettings(BaseSettings):
    """Chunking, embedding and parser safety limits of the ingestion pipeline."""

    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_RAG_", frozen=True, extra="ignore")

    chunk_size: int = Field(default=900, ge=100, le=8000)
    """Largest chunk, in characters; chunks end on paragraph or sentence boundaries."""
    chunk_overlap: int = Field(default=120, ge=0)
    """Characters repeated from the end of one chunk at the start of the next; must be < chunk_size."""
    embed_batch_size: int = Field(default=32, ge=1, le=512)
    """Chunks per forward pass of the embedding model."""
    embed_progress_every: int = Field(default=128, ge=1)
    """Chunks embedded between two "embedded k of n" progress events (one encode call each)."""
    max_pages: int = Field(default=2000, ge=1)
    """PDFs with more pages are refused (RESOURCE_EXHAUSTED)."""
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
    faiss_threads: int = Field(default=1, ge=1, le=256)
    """OpenMP threads FAISS may use for one search. One thread per query measured 2.4x faster at
    100k chunks on 2 cores with another request running (8.7 vs 20.9 ms), and leaves the other
    cores to concurrent requests; raise it for a lone client on a many-core machine."""
    keyword_refresh_delay_s: float = Field(default=1.0, ge=0)
    """Quiet period after a change before the tenant's BM25 index is rebuilt in the background."""
    resume_on_startup: bool = True
    """Resume documents left mid-ingestion by a crash (else mark them failed)."""

    @model_validator(mode="after")
    def _overlap_below_size(self) -> RagSettings:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"DOCUTHINKER_RAG_CHUNK_OVERLAP ({self.chunk_overlap}) must be smaller than "
                f"DOCUTHINKER_RAG_CHUNK_SIZE ({self.chunk_size})"
            )
        return self


@lru_cache(maxsize=1)
def rag_settings() -> RagSettings:
    return RagSettings()
