"""Indexing a new version: reusing earlier versions' vectors, and the promotion that makes it live.

Both chunk indexes (embedded and PostgreSQL) expose the same ``metadata`` and ``vectors`` ports, so these
work on either: vectors are content-addressed by the chunk's exact text, looked up among the document's
live chunks (in the vector store) and its archived ones (kept with their vectors), and copied to the new
chunk ids instead of being computed again.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from services.rag.documents import Chunk, DocumentRecord, GraphSyncState, Section
from services.rag.store.ports import ChunkIndexPort


def reusable_vectors(index: ChunkIndexPort, tenant: str, document_id: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Vectors for those of ``texts`` that a chunk of the document (live or archived) already has, by text."""
    wanted = set(texts)
    found: dict[str, np.ndarray] = {}
    live = [(chunk_id, text) for chunk_id, text in index.metadata.live_chunk_texts(tenant, document_id)
            if text in wanted]
    if live:
        stored = index.vectors.vectors_of(tenant, [chunk_id for chunk_id, _ in live])
        for chunk_id, text in live:
            if chunk_id in stored:
                found.setdefault(text, stored[chunk_id])
    if len(found) < len(wanted):
        for archived in index.metadata.archived_vectors(tenant, document_id):
            if archived.vector is not None and archived.text in wanted:
                found.setdefault(archived.text, archived.vector)
    return found


def promote(index: ChunkIndexPort, staging: DocumentRecord, sections: Sequence[Section], chunks: Sequence[Chunk],
            vectors: np.ndarray, graph_sync: GraphSyncState, reused: int) -> DocumentRecord:
    """Makes a staged version live (see ``MetadataStore.promote``); its vectors must be staged already.
    Blocking; raises ``TargetBusy`` while the document is held elsewhere (the caller waits and retries)."""
    tenant = staging.tenant
    live_ids = [chunk_id for chunk_id, _ in index.metadata.live_chunk_texts(tenant, staging.version_of)]
    live_vectors: dict[str, np.ndarray | None] = {chunk_id: None for chunk_id in live_ids}
    live_vectors.update(index.vectors.vectors_of(tenant, live_ids))
    staged = {c.chunk_id: vectors[i] for i, c in enumerate(chunks)}
    leaving, record = index.metadata.promote(staging, sections, chunks, graph_sync, live_vectors, staged,
                                             len(chunks) - reused, reused)
    # The old live version's vectors now live in its archive rows: out of the search index.
    index.vectors.remove(tenant, leaving)
    return record
