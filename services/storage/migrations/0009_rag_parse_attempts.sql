-- Parse attempts (#38): counted when a replica starts parsing a document, reset once its parse finished. A
-- document whose parse was begun twice and never finished (its parser, or the service, died reading it) is
-- not resumed again at a restart: it goes FAILED with the reason, so a hostile file cannot crash-loop rag.
ALTER TABLE rag_documents ADD COLUMN parse_attempts INTEGER NOT NULL DEFAULT 0;
