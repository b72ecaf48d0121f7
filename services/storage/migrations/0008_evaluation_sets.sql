-- Evaluation sets (#42): a tenant's questions with expected answers, its runs against the library and their
-- per-item results (services/orchestrator/evals/store.py, whose statements serve both backends). A running
-- run holds one of its tenant's run slots: the partial unique index makes the per-tenant quota hold across
-- orchestrator replicas.
CREATE TABLE eval_sets (
    tenant TEXT NOT NULL,
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    format TEXT NOT NULL,
    item_count INTEGER NOT NULL,
    kinds TEXT NOT NULL,
    items TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX eval_sets_by_time ON eval_sets (tenant, created_at);

CREATE TABLE eval_runs (
    tenant TEXT NOT NULL,
    id TEXT NOT NULL,
    set_id TEXT NOT NULL,
    set_name TEXT NOT NULL,
    label TEXT NOT NULL,
    settings TEXT NOT NULL,
    identities TEXT NOT NULL,
    state TEXT NOT NULL,
    total INTEGER NOT NULL,
    completed INTEGER NOT NULL,
    slot INTEGER,
    owner TEXT,
    lease_until DOUBLE PRECISION,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    error TEXT NOT NULL DEFAULT '',
    totals TEXT NOT NULL DEFAULT '',
    created_at DOUBLE PRECISION NOT NULL,
    finished_at DOUBLE PRECISION,
    PRIMARY KEY (tenant, id)
);
CREATE UNIQUE INDEX eval_runs_slots ON eval_runs (tenant, slot) WHERE slot IS NOT NULL;
CREATE INDEX eval_runs_by_set ON eval_runs (tenant, set_id, created_at);
CREATE INDEX eval_runs_finished ON eval_runs (finished_at);

CREATE TABLE eval_results (
    tenant TEXT NOT NULL,
    run_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    result TEXT NOT NULL,
    PRIMARY KEY (tenant, run_id, position)
);
