"""The identity a process stamps on the rows it claims in shared state (leases, claims)."""

from __future__ import annotations

import os
import socket
import uuid


def replica_id() -> str:
    """``host:pid:random``: unique per process start, so a restarted replica never inherits the claims of the
    process it replaces (a reused pid on the same host included), and readable in the database."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
