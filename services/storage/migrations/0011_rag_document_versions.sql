-- Document versions (#41): a document keeps a stable id across versions (``doc_key``: the name a client
-- or a source gave it). A new version is ingested on a staging row (``version_of`` names the document)
-- beside the live one; once indexed, the live version's chunks (with their vectors), sections and time
-- codes move to the archive tables and the new ones take their place, in one transaction. Searches read
-- ``rag_chunks`` as before: only live versions are there.
ALTER TABLE rag_documents ADD COLUMN version INTEGER NOT NULL DEFAULT 1,
    ADD COLUMN doc_key TEXT NOT NULL DEFAULT '',
    ADD COLUMN version_of TEXT NOT NULL DEFAULT '';
CREATE INDEX rag_documents_by_version_of ON rag_documents (tenant, version_of) WHERE version_of <> '';
ALTER TABLE rag_chunks ADD COLUMN version INTEGER NOT NULL DEFAULT 1;

CREATE TABLE rag_document_versions (
    tenant TEXT NOT NULL,
    document_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    filename TEXT NOT NULL,
    file_type TEXT NOT NULL,
    content_type TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    size_bytes BIGINT NOT NULL,
    page_count INTEGER NOT NULL,
    sheet_names TEXT NOT NULL,
    title TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    chunks_embedded INTEGER NOT NULL,
    chunks_reused INTEGER NOT NULL,
    create_time DOUBLE PRECISION NOT NULL,
    superseded_time DOUBLE PRECISION,
    PRIMARY KEY (tenant, document_id, version)
);
CREATE INDEX rag_document_versions_by_sha ON rag_document_versions (tenant, content_sha256);

CREATE TABLE rag_version_sections (
    tenant TEXT NOT NULL,
    document_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    position INTEGER NOT NULL,
    page INTEGER NOT NULL,
    sheet_name TEXT NOT NULL,
    heading_path TEXT NOT NULL,
    row_starts TEXT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (tenant, document_id, version, position)
);

-- Chunks of earlier versions, each with its vector (searched exactly, one version at a time, when asked for).
CREATE TABLE rag_version_chunks (
    tenant TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    vector_key BIGINT NOT NULL,
    document_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    section_index INTEGER NOT NULL,
    text TEXT NOT NULL,
    filename TEXT NOT NULL,
    page INTEGER NOT NULL,
    sheet_name TEXT NOT NULL,
    row_start INTEGER NOT NULL,
    row_end INTEGER NOT NULL,
    heading_path TEXT NOT NULL,
    char_start INTEGER NOT NULL,
    char_end INTEGER NOT NULL,
    version INTEGER NOT NULL,
    start_seconds DOUBLE PRECISION,
    end_seconds DOUBLE PRECISION,
    time_starts TEXT,
    vector BYTEA,
    PRIMARY KEY (tenant, chunk_id)
);
CREATE INDEX rag_version_chunks_by_document ON rag_version_chunks (tenant, document_id, version, ordinal);
