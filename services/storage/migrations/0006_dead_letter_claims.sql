-- Dead-letter claims (#16): an orchestrator replaying or retrying a letter first claims it with one
-- conditional UPDATE, so two orchestrators never run the same letter's handler at once. ``claim_until``
-- frees a letter whose orchestrator died mid-attempt.
ALTER TABLE dead_letters ADD COLUMN claimed_by TEXT, ADD COLUMN claim_until DOUBLE PRECISION;
