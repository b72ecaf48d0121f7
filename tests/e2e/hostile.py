"""Hostile drills against a running mesh, through Envoy (loopback only), each returning its counts.

Shared by ``test_hostile.py`` (which asserts on them) and ``bench/hostile_ingest.py`` (which writes them to
``bench/results/hostile-ingest-<date>.json``):

- ``pdf_bombs``: four PDF bombs (one page inflating to 200 MB of text operators, ~500 KB each) uploaded at
  once by one tenant while a neighbour tenant uploads documents and asks questions; rag's resident memory
  (alone, and with its parser workers) sampled before, during and for 30 s after;
- ``list_builders``: every list-building Cypher query of issue #38 and its variations sent to the graph, with
  ordinary queries beside them; the graph process's resident memory sampled throughout;
- ``small_items``: a multipart form body, a DOCX with an entity reference, the data directory's modes, and a
  client that cuts its stream (the service's log must say so).
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import stat
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor

import httpx
import psutil

from tests.graph.test_query_sizes import LIST_BUILDERS, ORDINARY
from tests.rag.hostile_pdfs import plain_pdf, text_bomb

MB = 2**20
BOMB_TENANT = {"x-tenant-id": "hostile-mallory"}
NEIGHBOUR = {"x-tenant-id": "hostile-neighbour"}
GRAPH_TENANT = {"x-tenant-id": "hostile-graph"}


def reason(reply: httpx.Response) -> str:
    try:
        details = reply.json().get("details", [])
    except ValueError:
        return ""
    return next((d.get("reason", "") for d in details if d.get("@type", "").endswith("ErrorInfo")), "")


class Sampler:
    """Resident memory of a process (and optionally its children) every 0.1 s, in a thread."""

    def __init__(self, pid: int, with_children: bool = False) -> None:
        self.process = psutil.Process(pid)
        self.with_children = with_children
        self.samples: list[tuple[float, float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> tuple[float, float]:
        own = self.process.memory_info().rss
        total = own
        if self.with_children:
            for child in self.process.children(recursive=True):
                try:
                    total += child.memory_info().rss
                except psutil.Error:
                    pass
        return own / MB, total / MB

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                own, total = self.rss()
            except psutil.Error:
                return
            self.samples.append((time.monotonic(), own, total))
            self._stop.wait(0.1)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def peak(self, column: int = 1) -> float:
        return max((s[column] for s in self.samples), default=0.0)


def pdf_bombs(mesh, client: httpx.Client, bombs: int = 4, neighbour_rounds: int = 3) -> dict:
    rag = mesh.pids()["rag"]
    bomb = text_bomb(200)
    sampler = Sampler(rag, with_children=True)
    before_own, before_total = sampler.rss()
    statuses: list[tuple[int, str]] = []
    neighbour = {"uploads_ok": 0, "uploads_failed": 0, "questions_ok": 0, "questions_failed": 0}

    def send_bomb(n: int) -> None:
        reply = client.post("/v1/documents:ingest", params={"filename": f"bomb-{n}.pdf"}, content=bomb,
                            headers={**BOMB_TENANT, "content-type": "application/pdf"})
        statuses.append((reply.status_code, reason(reply)))

    def neighbour_work(n: int) -> None:
        text = (f"Neighbour memo {n}: the pumping station at Lock {n} was inspected on day {n + 3}; "
                f"its intake grille was cleaned and {n + 2} seals were replaced.")
        reply = client.post("/v1/documents:ingest", params={"filename": f"memo-{n}.pdf"}, content=plain_pdf(text),
                            headers={**NEIGHBOUR, "content-type": "application/pdf"})
        neighbour["uploads_ok" if reply.status_code == 200 else "uploads_failed"] += 1
        answer = client.post("/v1/query", json={"question": f"What was replaced at Lock {n}?"}, headers=NEIGHBOUR)
        neighbour["questions_ok" if answer.status_code == 200 else "questions_failed"] += 1

    started = time.monotonic()
    with sampler, ThreadPoolExecutor(max_workers=bombs + 1) as pool:
        bomb_futures = [pool.submit(send_bomb, n) for n in range(bombs)]
        neighbour_future = pool.submit(lambda: [neighbour_work(n) for n in range(neighbour_rounds)])
        for future in [*bomb_futures, neighbour_future]:
            future.result()
        refused_at = time.monotonic()
        # Back under 1.5 GB within 30 s (it should never have left it: the workers take the hit).
        back_after = None
        while time.monotonic() - refused_at < 30:
            own, total = sampler.rss()
            if own < 1536 and back_after is None:
                back_after = time.monotonic() - refused_at
            if time.monotonic() - refused_at > 2 and back_after is not None:
                break
            time.sleep(0.2)
        after_own, after_total = sampler.rss()
    listed = client.get("/v1/documents", headers=BOMB_TENANT).json().get("documents", [])
    return {
        "bombs": bombs,
        "bomb_bytes": len(bomb),
        "bomb_inflated_mb": 200,
        "refused_400": sum(code == 400 for code, _ in statuses),
        "reasons": sorted({r for _, r in statuses}),
        "other_statuses": sorted({code for code, _ in statuses if code != 400}),
        "bomb_documents_stored": len(listed),
        "seconds_to_refuse_all": round(refused_at - started, 2),
        "rag_rss_mb": {"before": round(before_own), "peak": round(sampler.peak(1)), "after": round(after_own)},
        "rag_with_parser_workers_rss_mb": {"before": round(before_total), "peak": round(sampler.peak(2)),
                                           "after": round(after_total)},
        "rag_under_1_5_gb_after_s": None if back_after is None else round(back_after, 2),
        "neighbour": neighbour,
    }


def list_builders(mesh, client: httpx.Client) -> dict:
    graph = mesh.pids()["graph"]
    refused, allowed, failures = 0, 0, []
    with Sampler(graph) as sampler:
        before = sampler.rss()[0]
        for cypher in LIST_BUILDERS:
            reply = client.post("/v1/graph/query", json={"cypher": cypher, "params": {"n": 10**7}},
                                headers=GRAPH_TENANT)
            if reply.status_code == 400 and reason(reply) == "QUERY_TOO_LARGE":
                refused += 1
            else:
                failures.append({"cypher": cypher, "status": reply.status_code, "reason": reason(reply)})
        for cypher in ORDINARY:
            reply = client.post("/v1/graph/query", json={"cypher": cypher, "params": {"n": 10}},
                                headers=GRAPH_TENANT)
            if reply.status_code == 200:
                allowed += 1
            else:
                failures.append({"cypher": cypher, "status": reply.status_code, "reason": reason(reply)})
        after = sampler.rss()[0]
    return {
        "list_building_queries": len(LIST_BUILDERS),
        "refused_400": refused,
        "ordinary_queries": len(ORDINARY),
        "allowed_200": allowed,
        "unexpected": failures,
        "graph_rss_mb": {"before": round(before), "peak": round(sampler.peak(1)), "after": round(after)},
    }


def _docx_with_entity() -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph("MARKER")
    blank = io.BytesIO()
    document.save(blank)
    source = zipfile.ZipFile(blank)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "word/document.xml":
                xml = data.decode().replace("?>", '?>\n<!DOCTYPE w:document [<!ENTITY firm "Norrland Hydro">]>', 1)
                data = xml.replace("MARKER", "The dam is run by &firm; under a licence renewed in 2031").encode()
            target.writestr(item, data)
    return out.getvalue()


def small_items(mesh, client: httpx.Client) -> dict:
    counts: dict = {}
    form = (b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n"
            b"Content-Type: text/plain\r\n\r\nhello\r\n--XyZ--\r\n")
    reply = client.post("/v1/documents:ingest", params={"filename": "a.txt"}, content=form,
                        headers={**NEIGHBOUR, "content-type": "multipart/form-data; boundary=XyZ"})
    counts["multipart"] = {"status": reply.status_code, "reason": reason(reply)}

    reply = client.post("/v1/documents:ingest", params={"filename": "licence.docx"}, content=_docx_with_entity(),
                        headers={**NEIGHBOUR, "content-type": "application/octet-stream"})
    kept = False
    if reply.status_code == 200:
        document = reply.json()["result"]["document"]
        text = client.get(f"/v1/documents/{document['document_id']}/text", headers=NEIGHBOUR)
        kept = text.status_code == 200 and "licence renewed in 2031" in text.text
    counts["docx_entity"] = {"status": reply.status_code, "text_after_entity_kept": kept}

    loose = []
    for directory, names, files in os.walk(mesh.data_dir):
        for name in [*names, *files]:
            path = pathlib.Path(directory) / name
            mode = path.lstat().st_mode
            if (stat.S_ISREG(mode) or stat.S_ISDIR(mode)) and mode & 0o077:
                loose.append(str(path.relative_to(mesh.data_dir)))
    root_mode = stat.S_IMODE(pathlib.Path(mesh.data_dir).stat().st_mode)
    counts["data_modes"] = {"entries_readable_by_others": len(loose), "examples": loose[:5],
                            "data_dir_mode": oct(root_mode)}

    log = pathlib.Path(mesh.log_dir) / "rag.log"
    seen_before = log.read_text(errors="replace").count("rpc cancelled by the client") if log.exists() else 0
    long_text = ("A long report paragraph about turbines, seals and intake grilles. " * 40 + "\n\n") * 60
    with client.stream("POST", "/v1/documents", params={"filename": "long-report.txt"},
                       content=long_text.encode(), headers={**NEIGHBOUR, "content-type": "text/plain"}) as stream:
        for _ in stream.iter_lines():
            break  # the client goes away after the first event
    deadline = time.monotonic() + 20
    seen = seen_before
    while time.monotonic() < deadline and seen == seen_before:
        time.sleep(0.5)
        seen = log.read_text(errors="replace").count("rpc cancelled by the client") if log.exists() else 0
    counts["cancelled_stream_logged"] = seen > seen_before
    return counts


def run_all(mesh) -> dict:
    counts: dict = {}
    with mesh.http(timeout=180) as client:
        for name, drill in (("pdf_bombs", pdf_bombs), ("list_builders", list_builders), ("small_items", small_items)):
            counts[name] = drill(mesh, client)
            print(name, dump(counts[name]), flush=True)
    return counts


def dump(counts: dict) -> str:
    return json.dumps(counts, indent=2)
