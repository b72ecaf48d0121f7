-- Chunk vectors (pgvector) and the original uploads.
-- One table holds every embedding model's vectors, told apart by ``collection`` (model and
-- dimension, as the embedded Chroma collection is named); the service creates one partial HNSW
-- index per collection on ``embedding::vector(D)`` at startup, since an index needs a fixed dimension.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE rag_vectors (
    collection TEXT NOT NULL,
    tenant TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    document_id TEXT NOT NULL,
    embedding vector NOT NULL,
    PRIMARY KEY (collection, tenant, chunk_id)
);
CREATE INDEX rag_vectors_by_document ON rag_vectors (tenant, document_id);

CREATE TABLE rag_blobs (
    tenant TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (tenant, content_sha256)
);
