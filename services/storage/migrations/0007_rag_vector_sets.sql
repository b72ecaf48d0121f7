-- The embedder each vector collection holds (#20): a replica started with another one (another
-- runtime's precision, another weights hash) refuses to mix its vectors into the collection, as the
-- embedded vector log does. ``embedder`` ends in " (re-index in progress)" while a re-index runs.
CREATE TABLE rag_vector_sets (
    collection TEXT PRIMARY KEY,
    embedder TEXT NOT NULL
);
