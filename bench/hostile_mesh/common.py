"""What every hostile-mesh probe shares: the tenant they act as, the single mesh's environment, Envoy's admin
interface, a process's RSS, and the test for a ``google.rpc.Status`` body."""

from __future__ import annotations

import httpx

TENANT = "hostile"
MiB = 1024 * 1024
SINGLE_ENV = {"DOCUTHINKER_SHUTDOWN_GRACE_S": "1"}
"""The environment of the one-replica mesh the gateway, body and fault probes run on."""


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def admin_get(mesh, path: str, params: dict[str, str] | None = None) -> httpx.Response:
    """A GET of Envoy's admin interface: its unix socket, or (a mesh from before #38, ``--baseline-rev``) the TCP
    port it had then."""
    if hasattr(mesh, "admin"):
        return mesh.admin.get(path, params, timeout=10)
    return httpx.get(f"{mesh.admin_url}{path}", params=params, timeout=10)


def status_body(reply: httpx.Response) -> bool:
    """A ``google.rpc.Status`` JSON body (code, message)."""
    if not reply.headers.get("content-type", "").startswith("application/json"):
        return False
    try:
        body = reply.json()
    except ValueError:
        return False
    return isinstance(body, dict) and {"code", "message"} <= set(body)

