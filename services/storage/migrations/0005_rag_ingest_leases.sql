-- Ingestion leases (#16): the replica ingesting a document holds ``claimed_by``/``lease_until`` and renews
-- the lease while it works; its status writes and its publication are conditional on still holding it. A
-- sweep on every replica claims unfinished documents whose lease has run out (FOR UPDATE SKIP LOCKED) and
-- resumes them from their stored bytes. Times are the database's clock (epoch seconds), so the replicas'
-- clocks need not agree. NULL: nobody holds the document (it is READY, FAILED, or was let go at a shutdown).
ALTER TABLE rag_documents ADD COLUMN claimed_by TEXT, ADD COLUMN lease_until DOUBLE PRECISION;
