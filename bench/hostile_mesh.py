"""What a hostile client finds at the gateway and across replicas (#38, the mesh's part): probes and counts.

Each probe works on a running mesh (``services.launcher.mesh.Mesh``), talks only to 127.0.0.1, is bounded,
and returns what it measured as plain data; ``tests/e2e/test_hostile_mesh.py`` asserts on the same probes,
and ``python -m bench.hostile_mesh`` runs them all and writes ``bench/results/hostile-mesh-<date>.json``
(``--baseline-rev REV`` runs the single-mesh probes on another revision's mesh too, side by side):

- ``credential``: every admin endpoint of Envoy (over its unix socket) and the rendered config, searched for
  the mesh credential; the admin socket's mode; no admin TCP port.
- ``held_uploads``: 20 uploads of 24 MiB each, sent but the last byte and held open, then closed: Envoy's RSS
  before, its peak while they are held, and after they close.
- ``oversized``: a declared ``Content-Length`` over each route's limit, refused at the headers (413,
  ``google.rpc.Status``) before a byte of the body is sent.
- ``strict_json``: an unknown field in small, chunked and 600 KiB - 1 MiB JSON bodies (the sizes and framing the
  check used to skip), refused with 400; over 1 MiB, 413.
- ``flood``: requests without a token (and with a forged one) from one address, rate-limited with 429.
- ``headers``: every answer's headers, searched for the proxy's name and internals.
- ``pause``: calls in flight to a paused (SIGSTOPped) rag: how long until each ends.
- ``health``: ``/v1/health`` against Envoy's own view while rag restarts: a SERVING report followed by
  "no healthy upstream".
- ``takeover`` / ``dead_letter``: two rag and two orchestrator processes on one PostgreSQL: SIGKILL the rag
  replica holding an ingestion, the other takes it over once the lease runs out and finishes it, once; a dead
  letter is retried by exactly one of the two orchestrators.

Timings here are measurements (the machine is shared: two cores and several agents), never assertions.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import pathlib
import platform
import re
import signal
import socket
import stat
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx

from services.runtime import mesh_auth

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
TENANT = "hostile"
MiB = 1024 * 1024
ADMIN_ENDPOINTS = ("/config_dump", "/config_dump?include_eds", "/clusters", "/clusters?format=json", "/listeners",
                   "/server_info", "/stats", "/stats?format=json", "/stats/prometheus", "/runtime", "/certs",
                   "/memory", "/init_dump", "/ready", "/hot_restart_version", "/help", "/stats/recentlookups")
LEAKY_HEADERS = re.compile(r"^(server|x-powered-by|x-envoy-.*|grpc-.*|via)$")


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


def _status_body(reply: httpx.Response) -> bool:
    """A ``google.rpc.Status`` JSON body (code, message)."""
    if not reply.headers.get("content-type", "").startswith("application/json"):
        return False
    try:
        body = reply.json()
    except ValueError:
        return False
    return isinstance(body, dict) and {"code", "message"} <= set(body)


# -- the mesh credential -------------------------------------------------------------------
def credential(mesh) -> dict:
    """Envoy's admin endpoints and rendered config searched for the mesh credential."""
    secret = mesh_auth.read_credential(mesh.settings.mesh_credential_file)
    assert secret, "the mesh has no credential to look for"
    found = {}
    statuses = {}
    for path in ADMIN_ENDPOINTS:
        reply = admin_get(mesh, path)
        statuses[path] = reply.status_code
        found[path] = secret in reply.text
    config = (mesh.log_dir / "envoy.yaml").read_text()
    mode = os.stat(mesh.admin.socket_path).st_mode if hasattr(mesh, "admin") else 0
    return {
        "endpoints_checked": len(ADMIN_ENDPOINTS),
        "endpoints_answered": sum(1 for s in statuses.values() if s == 200),
        "credential_found": sum(found.values()),
        "credential_found_at": sorted(p for p, hit in found.items() if hit),
        "config_file_has_credential": secret in config,
        "admin_is_unix_socket": stat.S_ISSOCK(mode),
        "admin_tcp_port": getattr(mesh, "admin_url", None),
        "admin_socket_mode": oct(stat.S_IMODE(mode)),
        # Envoy's TCP listeners: the public one and the stats-only one, no admin port among them.
        "tcp_listeners": sorted(
            f"{a['socket_address']['address']}:{a['socket_address']['port_value']}"
            for listener in admin_get(mesh, "/listeners", {"format": "json"}).json()["listener_statuses"]
            for a in [listener["local_address"]] if "socket_address" in a),
    }


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
                    if _status_body(reply):
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


# -- floods and headers --------------------------------------------------------------------
def flood(mesh, anonymous: int = 300, forged: int = 1500, threads: int = 8) -> dict:
    """From one address: ``anonymous`` requests without a token (their own, smaller budget), then ``forged`` ones
    with a forged token from ``threads`` clients at once (the per-address budget, counted before authentication);
    then, once the budget has refilled, one with a real token."""
    counts: Counter = Counter()
    lock = threading.Lock()
    url = f"{mesh.base_url}/v1/documents"

    def send(client: httpx.Client, kind: str, headers: dict[str, str], n: int) -> None:
        for _ in range(n):
            reply = client.get(url, headers=headers)
            limited_ok = reply.status_code == 429 and _status_body(reply) and reply.headers.get("retry-after") == "1"
            with lock:
                counts[f"{kind}:{reply.status_code}"] += 1
                counts[f"{kind}:429_google_rpc_status"] += int(limited_ok)

    started = time.monotonic()
    with httpx.Client(timeout=10) as client:
        send(client, "no_token", {}, anonymous)
    with ThreadPoolExecutor(threads) as pool:
        clients = [httpx.Client(timeout=10) for _ in range(threads)]
        list(pool.map(lambda c: send(c, "forged_token", {"authorization": "Bearer not.a.token"}, forged // threads),
                      clients))
        for c in clients:
            c.close()
    counts["flood_s"] = round(time.monotonic() - started, 1)
    time.sleep(2.5)  # the per-address budget refills (client_rps a second)
    with mesh.http(timeout=30, headers={"x-tenant-id": TENANT}) as http:
        counts[f"with_token_after:{http.get('/v1/documents').status_code}"] += 1
    return dict(counts)


def headers(mesh) -> dict:
    """The headers of answers of every kind (Envoy's own, a service's, a stream, a static file, the chat API)."""
    replies = {}
    with mesh.http(timeout=60, headers={"x-tenant-id": TENANT}) as http:
        replies["search"] = http.post("/v1/search", json={"query": "pump"})
        replies["upload_stream"] = http.post("/v1/documents", params={"filename": "h.txt"},
                                             content=b"Headers probe text about pumps. " * 20,
                                             headers={"content-type": "text/plain"})
        replies["not_found"] = http.get("/v1/no-such-route")
        replies["service_error"] = http.get("/v1/documents/nope")
        replies["models"] = http.get("/v1/models")
        replies["health"] = http.get("/v1/health")
    with httpx.Client(base_url=mesh.base_url, timeout=30) as anonymous:
        replies["unauthenticated"] = anonymous.get("/v1/documents")
        replies["web_app"] = anonymous.get("/")
    leaked = {name: sorted(k for k in reply.headers if LEAKY_HEADERS.match(k.lower()))
              for name, reply in replies.items()}
    return {"answers": len(replies), "leaked": {n: h for n, h in leaked.items() if h},
            "answers_with_leaks": sum(1 for h in leaked.values() if h)}


# -- faults ---------------------------------------------------------------------------------
def pause(mesh, delays: tuple[float, ...] = (0, 0.5, 1, 2, 3, 4, 6), pause_s: float = 14.0) -> dict:
    """SIGSTOP rag; searches started at ``delays`` seconds into the pause; how long each took to end."""
    with mesh.http(timeout=60, headers={"x-tenant-id": TENANT}) as http:
        http.post("/v1/search", json={"query": "warm"})  # an open connection from Envoy to rag, as in use

        def search(delay: float) -> tuple[float, int, bool]:
            time.sleep(delay)
            started = time.monotonic()
            reply = http.post("/v1/search", json={"query": "pump seals"})
            return time.monotonic() - started, reply.status_code, _status_body(reply)

        pid = mesh.pids()["rag"]
        os.kill(pid, signal.SIGSTOP)
        try:
            paused = time.monotonic()
            with ThreadPoolExecutor(len(delays)) as pool:
                results = list(pool.map(search, delays))
            time.sleep(max(0.0, pause_s - (time.monotonic() - paused)))
        finally:
            os.kill(pid, signal.SIGCONT)
    retries = admin_get(mesh, "/stats", {"filter": r"^cluster\.rag\.upstream_rq_retry$"}).text
    return {"calls": len(results), "seconds": [round(s, 2) for s, _, _ in results],
            "max_s": round(max(s for s, _, _ in results), 2),
            "statuses": dict(Counter(str(code) for _, code, _ in results)),
            "google_rpc_status": sum(ok for _, _, ok in results),
            "keepalive_s": mesh.settings.peer_keepalive_s, "keepalive_timeout_s": mesh.settings.peer_keepalive_timeout_s,
            "envoy_rag_retries": int(retries.split(":")[-1]) if ":" in retries else None}


def health_while_restarting(mesh, served: int = 20, timeout_s: float = 240.0) -> dict:
    """Stops rag and starts it again; meanwhile asks ``/v1/health`` and, whenever it says rag is SERVING, sends a
    search at once: one answered 503 "no healthy upstream" is a SERVING report Envoy did not stand behind. Runs
    until ``served`` searches after a SERVING report were answered (or ``timeout_s``)."""
    counts: Counter = Counter()
    mesh.stop_service("rag", timeout=1)  # SIGTERM: stopped, as a crash or a deploy would
    mesh.start_service("rag", wait=False)
    deadline = time.monotonic() + timeout_s
    with mesh.http(timeout=30, headers={"x-tenant-id": TENANT}) as http:
        while time.monotonic() < deadline and counts["search_after_serving:200"] < served:
            health = http.get("/v1/health")
            if health.status_code != 200:
                counts[f"health:{health.status_code}"] += 1
                continue
            rag = next(s for s in health.json()["services"] if s["name"] == "rag")
            counts[f"health:rag_{rag['status']}"] += 1
            if rag["status"] == "SERVING":
                search = http.post("/v1/search", json={"query": "pump"})
                counts[f"search_after_serving:{search.status_code}"] += 1
                if search.status_code == 503 and "no healthy upstream" in search.text:
                    counts["serving_but_not_routed"] += 1
            elif rag["detail"].startswith("SERVING, but the gateway"):
                counts["reported_not_yet_routed"] += 1
            time.sleep(0.05)
    mesh._wait(lambda: mesh._routed("rag"), "rag")
    counts.setdefault("serving_but_not_routed", 0)
    return dict(counts)


def envoy_cgroup(mesh) -> dict:
    """The memory cgroup Envoy runs in (its own, with its own limit, when the launcher may make cgroups)."""
    pid = mesh.pids()["gateway"]
    line = next((x for x in pathlib.Path(f"/proc/{pid}/cgroup").read_text().splitlines()
                 if "memory" in x.split(":")[1].split(",") or x.startswith("0::")), "")
    path = line.split(":", 2)[2] if line else ""
    ceiling = mesh.memory_ceiling
    return {"cgroup": path, "own_cgroup": path.endswith("-gateway"),
            "limit_mb": ceiling.limit_of("gateway") if ceiling is not None and ceiling.available else None,
            "ceiling_available": bool(ceiling is not None and ceiling.available),
            "reason": ceiling.reason if ceiling is not None else "no ceiling configured"}


# -- two replicas on one PostgreSQL ----------------------------------------------------------
def big_text(paragraphs: int, marker: str) -> str:
    return "\n\n".join(f"Folio {n} of the Orrin canal survey. The surveyor measured the depth of reach {n} at "
                       f"{n % 9 + 1} feet and noted {n % 5} barges moored at the wharf of mile {n}."
                       for n in range(paragraphs)) + f"\n\nMarker word {marker}."


TERMINAL = (6, 7)
"""READY and FAILED, as ``rag_documents.status`` stores them (``DocumentStatus``)."""


def _holder(dsn: str, tenant: str, filename: str) -> tuple[str | None, str | None, int]:
    """(document id, claimed_by, status) of the document named ``filename`` in the shared database."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT document_id, claimed_by, status FROM rag_documents WHERE tenant=%s AND filename=%s",
                           (tenant, filename)).fetchone()
    return (row[0], row[1], int(row[2])) if row else (None, None, -1)


def _stored(dsn: str, tenant: str, document_id: str) -> dict:
    import psycopg

    with psycopg.connect(dsn) as conn:
        documents = conn.execute("SELECT count(*) FROM rag_documents WHERE tenant=%s AND document_id=%s",
                                 (tenant, document_id)).fetchone()[0]
        chunks = conn.execute("SELECT count(*) FROM rag_chunks WHERE tenant=%s AND document_id=%s",
                              (tenant, document_id)).fetchone()[0]
        distinct = conn.execute("SELECT count(DISTINCT chunk_id) FROM rag_chunks WHERE tenant=%s AND document_id=%s",
                                (tenant, document_id)).fetchone()[0]
        vectors = conn.execute("SELECT count(*) FROM rag_vectors WHERE tenant=%s AND document_id=%s",
                               (tenant, document_id)).fetchone()[0]
    return {"document_rows": documents, "chunks": chunks, "distinct_chunks": distinct, "vectors": vectors}


def _logged(mesh, service: str, needle: str, *more: str) -> dict[str, int]:
    """Log lines of each replica of ``service`` holding every needle."""
    out = {}
    for name in mesh.replicas_of(service):
        path = mesh.log_dir / f"{name}.log"
        if path.exists():
            out[name] = sum(1 for line in path.read_text(errors="replace").splitlines()
                            if needle in line and all(m in line for m in more))
    return out


def takeover(mesh, dsn: str, lease_s: float, paragraphs: int = 2500) -> dict:
    """Uploads a large document through the gateway, SIGKILLs the rag replica whose lease it is under while it
    ingests, and follows the other replica's takeover: when it claimed it, when it was READY, and what is stored."""
    name = "takeover-folio.txt"
    text = big_text(paragraphs, "zyxtakeoverqv")
    token = mesh.mint(TENANT)
    client = httpx.Client(base_url=mesh.base_url, timeout=600, headers={"authorization": f"Bearer {token}"})

    def upload() -> int:
        try:
            return client.post("/v1/documents:ingest", params={"filename": name}, content=text.encode(),
                               headers={"content-type": "text/plain"}).status_code
        except httpx.HTTPError:
            return 0  # cut: the replica it went to died

    pool = ThreadPoolExecutor(1)
    sent = pool.submit(upload)
    pids = {pid: child for child, pid in mesh.pids().items() if child.startswith("rag")}
    deadline = time.monotonic() + 300
    while True:
        document_id, holder, status = _holder(dsn, TENANT, name)
        if holder and status not in TERMINAL:
            break
        assert time.monotonic() < deadline and not sent.done(), "the upload was never seen in progress"
        time.sleep(0.1)
    victim = pids[int(holder.split(":")[1])]
    killed_at = time.monotonic()
    os.kill(mesh.pids()[victim], signal.SIGKILL)
    survivor = next(child for child in pids.values() if child != victim)
    survivor_pid = mesh.pids()[survivor]
    claimed_at = ready_at = None
    while time.monotonic() - killed_at < 600:
        _, holder, status = _holder(dsn, TENANT, name)
        if claimed_at is None and holder and holder.split(":")[1] == str(survivor_pid):
            claimed_at = time.monotonic()
        reply = client.get(f"/v1/documents/{document_id}")
        if reply.status_code == 200 and reply.json()["document"]["status"] in ("DOCUMENT_STATUS_READY",
                                                                                 "DOCUMENT_STATUS_FAILED"):
            ready_at = time.monotonic()
            final = reply.json()["document"]
            break
        time.sleep(0.25)
    client_status = sent.result()
    pool.shutdown()
    client.close()
    mesh.reap(victim)
    stored = _stored(dsn, TENANT, document_id)
    return {
        "lease_s": lease_s, "killed": victim, "survivor": survivor,
        "first_upload_status": client_status,
        "claimed_by_survivor_s": round(claimed_at - killed_at, 2) if claimed_at else None,
        "ready_s": round(ready_at - killed_at, 2) if ready_at else None,
        "final_status": final["status"] if ready_at else None,
        "chunk_count": int(final["chunk_count"]) if ready_at else None,
        **stored,
        "resumed_by": _logged(mesh, "rag", "resuming interrupted ingestion", document_id),
        "ingested_by": _logged(mesh, "rag", "document ingested", document_id),
        "documents_named": len([d for d in _documents(mesh) if d["filename"] == name]),
    }


def _documents(mesh) -> list[dict]:
    with mesh.http(timeout=60, headers={"x-tenant-id": TENANT}) as http:
        return http.get("/v1/documents", params={"page_size": 100}).json()["documents"]


def _handled(mesh, service: str, method: str) -> int:
    """Calls of ``method`` every replica of ``service`` has handled (their RPC metrics)."""
    total = 0
    for child in mesh.replicas_of(service):
        port = mesh.children[child].metrics_port
        text = httpx.get(f"http://{mesh.settings.local_host}:{port}/metrics", timeout=10).text
        for line in text.splitlines():
            if line.startswith("docuthinker_rpc_server_handled_total") and re.search(f'method="[^"]*/{method}"', line):
                total += int(float(line.rsplit(" ", 1)[1]))
    return total


def dead_letter(mesh, backoff_s: float) -> dict:
    """nlp down: a key-ideas task fails and is dead-lettered; nlp back (new processes, their call counters at
    zero): the letter is due after ``backoff_s`` and both orchestrators' retry loops race for it. Who ran it, and
    how often nlp was asked."""
    for replica in mesh.replicas_of("nlp"):
        mesh.stop_service(replica, timeout=5)
    with mesh.http(timeout=120, headers={"x-tenant-id": TENANT}) as http:
        reply = http.post("/v1/supervisor/process", json={
            "intent": "document.keyIdeas",
            "text": "Ada Lovelace wrote the first published computer program in 1843. She worked with Charles "
                    "Babbage on the Analytical Engine."})
    events = [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data: ")]
    letter_id = next((e["subtask"]["data"]["dead_letter_id"] for e in events
                      if "subtask" in e and "dead_letter_id" in e["subtask"].get("data", {})), None)
    assert letter_id, events
    enqueued_at = time.monotonic()
    for replica in mesh.replicas_of("nlp"):
        mesh.start_service(replica)  # fresh processes: every ExtractKeyIdeas they count is the retry's
    state = {}
    with mesh.http(timeout=60, role="admin", headers={"x-tenant-id": TENANT}) as http:
        while time.monotonic() - enqueued_at < backoff_s * 6 + 60:
            letters = http.get("/v1/dlq").json().get("messages", [])
            state = next((m for m in letters if m["id"] == letter_id), {})
            if state.get("state") == "replayed" or state.get("state") == "parked":
                break
            time.sleep(0.5)
    time.sleep(3 * 0.5 + 1)  # a few more retry passes of both loops: a second run would show now
    return {
        "letter": letter_id, "state": state.get("state"), "retry_count": int(state.get("retry_count", 0)),
        "replayed_by": _logged(mesh, "orchestrator", "dead letter replayed", letter_id),
        "nlp_calls_for_the_retry": _handled(mesh, "nlp", "ExtractKeyIdeas"),
        "retried_after_s": round(time.monotonic() - enqueued_at, 1), "backoff_s": backoff_s,
    }


# -- the run ---------------------------------------------------------------------------------
SINGLE_ENV = {"DOCUTHINKER_SHUTDOWN_GRACE_S": "1"}
LEASE_S = 8.0
DLQ_BACKOFF_S = 15.0


def replicated_env(dsn: str) -> dict[str, str]:
    return {"DOCUTHINKER_STORE_BACKEND": "postgres", "DOCUTHINKER_POSTGRES_DSN": dsn,
            "DOCUTHINKER_SHUTDOWN_GRACE_S": "2", "DOCUTHINKER_RAG_INGEST_LEASE_S": str(LEASE_S),
            "DOCUTHINKER_DLQ_BACKOFF_S": str(DLQ_BACKOFF_S), "DOCUTHINKER_DLQ_POLL_S": "0.5"}


_BASELINE = """
import importlib.util, json, pathlib, sys, tempfile
spec = importlib.util.spec_from_file_location("hostile_probes", sys.argv[1])
probes = importlib.util.module_from_spec(spec)
spec.loader.exec_module(probes)
from services.launcher.mesh import Mesh
with tempfile.TemporaryDirectory(prefix="hostile-baseline-", dir="/tmp") as work:
    root = pathlib.Path(work)
    with Mesh(data_dir=root / "data", log_dir=root / "logs", auto_ports=True, extra_env=probes.SINGLE_ENV) as mesh:
        report = {}
        for name in probes.BASELINE_PROBES:
            try:
                report[name] = getattr(probes, name)(mesh)
            except Exception as error:  # noqa: BLE001 - a probe the old mesh cannot take part in
                report[name] = {"error": f"{type(error).__name__}: {error}"}
        print("RESULT " + json.dumps(report), flush=True)
"""
BASELINE_PROBES = ("credential", "headers", "oversized", "strict_json", "held_uploads", "pause", "flood")
"""The probes run on the baseline revision's mesh too (the replica ones need its own pgserver run: not repeated)."""


def baseline(rev: str) -> dict:
    """``BASELINE_PROBES`` on the mesh of another revision of this repository (e.g. main before #38), exported to a
    temporary directory (the web app's built libraries copied in), in the same run as this one's."""
    import shutil
    import subprocess
    import sys
    import tempfile

    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", rev], capture_output=True, text=True,
                            check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="hostile-baseline-tree-", dir="/tmp") as work:
        tree = pathlib.Path(work)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        if (ROOT / "web" / "vendor").is_dir():
            shutil.copytree(ROOT / "web" / "vendor", tree / "web" / "vendor", dirs_exist_ok=True)
        env = {**os.environ, "PYTHONPATH": f"{tree}:{tree / 'gen'}"}
        done = subprocess.run([sys.executable, "-c", _BASELINE, str(pathlib.Path(__file__).resolve())], cwd=tree,
                              env=env, capture_output=True, text=True, timeout=900)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        return {"commit": commit, "error": (done.stdout + done.stderr)[-2000:]}
    return {"commit": commit, **json.loads(line[7:])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=None)
    parser.add_argument("--skip-replicas", action="store_true", help="only the single mesh's probes")
    parser.add_argument("--baseline-rev", default=None,
                        help="a git revision (e.g. main before #38) whose mesh gets the single-mesh probes too")
    args = parser.parse_args()
    import tempfile

    from services.launcher.memory_ceiling import MemoryCeiling
    from services.launcher.mesh import Mesh
    from services.storage.local_server import LocalPostgres

    today = dt.date.today().isoformat()
    out = args.out or RESULTS / f"hostile-mesh-{today}.json"
    report: dict = {"date": today, "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                                               "load_at_start": os.getloadavg()[0]},
                    "note": "loopback only; two shared cores (other agents ran meanwhile): timings are one run's"}
    if args.baseline_rev is not None:
        report["baseline"] = baseline(args.baseline_rev)
        print("baseline", json.dumps(report["baseline"])[:2000], flush=True)
    with tempfile.TemporaryDirectory(prefix="hostile-", dir="/tmp") as work:
        root = pathlib.Path(work)
        ceiling = MemoryCeiling(8192, prefix="hostile-bench", limits_mb={"gateway": 512})
        with Mesh(data_dir=root / "single" / "data", log_dir=root / "single" / "logs", auto_ports=True,
                  extra_env=SINGLE_ENV, memory_ceiling=ceiling) as mesh:
            for name, probe in (("credential", credential), ("envoy_cgroup", envoy_cgroup),
                                ("headers", headers), ("oversized", oversized), ("strict_json", strict_json),
                                ("held_uploads", held_uploads), ("pause", pause),
                                ("health_while_restarting", health_while_restarting), ("flood", flood)):
                started = time.monotonic()
                report[name] = probe(mesh)
                report[name]["probe_s"] = round(time.monotonic() - started, 1)
                print(name, json.dumps(report[name])[:400], flush=True)
        if not args.skip_replicas:
            with LocalPostgres(root / "postgres") as postgres:
                with Mesh(data_dir=root / "replicas" / "data", log_dir=root / "replicas" / "logs", auto_ports=True,
                          replicas={"rag": 2, "orchestrator": 2}, extra_env=replicated_env(postgres.dsn),
                          startup_timeout_s=400) as mesh:
                    report["takeover"] = takeover(mesh, postgres.dsn, LEASE_S)
                    print("takeover", json.dumps(report["takeover"]), flush=True)
                    report["dead_letter"] = dead_letter(mesh, DLQ_BACKOFF_S)
                    print("dead_letter", json.dumps(report["dead_letter"]), flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
