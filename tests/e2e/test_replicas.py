"""Stateless replicas on one PostgreSQL (#16): two rag, two nlp and two orchestrator processes behind Envoy.

A document uploaded through one rag replica is searched and answered through the other; one rag replica is
killed with SIGKILL in the middle of a bounded load of searches and uploads through the gateway, and no
idempotent call fails for the client (Envoy retries it on the other replica); the large upload it was ingesting
is taken over by the other replica once its lease runs out (nobody sends it again), and afterwards every upload
is READY exactly once, with the right chunk count. A replica starting while another ingests leaves that
ingestion alone. Costs, the budget and dead letters written by one orchestrator are seen by the other.

Real processes, real Envoy, a real PostgreSQL with pgvector (PyPI pgserver, through the pg backend's local server).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
import httpx
import pytest
from google.api import httpbody_pb2

from docuthinker.orchestrator.v1 import orchestrator_service_pb2 as opb
from docuthinker.orchestrator.v1 import orchestrator_service_pb2_grpc as opb_grpc
from docuthinker.rag.v1 import documents_pb2 as dpb
from docuthinker.rag.v1 import rag_service_pb2 as rpb
from docuthinker.rag.v1 import rag_service_pb2_grpc as rpb_grpc

pytestmark = pytest.mark.e2e

TENANT = "scale-e2e"
METADATA = (("x-tenant-id", TENANT),)
REPLICAS = {"rag": 2, "nlp": 2, "orchestrator": 2}
# One vendor chat costs (1200 x 0.15 + 300 x 0.6) / 1e6 = 0.00036 USD and is admitted when the spend so far plus
# its estimate (about 0.0006 USD) fits the budget: the first fits, the second (after 0.00036 spent) does not.
DAILY_BUDGET_USD = 0.0008
LOAD_SEARCHES = 40
LOAD_UPLOADS = 8
KILL_AFTER = 10  # completed load calls before the SIGKILL
LEASE_S = 8  # the ingestion lease (renewed every third of it): a dead replica's document is taken over after it


class Vendor:
    """An OpenAI Chat Completions endpoint answering every request, with token usage (so chats cost money)."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                payload = json.dumps({
                    "id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()), "model": "gpt-4o-mini",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "Hello from the vendor."}}],
                    "usage": {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500},
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def postgres_dsn(tmp_path_factory):
    from services.storage.local_server import LocalPostgres  # the pg backend's pgserver wrapper

    with LocalPostgres(tmp_path_factory.mktemp("postgres")) as server:
        yield server.dsn


@pytest.fixture(scope="module")
def replicated(tmp_path_factory, postgres_dsn):
    from services.launcher.mesh import Mesh

    vendor = Vendor()
    root = tmp_path_factory.mktemp("replicas")
    env = {
        "DOCUTHINKER_STORE_BACKEND": "postgres",
        "DOCUTHINKER_POSTGRES_DSN": postgres_dsn,
        "DOCUTHINKER_SHUTDOWN_GRACE_S": "2",
        "OPENAI_API_KEY": "test",
        "OPENAI_BASE_URL": vendor.url,
        "DOCUTHINKER_PROVIDER_ORDER": "local",
        "DOCUTHINKER_TASK_PROVIDERS": "chat=openai,local",
        "DOCUTHINKER_DAILY_BUDGET_USD": str(DAILY_BUDGET_USD),
        "DOCUTHINKER_DLQ_BACKOFF_S": "600",
        "DOCUTHINKER_RAG_INGEST_LEASE_S": str(LEASE_S),
    }
    with Mesh(data_dir=root / "data", log_dir=root / "logs", auto_ports=True, replicas=REPLICAS,
              extra_env=env, startup_timeout_s=400) as mesh:
        yield mesh
    vendor.server.shutdown()


class _AsTheMesh(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    """Adds the mesh credential (service ports serve only the mesh) and, for the shared-state checks, the
    admin role a gateway would set from an admin token."""

    def __init__(self, extra: tuple[tuple[str, str], ...]) -> None:
        self._extra = extra

    def _details(self, details):
        return details._replace(metadata=[*(details.metadata or ()), *self._extra])

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._details(details), request)


def _channel(mesh, replica: str) -> grpc.Channel:
    extra = (*mesh.grpc_metadata(), ("x-docuthinker-role", "admin"))
    return grpc.intercept_channel(grpc.insecure_channel(mesh.grpc_target(replica)), _AsTheMesh(extra))


def _rag(mesh, replica: str) -> rpb_grpc.RagServiceStub:
    return rpb_grpc.RagServiceStub(_channel(mesh, replica))


def _orchestrator(mesh, replica: str) -> opb_grpc.OrchestratorServiceStub:
    return opb_grpc.OrchestratorServiceStub(_channel(mesh, replica))


def _ingest(stub: rpb_grpc.RagServiceStub, filename: str, text: str) -> dpb.Document:
    request = rpb.IngestDocumentRequest(filename=filename,
                                        file=httpbody_pb2.HttpBody(content_type="text/plain", data=text.encode()))
    return stub.IngestDocument(request, metadata=METADATA, timeout=300).result.document


def test_a_document_uploaded_through_one_replica_is_searched_and_answered_through_the_other(replicated):
    assert replicated.replicas_of("rag") == ["rag", "rag-2"]
    first, second = _rag(replicated, "rag"), _rag(replicated, "rag-2")
    text = ("The Quillmoor lighthouse was automated in 1987. Its keeper, Maren Voss, moved to the harbour office "
            "in Saltgrave, where she kept the tide tables until 1995.")
    document = _ingest(first, "quillmoor.txt", text)
    assert document.status == dpb.DOCUMENT_STATUS_READY, document
    seen = second.GetDocument(rpb.GetDocumentRequest(document_id=document.document_id), metadata=METADATA, timeout=30)
    assert seen.document.content_sha256 == document.content_sha256
    hits = second.Search(rpb.SearchRequest(query="Quillmoor lighthouse automated", top_k=3), metadata=METADATA,
                         timeout=60).results
    assert hits and hits[0].provenance.document_id == document.document_id
    answer = second.Query(rpb.QueryRequest(question="When was the Quillmoor lighthouse automated?"),
                          metadata=METADATA, timeout=300).answer
    assert "1987" in answer.answer, answer
    assert {c.document_id for c in answer.citations} == {document.document_id}


def _upload_texts() -> dict[str, str]:
    return {f"ledger-{n}.txt": (f"Ledger {n} of the Orrin canal company. Marker word zyx{n}qv. The toll of lock {n} "
                                f"was {n + 3} pence in {1800 + n}, collected by the keeper of the {n}th gate.")
            for n in range(LOAD_UPLOADS)}


def _big_text(paragraphs: int = 1500, subject: str = "Orrin canal survey", marker: str = "zyxbigqv") -> str:
    """Large enough (hundreds of chunks) that its ingestion is still running when the replica is killed."""
    return "\n\n".join(f"Folio {n} of the {subject}. The surveyor measured the depth of reach {n} at "
                         f"{n % 9 + 1} feet and noted {n % 5} barges moored at the wharf of mile {n}."
                         for n in range(paragraphs)) + f"\n\nMarker word {marker}."


def _expected_chunks(text: str) -> int:
    """The chunks the pipeline makes of this text with the replicas' settings (the defaults), by its own code."""
    from services.rag.ingest.chunking import chunk_sections
    from services.rag.ingest.formats import FileType
    from services.rag.ingest.parsers import parse
    from services.rag.runtime import pipeline_config
    from services.rag.settings import RagSettings

    config = pipeline_config(RagSettings(), 25 * 1024 * 1024)
    return len(chunk_sections(parse(text.encode(), FileType.TEXT, config.limits).sections, config.chunker))


def _stored(postgres_dsn: str, document_id: str) -> dict[str, object]:
    """What the shared database holds of one document: chunk rows, vectors, and who holds its lease."""
    import psycopg

    with psycopg.connect(postgres_dsn) as conn:
        chunks = conn.execute("SELECT count(*) FROM rag_chunks WHERE tenant=%s AND document_id=%s",
                              (TENANT, document_id)).fetchone()[0]
        vectors = conn.execute("SELECT count(*) FROM rag_vectors WHERE tenant=%s AND document_id=%s",
                               (TENANT, document_id)).fetchone()[0]
        holder = conn.execute("SELECT claimed_by FROM rag_documents WHERE tenant=%s AND document_id=%s",
                              (TENANT, document_id)).fetchone()[0]
    return {"chunks": chunks, "vectors": vectors, "holder": holder}


def _seen_in_progress(stub: rpb_grpc.RagServiceStub, filename: str, upload) -> str:
    """The id of ``filename`` once ``stub`` lists it, while ``upload`` (its ingestion's future) is still running."""
    deadline = time.monotonic() + 300
    while not (started := [d for d in stub.ListDocuments(rpb.ListDocumentsRequest(page_size=100), metadata=METADATA,
                                                         timeout=30).documents if d.filename == filename]):
        assert time.monotonic() < deadline and not upload.done(), "the large upload never showed up in progress"
        time.sleep(0.1)
    return started[0].document_id


def _logged(mesh, replica: str, *needles: str) -> int:
    """Lines of a replica's log that contain every needle."""
    text = (mesh.log_dir / f"{replica}.log").read_text(errors="replace")
    return sum(1 for line in text.splitlines() if all(n in line for n in needles))


def test_a_rag_replica_killed_under_load_costs_no_idempotent_call_and_no_upload(replicated, postgres_dsn):
    gateway = replicated.http(timeout=300, headers={"x-tenant-id": TENANT})
    uploads = {**_upload_texts(), "folio.txt": _big_text()}
    survivor = _rag(replicated, "rag")
    # An upload straight to the replica that will die, caught mid-ingestion (seen in progress by the other one).
    in_flight = ThreadPoolExecutor(max_workers=1).submit(_ingest, _rag(replicated, "rag-2"), "folio.txt",
                                                         uploads["folio.txt"])
    folio_id = _seen_in_progress(survivor, "folio.txt", in_flight)
    done = Counter()
    failures: dict[str, list[str]] = {"search": [], "upload_first_try": []}
    lock = threading.Lock()
    killed: dict[str, int] = {}

    def completed() -> None:
        with lock:
            done["calls"] += 1
            if done["calls"] == KILL_AFTER and not killed:
                status = survivor.GetDocument(rpb.GetDocumentRequest(document_id=folio_id), metadata=METADATA,
                                              timeout=30).document.status
                os.kill(replicated.pids()["rag-2"], signal.SIGKILL)
                killed["folio_status"] = status

    def search(n: int) -> None:
        reply = gateway.post("/v1/search", json={"query": f"toll of lock {n % LOAD_UPLOADS}", "top_k": 3})
        if reply.status_code != 200:
            failures["search"].append(f"{reply.status_code} {reply.text[:200]}")
        completed()

    def upload(name: str) -> httpx.Response:
        return gateway.post("/v1/documents:ingest", params={"filename": name}, content=uploads[name].encode(),
                            headers={"content-type": "text/plain"})

    def first_upload(name: str) -> None:
        reply = upload(name)
        if reply.status_code != 200:
            failures["upload_first_try"].append(name)
        completed()

    calls = [lambda n=n: search(n) for n in range(LOAD_SEARCHES)]
    for i, name in enumerate(_upload_texts()):  # uploads spread through the searches
        calls.insert(i * (LOAD_SEARCHES // LOAD_UPLOADS) + 1, lambda name=name: first_upload(name))
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda call: call(), calls))
    assert killed, "the load finished before the kill"
    assert killed["folio_status"] not in (dpb.DOCUMENT_STATUS_READY, dpb.DOCUMENT_STATUS_FAILED), killed
    assert replicated.reap("rag-2") == -signal.SIGKILL
    # Searches are idempotent: Envoy retried each that met the dead replica on the other one.
    retries = _retry_stats(replicated)
    assert failures["search"] == [], (failures["search"], retries)
    # An upload is not idempotent for the transport: the one on the killed replica failed for its client, as did
    # any the gateway had sent there. The large one is not sent again: once the dead replica's lease on it runs out,
    # the survivor's sweep takes it over and finishes it from the stored bytes. The others' clients send the same
    # bytes again, which is safe (content hash: the same document id), and nothing is indexed twice.
    with pytest.raises(grpc.RpcError) as lost:
        in_flight.result()
    assert lost.value.code() == grpc.StatusCode.UNAVAILABLE
    taken_over = _wait_settled(gateway, folio_id)
    assert taken_over["status"] == "DOCUMENT_STATUS_READY", taken_over
    assert _logged(replicated, "rag", "resuming interrupted ingestion", folio_id) == 1
    for name in failures["upload_first_try"]:
        retry = upload(name)
        assert retry.status_code == 200, retry.text
    listed = gateway.get("/v1/documents", params={"page_size": 100}).json()["documents"]
    by_name = Counter(d["filename"] for d in listed if d["filename"] in uploads)
    assert by_name == Counter(dict.fromkeys(uploads, 1)), by_name
    for document in (d for d in listed if d["filename"] in uploads):
        current = _wait_settled(gateway, document["document_id"])
        assert current["status"] == "DOCUMENT_STATUS_READY", current
        marker = uploads[current["filename"]].split("Marker word ")[1].split(".")[0]
        hits = gateway.post("/v1/search", json={"query": marker, "top_k": 10}).json()["results"]
        owners = {h["provenance"]["document_id"] for h in hits if marker in h["text"]}
        assert owners == {current["document_id"]}, (marker, owners)
    chunks = gateway.get(f"/v1/documents/{folio_id}").json()["document"]["chunk_count"]
    assert chunks == _expected_chunks(uploads["folio.txt"]) > 100
    assert _stored(postgres_dsn, folio_id) == {"chunks": chunks, "vectors": chunks, "holder": None}
    print(f"\nreplica load: {LOAD_SEARCHES} searches, 0 failed; {LOAD_UPLOADS} uploads, "
          f"{len(failures['upload_first_try'])} retried by the client after the kill; the upload killed mid-ingestion"
          f" (status {dpb.DocumentStatus.Name(killed['folio_status'])}) taken over by the survivor and READY once "
          f"({chunks} chunks); Envoy's rag retries: {retries}")
    replicated.start_service("rag-2")


def test_a_starting_replica_leaves_an_ingestion_a_live_replica_holds_alone(replicated, postgres_dsn):
    replicated.stop_service("rag-2")
    text = _big_text(6000, "Vellmar dyke register", "zyxdykeqv")
    live = replicated.pids()["rag"]
    ingesting = ThreadPoolExecutor(max_workers=1).submit(_ingest, _rag(replicated, "rag"), "dyke.txt", text)
    survivor = _rag(replicated, "rag")
    document_id = _seen_in_progress(survivor, "dyke.txt", ingesting)
    replicated.start_service("rag-2")  # its first sweep runs as it starts; more follow every LEASE_S / 2
    status = survivor.GetDocument(rpb.GetDocumentRequest(document_id=document_id), metadata=METADATA, timeout=30)
    assert status.document.status not in (dpb.DOCUMENT_STATUS_READY, dpb.DOCUMENT_STATUS_FAILED), (
        "the ingestion finished before the other replica started: the test proves nothing (use a larger document)")
    holders = set()
    while not ingesting.done():
        holders.add(_stored(postgres_dsn, document_id)["holder"])
        time.sleep(0.5)
    document = ingesting.result()
    assert document.status == dpb.DOCUMENT_STATUS_READY and document.chunk_count == _expected_chunks(text)
    assert {h.split(":")[1] for h in holders if h} == {str(live)}, holders  # only the live replica ever held it
    assert _logged(replicated, "rag-2", "resuming interrupted ingestion", document_id) == 0
    assert _logged(replicated, "rag", "document ingested", document_id) == 1
    assert _stored(postgres_dsn, document_id) == {"chunks": document.chunk_count, "vectors": document.chunk_count,
                                                  "holder": None}


def _retry_stats(mesh) -> dict[str, int]:
    """Envoy's retry counters of the rag cluster: why a retry was made, dropped or not attempted."""
    text = mesh.admin.get("/stats", params={"filter": r"^cluster\.rag\.upstream_rq_retry"}, timeout=10).text
    return {name.removeprefix("cluster.rag."): int(value) for name, value in
            (line.split(": ") for line in text.splitlines() if ": " in line) if value.strip().isdigit()}


def _wait_settled(gateway: httpx.Client, document_id: str) -> dict:
    """An ingestion the dead replica had claimed is finished by the other one (its lease runs out first)."""
    deadline = time.monotonic() + 600
    while True:
        current = gateway.get(f"/v1/documents/{document_id}").json()["document"]
        if current["status"] in ("DOCUMENT_STATUS_READY", "DOCUMENT_STATUS_FAILED") or time.monotonic() > deadline:
            return current
        time.sleep(1)


def _process(stub: opb_grpc.OrchestratorServiceStub, **fields) -> list[opb.ProcessResponse]:
    return list(stub.Process(opb.ProcessRequest(**fields), metadata=METADATA, timeout=300))


def test_costs_budget_and_dead_letters_are_shared_by_the_orchestrators(replicated):
    first, second = _orchestrator(replicated, "orchestrator"), _orchestrator(replicated, "orchestrator-2")
    events = _process(first, intent="chat.general", message="Say hello in three words.")
    subtask = next(e.subtask for e in events if e.HasField("subtask"))
    assert subtask.provider == "openai", subtask
    costs = second.GetCosts(opb.GetCostsRequest(period="today"), metadata=METADATA, timeout=30)
    assert costs.daily_spent == pytest.approx((1200 * 0.15 + 300 * 0.6) / 1e6)
    assert costs.by_provider["openai"].requests == 1
    # The spend recorded by the first orchestrator exhausts the budget the second one enforces.
    with pytest.raises(grpc.RpcError) as refused:
        _process(second, intent="chat.general", message="hello again")
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "BUDGET_EXCEEDED" in str(refused.value.trailing_metadata()) + refused.value.details()

    for replica in replicated.replicas_of("nlp"):
        replicated.stop_service(replica)
    try:
        events = _process(second, intent="document.keyIdeas",
                          text="Ada Lovelace wrote the first published computer program in 1843. She worked with "
                               "Charles Babbage on the Analytical Engine.")
        failed = next(e.subtask for e in events if e.HasField("subtask"))
        assert failed.state == opb.TASK_STATE_FAILED, failed
        letter_id = failed.data["dead_letter_id"]
        letters = first.ListDeadLetters(opb.ListDeadLettersRequest(), metadata=METADATA, timeout=30).messages
        assert letter_id in {m.id for m in letters}
    finally:
        for replica in replicated.replicas_of("nlp"):
            replicated.start_service(replica)
