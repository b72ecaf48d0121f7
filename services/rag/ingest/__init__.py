"""Ingestion: validate an upload, parse it, chunk it, embed it and index it atomically."""
