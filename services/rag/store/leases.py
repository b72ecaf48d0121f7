"""Ingestion leases, the part both metadata stores share: the error a lost lease raises.

The replica ingesting a document holds its lease (``claimed_by`` = the store's ``owner``, ``lease_until``)
from the upload, re-index or takeover that claimed it until the document is READY or FAILED; the pipeline
renews it by heartbeat. Only the holder may move the document's status or publish its chunks: a replica
that lost the lease (it stalled past it and another replica's sweep took the document over) finds its
writes refused with ``LeaseLost``, so nothing is indexed twice and nothing is marked by two replicas. A
holder whose lease has only lapsed, with no other replica having claimed it, still holds it.
"""

from __future__ import annotations

from services.runtime.errors import Aborted


class LeaseLost(Aborted):
    """This replica no longer holds the document's ingestion lease: another replica took the ingestion over."""

    def __init__(self, document_id: str) -> None:
        super().__init__(f"ingestion of document {document_id} was taken over by another replica",
                         reason="INGEST_TAKEN_OVER", metadata={"document_id": document_id})
