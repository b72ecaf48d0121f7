-- The graph-sync outbox. ``claimed_by``/``lease_until`` let several workers (one per rag replica)
-- share it: a worker claims a due entry with FOR UPDATE SKIP LOCKED and owns it until its lease
-- ends; a worker that dies leaves the entry to another once the lease has passed.
CREATE SEQUENCE rag_graph_outbox_sequence;

CREATE TABLE rag_graph_outbox (
    tenant TEXT NOT NULL,
    document_id TEXT NOT NULL,
    operation TEXT NOT NULL CHECK (operation IN ('upsert', 'delete')),
    sequence BIGINT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT '',
    facts TEXT,
    enqueue_time DOUBLE PRECISION NOT NULL,
    next_attempt_time DOUBLE PRECISION NOT NULL,
    trace_context TEXT,
    claimed_by TEXT,
    lease_until DOUBLE PRECISION,
    PRIMARY KEY (tenant, document_id)
);
CREATE INDEX rag_graph_outbox_due ON rag_graph_outbox (next_attempt_time, sequence);
