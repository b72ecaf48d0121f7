"""Sources: places the mesh keeps in sync with a tenant's documents (a folder, an IMAP mailbox, a WebDAV share,
a Git branch).

Every rag replica runs a ``SourceScheduler``: it claims a due source under a lease (``claimed_by``/
``lease_until``, renewed by heartbeat while the sync runs, as ingestion leases are), so two replicas never sync
one source at once, and a replica that dies leaves the source to another once the lease runs out. A sync
(``engine.SyncEngine``) lists the source's items through its connector (``connectors/``), compares each item's
change token (a file's mtime and size, an ETag, an IMAP UID, a Git blob id) with the one recorded, fetches what
is new or changed and uploads it as a new version of the item's named document, and deletes the documents of
items that disappeared. Each item's outcome is recorded as soon as it is known, so a crash mid-sync resumes
where it stopped, and an upload repeated after a crash is a duplicate of the live version, not a new one. A
failing item is recorded with its reason and retried with backoff; the others go on. Credentials are stored
encrypted per tenant (``secrets``).
"""
