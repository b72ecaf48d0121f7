"""Observability of the real mesh: a real Prometheus scrapes every service and Envoy, and an OTLP receiver
in this test collects the traces that Envoy starts and every service continues."""

from __future__ import annotations

import json
import os
import time

import pytest

from services.launcher.mesh import Mesh
from services.launcher.prometheus import LocalPrometheus, binary
from services.runtime.config import SERVICE_NAMES
from tests.observability.otlp_receiver import OtlpReceiver, Span

pytestmark = pytest.mark.e2e

SERVER, CLIENT, CONSUMER = 2, 3, 5  # OTLP SpanKind values
UPLOAD_TEXT = (
    "Ada Lovelace wrote the first published algorithm for Charles Babbage's Analytical Engine in London.\n\n"
    "The engine was never completed, but her notes describe how it could compute Bernoulli numbers.\n"
)


@pytest.fixture(scope="module")
def receiver():
    running = OtlpReceiver().start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def traced_mesh(receiver, tmp_path_factory):
    root = tmp_path_factory.mktemp("obs-mesh")
    extra = {"DOCUTHINKER_SHUTDOWN_GRACE_S": "2", "DOCUTHINKER_RAG_GRAPH_POLL_INTERVAL_S": "0.5",
             "DOCUTHINKER_RAG_GRAPH_BACKOFF_INITIAL_S": "0.5", "DOCUTHINKER_RAG_GRAPH_BACKOFF_MAX_S": "2",
             "DOCUTHINKER_OTLP_ENDPOINT": receiver.endpoint, "DOCUTHINKER_TRACE_SAMPLE_RATIO": "1"}
    with Mesh(data_dir=root / "data", log_dir=root / "logs", auto_ports=True, extra_env=extra) as running:
        yield running


@pytest.fixture(scope="module")
def client(traced_mesh):
    with traced_mesh.http(timeout=120) as http:
        yield http


@pytest.fixture(scope="module")
def prometheus(traced_mesh, tmp_path_factory):
    if binary() is None:
        pytest.fail("prometheus is not installed: run tools/system_packages.sh (Debian package `prometheus`)")
    with LocalPrometheus(traced_mesh, tmp_path_factory.mktemp("prometheus"), interval_s=1) as running:
        yield running


def traceparent() -> tuple[str, str, str]:
    """A caller's W3C trace context: (trace id, span id, header value), sampled."""
    trace_id, span_id = os.urandom(16).hex(), os.urandom(8).hex()
    return trace_id, span_id, f"00-{trace_id}-{span_id}-01"


def one(spans: list[Span], **match) -> Span:
    found = [s for s in spans if all(getattr(s, k) == v for k, v in match.items())]
    assert len(found) == 1, (match, [(s.service, s.name, s.kind) for s in spans])
    return found[0]


def sse_events(body: str) -> list[dict]:
    return [json.loads(line[len("data: "):]) for line in body.splitlines() if line.startswith("data: ")]


def logged_lines(path, trace_id: str, matches=lambda entry: True, timeout_s: float = 30.0) -> list[dict]:
    """The JSON lines of a process's log that carry ``trace_id`` (and match), once at least one is there."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = [entry for entry in (json.loads(line) for line in path.read_text().splitlines()
                                     if line.startswith("{") and trace_id in line) if matches(entry)]
        if found:
            return found
        assert time.monotonic() < deadline, f"no line of {path.name} carries trace {trace_id} after {timeout_s}s"
        time.sleep(0.2)


# -- metrics ------------------------------------------------------------------------------------
def scalar(prometheus: LocalPrometheus, promql: str) -> float:
    result = prometheus.query(f"sum({promql}) or vector(0)")
    return float(result[0]["value"][1]) if result else 0.0


def scraped_after(prometheus: LocalPrometheus, moment: float, timeout_s: float = 30.0) -> None:
    """Returns once Prometheus has scraped every target after ``moment`` (its own scrape timestamps, on this
    host's clock): scrapes, not seconds, are what a value waits for, and a loaded machine delays them."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = prometheus.query("min(timestamp(up))")
        if result and float(result[0]["value"][1]) > moment:
            return
        assert time.monotonic() < deadline, f"no scrape of every target within {timeout_s}s"
        time.sleep(0.2)


def settle(prometheus: LocalPrometheus, promql: str, expected: float, timeout_s: float = 20.0) -> float:
    """The query's value once it reaches ``expected`` (or the deadline) and two more scrapes have passed: a
    count above the expected one would show by then."""
    deadline = time.monotonic() + timeout_s
    value = scalar(prometheus, promql)
    while value < expected and time.monotonic() < deadline:
        time.sleep(0.5)
        value = scalar(prometheus, promql)
    for _ in range(2):
        scraped_after(prometheus, time.time())
    return scalar(prometheus, promql)


def test_prometheus_scrapes_every_service_and_envoy_and_counts_a_workload(prometheus, client):
    jobs = {*SERVICE_NAMES, "envoy"}
    deadline = time.monotonic() + 30
    while True:
        health = {t["labels"]["job"]: t["health"] for t in prometheus.targets()}
        if all(health.get(job) == "up" for job in jobs) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert {job: health.get(job) for job in jobs} == dict.fromkeys(jobs, "up")
    for job in jobs:
        assert scalar(prometheus, f'up{{job="{job}"}}') == 1

    ok = 'docuthinker_rpc_server_handled_total{service="rag",method="docuthinker.rag.v1.RagService/ListDocuments",code="OK"}'
    missing = ('docuthinker_rpc_server_handled_total{service="rag",'
               'method="docuthinker.rag.v1.RagService/GetDocument",code="NOT_FOUND"}')
    envoy_4xx = 'envoy_http_downstream_rq_xx{envoy_http_conn_manager_prefix="ingress",envoy_response_code_class="4"}'
    scraped_after(prometheus, time.time())  # the baselines below are values scraped after the targets came up
    before = {q: scalar(prometheus, q) for q in (ok, missing, envoy_4xx)}

    for _ in range(5):
        assert client.get("/v1/documents").status_code == 200
    for n in range(3):
        assert client.get(f"/v1/documents/no-such-document-{n}").status_code == 404

    assert settle(prometheus, ok, before[ok] + 5) - before[ok] == 5
    assert settle(prometheus, missing, before[missing] + 3) - before[missing] == 3
    assert settle(prometheus, envoy_4xx, before[envoy_4xx] + 3) - before[envoy_4xx] == 3
    # Latency histograms and the client side of the orchestrator's health fan-out are there too.
    assert scalar(prometheus, 'docuthinker_rpc_server_duration_seconds_count{service="rag"}') >= 8
    assert client.get("/v1/health").status_code == 200
    assert settle(prometheus, 'docuthinker_rpc_client_handled_total{service="orchestrator"}', 1) >= 1
    for name in SERVICE_NAMES:
        assert scalar(prometheus, f'docuthinker_service_info{{service="{name}"}}') == 1
    assert scalar(prometheus, 'docuthinker_circuit_breaker_state') == 0  # all closed
    assert prometheus.query('docuthinker_graph_outbox{quantity="depth"}')


# -- traces -------------------------------------------------------------------------------------
def test_an_upload_is_one_trace_from_envoy_through_rag_nlp_and_graph(client, receiver, traced_mesh):
    trace_id, caller_span, header = traceparent()
    reply = client.post("/v1/documents", params={"filename": "lovelace.txt"}, content=UPLOAD_TEXT.encode(),
                        headers={"Content-Type": "text/plain", "traceparent": header})
    assert reply.status_code == 200, reply.text
    assert "done" in sse_events(reply.text)[-1], reply.text

    def complete(spans: list[Span]) -> bool:
        """Every span of the trace is in: the sync span, each of its calls answered by a server span, and
        every span's parent (spans reach the receiver in batches, per process, in no set order)."""
        mine = [s for s in spans if s.trace_id == trace_id]
        ids = {s.span_id for s in mine}
        sync = [s for s in mine if s.name == "graph_sync.upsert"]
        calls = [s for s in mine if s.kind == CLIENT and sync and s.parent_span_id == sync[0].span_id]
        answered = {s.parent_span_id for s in mine if s.kind == SERVER}
        return ({s.service for s in mine} >= {"gateway", "rag", "nlp", "graph"} and len(sync) == 1
                and {c.name.split("/")[0] for c in calls} >= {"docuthinker.nlp.v1.NlpService",
                                                              "docuthinker.graph.v1.GraphService"}
                and all(c.span_id in answered for c in calls)
                and all(s.parent_span_id in ids for s in mine if s.parent_span_id != caller_span))

    receiver.wait_for(complete, timeout_s=60)
    spans = receiver.trace(trace_id)
    by_id = {s.span_id: s for s in spans}

    edge = one(spans, service="gateway", parent_span_id=caller_span)
    # REST uploads are served by the client-streaming twin the gateway streams the body to (UploadDocumentBody).
    upload = one(spans, service="rag", name="docuthinker.rag.v1.RagService/UploadDocumentBody", kind=SERVER)
    assert upload.parent_span_id == edge.span_id
    for stage in ("ingest.parse", "ingest.chunk", "ingest.embed", "ingest.index"):
        assert one(spans, service="rag", name=stage).parent_span_id == upload.span_id, stage
    sync = one(spans, service="rag", name="graph_sync.upsert")
    assert sync.kind == CONSUMER and sync.parent_span_id == upload.span_id
    assert (trace_id, upload.span_id) in sync.links
    # The worker's calls: rag (client) -> nlp (server) and rag (client) -> graph (server), under the sync span.
    for service in ("nlp", "graph"):
        servers = [s for s in spans if s.service == service and s.kind == SERVER]
        assert servers, service
        for server in servers:
            caller = by_id[server.parent_span_id]
            assert caller.service == "rag" and caller.kind == CLIENT and caller.name == server.name
            assert caller.parent_span_id == sync.span_id
    # Every span but Envoy's has its parent in this trace: nothing dangles.
    assert all(s.parent_span_id in by_id for s in spans if s is not edge)


def test_a_query_is_one_trace_with_retrieve_and_answer_spans(client, receiver):
    client.post("/v1/documents", params={"filename": "engine.txt"}, content=UPLOAD_TEXT.encode(),
                headers={"Content-Type": "text/plain"})
    trace_id, caller_span, header = traceparent()
    reply = client.post("/v1/query", json={"question": "Who wrote the first published algorithm?"},
                        headers={"traceparent": header})
    assert reply.status_code == 200, reply.text
    receiver.wait_for(lambda spans: {"rag.answer", "docuthinker.rag.v1.RagService/Query"}
                      <= {s.name for s in spans if s.trace_id == trace_id}
                      and any(s.service == "gateway" and s.trace_id == trace_id for s in spans))
    spans = receiver.trace(trace_id)
    edge = one(spans, service="gateway", parent_span_id=caller_span)
    query = one(spans, service="rag", name="docuthinker.rag.v1.RagService/Query", kind=SERVER)
    assert query.parent_span_id == edge.span_id
    answer = one(spans, service="rag", name="rag.answer")
    assert answer.parent_span_id == query.span_id
    retrieves = [s for s in spans if s.name == "rag.retrieve"]
    assert retrieves and all(s.parent_span_id == query.span_id for s in retrieves)


def test_a_supervisor_call_traces_orchestrator_rag_and_nlp(client, receiver):
    trace_id, caller_span, header = traceparent()
    reply = client.post("/v1/supervisor/process", json={"intent": "document.summarize", "text": UPLOAD_TEXT},
                        headers={"traceparent": header})
    assert reply.status_code == 200, reply.text
    def complete(spans: list[Span]) -> bool:
        """The orchestrator's server span (it ends last) and the parent of every span are in."""
        mine = [s for s in spans if s.trace_id == trace_id]
        ids = {s.span_id for s in mine}
        return ({"gateway", "orchestrator", "nlp"} <= {s.service for s in mine}
                and any(s.service == "orchestrator" and s.kind == SERVER for s in mine)
                and all(s.parent_span_id in ids for s in mine if s.parent_span_id != caller_span))

    receiver.wait_for(complete)
    spans = receiver.trace(trace_id)
    by_id = {s.span_id: s for s in spans}
    edge = one(spans, service="gateway", parent_span_id=caller_span)
    process = one(spans, service="orchestrator", kind=SERVER)
    assert process.parent_span_id == edge.span_id
    nlp_calls = [s for s in spans if s.service == "nlp" and s.kind == SERVER]
    assert nlp_calls
    for server in nlp_calls:
        caller = by_id[server.parent_span_id]
        assert caller.service == "orchestrator" and caller.kind == CLIENT


def test_an_error_response_carries_a_trace_id_that_finds_its_trace(client, receiver, traced_mesh):
    reply = client.get("/v1/documents/no-such-document")
    assert reply.status_code == 404, reply.text
    info = [d for d in reply.json()["details"] if d["@type"].endswith("google.rpc.ErrorInfo")][0]
    trace_id = info["metadata"]["trace_id"]
    assert len(trace_id) == 32 and int(trace_id, 16)
    receiver.wait_for(lambda spans: {"gateway", "rag"} <= {s.service for s in spans if s.trace_id == trace_id})
    spans = receiver.trace(trace_id)
    edge = one(spans, service="gateway")
    failed = one(spans, service="rag", name="docuthinker.rag.v1.RagService/GetDocument")
    assert failed.parent_span_id == edge.span_id
    assert failed.status_code == 2 and failed.attributes["rpc.grpc.status_code"] == "NOT_FOUND"
    # The same id is in Envoy's access log and in the service's JSON log line of the RPC (each written by its
    # own process, Envoy's flushed every second: awaited, not assumed).
    access = logged_lines(traced_mesh.log_dir / "gateway.log", trace_id)
    assert str(access[0]["status"]) == "404", access
    logged = logged_lines(traced_mesh.log_dir / "rag.log", trace_id, lambda e: e.get("code") == "NOT_FOUND")
    assert logged[0]["trace_id"] == trace_id


def test_domain_metrics_of_real_work_reach_prometheus(prometheus, client):
    """An upload (new, then again: a duplicate) and a question: ingestion, graph sync and answer metrics."""
    ready, duplicate = (f'docuthinker_documents_ingested_total{{status="{s}",file_type="text"}}'
                        for s in ("ready", "duplicate"))
    before = {q: scalar(prometheus, q) for q in (ready, duplicate)}
    text = f"Domain metrics check {os.urandom(4).hex()}: the Rhine flows through Basel and Cologne.\n".encode()
    for _ in range(2):
        reply = client.post("/v1/documents", params={"filename": "rhine.txt"}, content=text,
                            headers={"Content-Type": "text/plain"})
        assert reply.status_code == 200 and "done" in sse_events(reply.text)[-1], reply.text
    assert client.post("/v1/query", json={"question": "Which cities does the Rhine flow through?"}).status_code == 200
    assert settle(prometheus, ready, before[ready] + 1) - before[ready] == 1
    assert settle(prometheus, duplicate, before[duplicate] + 1) - before[duplicate] == 1
    assert scalar(prometheus, 'docuthinker_ingest_stage_duration_seconds_count{stage="embed"}') >= 1
    assert scalar(prometheus, "docuthinker_chunks_embedded_total") >= 1
    assert settle(prometheus, 'docuthinker_graph_sync_total{operation="upsert",outcome="done"}', 1) >= 1
    assert scalar(prometheus, "docuthinker_graph_sync_lag_seconds_count") >= 1
    assert scalar(prometheus, "docuthinker_answers_total") >= 1
    assert scalar(prometheus, "docuthinker_retrieval_duration_seconds_count") >= 1
    deadline = time.monotonic() + 30
    while scalar(prometheus, 'docuthinker_graph_outbox{quantity="depth"}') != 0 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert scalar(prometheus, 'docuthinker_graph_outbox{quantity="depth"}') == 0  # drained
    assert prometheus.query('docuthinker_llm_budget{budget="daily",quantity="limit_usd"}')
