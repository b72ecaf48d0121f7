"""Hostile-mesh probes of request bodies: large uploads held open, declared sizes over the limit, strict JSON.

- ``held_uploads``: 20 uploads of 24 MiB each, sent but the last byte and held open, then closed: Envoy's RSS
  before, its peak while they are held, and after they close.
- ``oversized``: a declared ``Content-Length`` over each route's limit, refused at the headers (413,
  ``google.rpc.Status``) before a byte of the body is sent.
- ``strict_json``: an unknown field in small, chunked and 600 KiB - 1 MiB JSON bodies (the sizes and framing the
  check used to skip), refused with 400; over 1 MiB, 413.
"""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

from .common import TENANT, MiB, rss_mb, status_body


# -- held uploads --------------------------------------------------------------------------
def held_uploads(mesh, uploads: int = 20, size: int = 24 * MiB, hold_s: float = 5.0, settle_s: float = 5.0) -> dict:
    """``uploads`` raw uploads of ``size`` bytes sent but their last byte and held open for ``hold_s``, then
    closed; Envoy's RSS before, at its peak while they are held, and ``settle_s`` after they close."""
    envoy, rag = mesh.pids()["gateway"], mesh.pids()["rag"]
    token = mesh.mint(TENANT)
    piece = os.urandom(MiB)
    before = rss_mb(envoy)
    peak = before
    held: list[socket.socket] = []
    lock = threading.Lock()

    def send(n: int) -> None:
        conn = socket.create_connection((mesh.settings.local_host, mesh.settings.gateway_port))
        conn.sendall(f"POST /v1/documents?filename=held-{n}.pdf HTTP/1.1\r\nHost: gateway\r\n"
                     f"Authorization: Bearer {token}\r\nContent-Type: application/pdf\r\n"
                     f"Content-Length: {size}\r\n\r\n".encode())
        sent = 0
        while sent < size - 1:
            part = piece[: min(MiB, size - 1 - sent)]
            conn.sendall(part)
            sent += len(part)
        with lock:
            held.append(conn)

    started = time.monotonic()
    with ThreadPoolExecutor(uploads) as pool:
        futures = [pool.submit(send, n) for n in range(uploads)]
        while not all(f.done() for f in futures):
            peak = max(peak, rss_mb(envoy))
            time.sleep(0.05)
        for future in futures:
            future.result()
    sent_s = time.monotonic() - started
    deadline = time.monotonic() + hold_s
    while time.monotonic() < deadline:
        peak = max(peak, rss_mb(envoy))
        time.sleep(0.05)
    rag_held = rss_mb(rag)
    for conn in held:
        conn.close()
    deadline = time.monotonic() + settle_s
    after_peak = 0.0
    while time.monotonic() < deadline:
        after_peak = max(after_peak, rss_mb(envoy))
        time.sleep(0.1)
    return {"uploads": uploads, "upload_mib": size / MiB, "held_s": hold_s, "all_sent_s": round(sent_s, 2),
            "envoy_rss_mb_before": round(before, 1), "envoy_rss_mb_peak_held": round(peak, 1),
            "envoy_rss_mb_after": round(rss_mb(envoy), 1), "envoy_rss_mb_peak_after_close": round(after_peak, 1),
            "rag_rss_mb_while_held": round(rag_held, 1)}


# -- sizes and strict JSON -----------------------------------------------------------------
def _declared(mesh, path: str, length: int, content_type: str, token: str | None) -> tuple[int, bool, float]:
    """Sends only the headers of a request declaring ``length`` body bytes; the status, whether the body is a
    google.rpc.Status, and how long the answer took (it came without a byte of the body)."""
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    started = time.monotonic()
    raw = b""
    with socket.create_connection((mesh.settings.local_host, mesh.settings.gateway_port), timeout=15) as conn:
        conn.sendall(f"POST {path} HTTP/1.1\r\nHost: gateway\r\n{auth}Content-Type: {content_type}\r\n"
                     f"Content-Length: {length}\r\n\r\n".encode())
        try:
            while b"\r\n\r\n" not in raw or len(raw.split(b"\r\n\r\n", 1)[1]) < _content_length(raw):
                chunk = conn.recv(65536)
                if not chunk:
                    break
                raw += chunk
        except TimeoutError:  # no answer without the body: the gateway waits for it (status 0)
            pass
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head else 0
    try:
        parsed = json.loads(body)
        is_status = {"code", "message"} <= set(parsed)
    except ValueError:
        is_status = False
    return status, is_status, time.monotonic() - started


def _content_length(raw: bytes) -> int:
    match = re.search(rb"content-length: (\d+)", raw.split(b"\r\n\r\n", 1)[0], re.IGNORECASE)
    return int(match.group(1)) if match else 0


def oversized(mesh) -> dict:
    """Declared bodies over each route's limit: answered 413 at the headers."""
    token = mesh.mint(TENANT)
    limit = mesh.settings.max_upload_bytes
    cases = {
        "upload_1GiB": ("/v1/documents?filename=big.pdf", 1 << 30, "application/pdf"),
        "upload_limit_plus_1": ("/v1/documents?filename=big.pdf", limit + 1, "application/pdf"),
        "ingest_1GiB": ("/v1/documents:ingest?filename=big.pdf", 1 << 30, "application/pdf"),
        "spoken_1GiB": ("/v1/query:spoken", 1 << 30, "audio/ogg"),
        "json_2MiB": ("/v1/search", 2 * MiB, "application/json"),
        "stream_upload_1GiB": ("/v1/documents:streamUpload", 1 << 30, "application/json"),
    }
    out = {}
    for name, (path, length, content_type) in cases.items():
        status, is_status, seconds = _declared(mesh, path, length, content_type, token)
        out[name] = {"status": status, "google_rpc_status": is_status, "answered_s": round(seconds, 3)}
    refused = [c for c in out.values() if c["status"] == 413 and c["google_rpc_status"]]
    return {"cases": out, "refused_413": len(refused), "total": len(cases)}


def _chunked(body: bytes, size: int = 64 * 1024) -> Iterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start:start + size]


def strict_json(mesh) -> dict:
    """An unknown field in JSON bodies of each size and framing; valid twins go through."""
    out: Counter = Counter()
    cases = {}
    with mesh.http(timeout=60, headers={"x-tenant-id": TENANT}) as http:
        for size in (100, 600 * 1024, MiB - 4096, MiB + 4096):
            for framing in ("length", "chunked"):
                for unknown in (False, True):
                    # ids of 40 characters take 44 bytes each in the JSON: about ``size`` bytes in all
                    payload = {"query": "pump seals", "document_ids": ["d" * 40] * max(0, size // 44)}
                    if unknown:
                        payload["topk"] = 3
                    body = json.dumps(payload).encode()
                    content = body if framing == "length" else _chunked(body)
                    reply = http.post("/v1/search", content=content, headers={"content-type": "application/json"})
                    reason = ""
                    if status_body(reply):
                        reason = next((d.get("reason", "") for d in reply.json().get("details", [])
                                       if d.get("@type", "").endswith("ErrorInfo")), "")
                        if "no field named" in reply.json()["message"]:
                            reason = "UNKNOWN_FIELD"
                    key = f"{len(body) // 1024}KiB:{framing}:{'unknown' if unknown else 'valid'}"
                    cases[key] = {"status": reply.status_code, "reason": reason}
                    out[f"{'unknown' if unknown else 'valid'}:{reply.status_code}:{reason}"] += 1
    def refused(case: dict) -> bool:  # by the gateway, before any service saw the body
        return case["reason"] == "UNKNOWN_FIELD" or case["status"] == 413

    unknown = [c for k, c in cases.items() if k.endswith(":unknown")]
    return {"cases": cases, "counts": dict(out), "unknown_field_bodies": len(unknown),
            "unknown_field_refused": sum(map(refused, unknown)),
            # a body with an unknown field a service answered (whatever it said): the field was dropped unseen
            "unknown_field_passed": sum(1 for c in unknown if not refused(c))}


