"""Ingestion -> knowledge graph: the port, the durable outbox, its worker and the NLP feed."""
