-- Sources kept in sync (#41): folders, IMAP mailboxes, WebDAV shares, Git branches. A replica syncing a source
-- holds its lease (claimed_by/lease_until, the database's clock) and renews it while the sync runs, so two
-- replicas never sync one source at once; claims skip locked rows. ``secret`` is the credential sealed with the
-- tenant's key (AES-GCM). Each item of a source records its change token and the documents it became.
CREATE TABLE rag_sources (
    tenant TEXT NOT NULL,
    source_id TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    config TEXT NOT NULL,
    secret TEXT NOT NULL,
    interval_s INTEGER NOT NULL,
    paused INTEGER NOT NULL,
    create_time DOUBLE PRECISION NOT NULL,
    update_time DOUBLE PRECISION NOT NULL,
    next_run DOUBLE PRECISION NOT NULL,
    requested INTEGER NOT NULL,
    state INTEGER NOT NULL,
    last_run_start DOUBLE PRECISION,
    last_run_end DOUBLE PRECISION,
    last_success DOUBLE PRECISION,
    counts TEXT NOT NULL,
    error_reason TEXT NOT NULL,
    error_message TEXT NOT NULL,
    consecutive_failures INTEGER NOT NULL,
    cursor TEXT NOT NULL,
    claimed_by TEXT,
    lease_until DOUBLE PRECISION,
    PRIMARY KEY (tenant, source_id)
);
CREATE UNIQUE INDEX rag_sources_by_id ON rag_sources (source_id);
CREATE INDEX rag_sources_due ON rag_sources (next_run);

CREATE TABLE rag_source_items (
    tenant TEXT NOT NULL,
    source_id TEXT NOT NULL,
    item_key TEXT NOT NULL,
    token TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    document_ids TEXT NOT NULL,
    failed INTEGER NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt DOUBLE PRECISION,
    error_reason TEXT NOT NULL,
    error_message TEXT NOT NULL,
    update_time DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant, source_id, item_key)
);
