-- The orchestrator's state: the same tables (and names) as its SQLite database, so its stores'
-- statements serve both backends.
CREATE TABLE cost_records (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ts DOUBLE PRECISION NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    intent TEXT NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cache_read_tokens BIGINT NOT NULL,
    cache_write_tokens BIGINT NOT NULL,
    cost_usd DOUBLE PRECISION NOT NULL,
    tenant TEXT NOT NULL DEFAULT ''
);
CREATE INDEX cost_records_ts ON cost_records (ts);
CREATE INDEX cost_records_tenant_ts ON cost_records (tenant, ts);

CREATE TABLE dead_letters (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    operation TEXT NOT NULL,
    payload TEXT NOT NULL,
    last_error TEXT NOT NULL,
    retry_count INTEGER NOT NULL,
    state TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    next_retry_at DOUBLE PRECISION
);
CREATE INDEX dead_letters_due ON dead_letters (state, next_retry_at);
CREATE INDEX dead_letters_by_tenant ON dead_letters (tenant, created_at DESC);

CREATE TABLE conversations (
    tenant TEXT NOT NULL,
    user_id TEXT NOT NULL,
    document_id TEXT NOT NULL,
    summary TEXT NOT NULL DEFAULT '',
    used_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant, user_id, document_id)
);
CREATE INDEX conversations_lru ON conversations (tenant, used_at);

CREATE TABLE conversation_messages (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant TEXT NOT NULL,
    user_id TEXT NOT NULL,
    document_id TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX conversation_messages_key ON conversation_messages (tenant, user_id, document_id, id);

CREATE TABLE circuits (
    name TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    failures INTEGER NOT NULL,
    successes INTEGER NOT NULL,
    total_failures INTEGER NOT NULL,
    opened_at DOUBLE PRECISION,
    probe_started_at DOUBLE PRECISION
);

CREATE TABLE document_insights (
    tenant TEXT NOT NULL,
    document_id TEXT NOT NULL,
    summary TEXT NOT NULL,
    key_ideas TEXT NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant, document_id)
);
