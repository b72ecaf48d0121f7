-- RAG documents, sections, chunks (with their full-text vectors), recordings' time codes, and the
-- per-tenant generation counter. Every table is keyed by tenant first: every query names one.
CREATE TABLE rag_documents (
    tenant TEXT NOT NULL,
    document_id TEXT NOT NULL,
    filename TEXT NOT NULL,
    file_type TEXT NOT NULL,
    content_type TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    size_bytes BIGINT NOT NULL,
    status INTEGER NOT NULL,
    error_message TEXT NOT NULL DEFAULT '',
    page_count INTEGER NOT NULL DEFAULT 0,
    sheet_names TEXT NOT NULL DEFAULT '[]',
    chunk_count INTEGER NOT NULL DEFAULT 0,
    graph_sync INTEGER NOT NULL DEFAULT 3,
    title TEXT NOT NULL DEFAULT '',
    create_time DOUBLE PRECISION NOT NULL,
    update_time DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant, document_id)
);
CREATE INDEX rag_documents_newest_first ON rag_documents (tenant, create_time DESC, document_id DESC);
CREATE INDEX rag_documents_unfinished ON rag_documents (status) WHERE status NOT IN (6, 7);  -- READY, FAILED

CREATE TABLE rag_sections (
    tenant TEXT NOT NULL,
    document_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    page INTEGER NOT NULL,
    sheet_name TEXT NOT NULL,
    heading_path TEXT NOT NULL,
    row_starts TEXT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (tenant, document_id, position)
);

CREATE TABLE rag_chunks (
    tenant TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    seq BIGINT GENERATED ALWAYS AS IDENTITY,
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
    -- Keyword search: English stemming and stop words, as the embedded BM25 tokenizer does.
    tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    PRIMARY KEY (tenant, chunk_id)
);
CREATE INDEX rag_chunks_by_document ON rag_chunks (tenant, document_id, ordinal);
CREATE INDEX rag_chunks_text ON rag_chunks USING gin (tsv);

CREATE TABLE rag_chunk_times (
    tenant TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    document_id TEXT NOT NULL,
    start_seconds DOUBLE PRECISION NOT NULL,
    end_seconds DOUBLE PRECISION NOT NULL,
    time_starts TEXT NOT NULL,
    PRIMARY KEY (tenant, chunk_id)
);
CREATE INDEX rag_chunk_times_by_document ON rag_chunk_times (tenant, document_id);

CREATE TABLE rag_generations (
    tenant TEXT PRIMARY KEY,
    generation BIGINT NOT NULL
);
