-- Conversations of each user (#39, services/orchestrator/user_conversations.py): keyed by the bearer token's
-- subject within a tenant, with their turns (the question as asked and as resolved, the answer's JSON).
CREATE TABLE user_conversations (
    tenant TEXT NOT NULL,
    subject TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    title TEXT NOT NULL,
    document_ids TEXT NOT NULL DEFAULT '[]',
    turn_count INTEGER NOT NULL DEFAULT 0,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant, subject, conversation_id)
);
CREATE INDEX user_conversations_recent ON user_conversations (tenant, subject, updated_at);

CREATE TABLE user_conversation_turns (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant TEXT NOT NULL,
    subject TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    question TEXT NOT NULL,
    resolved_question TEXT NOT NULL,
    answer TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX user_conversation_turns_key ON user_conversation_turns (tenant, subject, conversation_id, id);
