"""RAG service: documents (upload, list, get, text, delete, re-index) and their ingestion.

Domain packages: ``ingest`` (formats, parsers, chunking, embedding, pipeline) and ``store``
(SQLite metadata, original bytes, vector log + FAISS vectors, BM25). ``store.ChunkIndex`` is the
typed read API that retrieval and grounded answers build on.
"""
