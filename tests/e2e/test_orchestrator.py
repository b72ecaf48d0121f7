"""The orchestrator through the real Envoy gateway and the real services.

Two meshes: the shared session ``mesh`` for the supervisor, conversations, batch, tools and
agent; and this module's own ``resilient`` mesh whose orchestrator talks to a fake OpenAI
server (500s on demand) for the circuit-breaker, budget, dead-letter and restart checks.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

pytestmark = pytest.mark.e2e

DOCUMENT = (
    "Ada Lovelace wrote the first published computer program in 1843. She worked with Charles Babbage on the "
    "Analytical Engine in London.\n\nThe engine was never built, but her notes describe loops and subroutines. "
    "Historians consider the notes a milestone of computing.\n\nToday the Ada programming language is named "
    "after her, and Ada Lovelace Day celebrates women in science every October."
)


def sse_events(body: str) -> list[dict]:
    return [json.loads(line[len("data: "):]) for line in body.splitlines() if line.startswith("data: ")]


def upload(client: httpx.Client, text: str, filename: str) -> str:
    reply = client.post("/v1/documents", params={"filename": filename}, content=text.encode(),
                        headers={"Content-Type": "text/plain"})
    assert reply.status_code == 200, reply.text
    done = [e["done"] for e in sse_events(reply.text) if "done" in e]
    assert done, reply.text
    return done[0]["document"]["document_id"]


def wait_routable(client: httpx.Client, path: str = "/v1/circuits", timeout_s: float = 60) -> None:
    """Envoy's health check needs a moment to route to a restarted process again."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if client.get(path).status_code == 200:
            return
        time.sleep(0.5)
    pytest.fail(f"{path} not routable after {timeout_s}s")


@pytest.fixture(scope="module")
def client(mesh):
    # Our own tenant: documents and graph data stay out of other suites' way in the shared mesh.
    with mesh.http(timeout=180, headers={"x-tenant-id": "orchestrator-e2e"}) as http:
        yield http


# -- shared mesh ---------------------------------------------------------------------------------


def test_supervisor_on_a_stored_document_streams_subtasks_and_the_aggregate(client):
    document_id = upload(client, DOCUMENT, "lovelace.txt")
    reply = client.post("/v1/supervisor/process", json={"intent": "document.upload", "document_id": document_id})
    assert reply.status_code == 200, reply.text
    events = sse_events(reply.text)
    assert events[0]["classification"]["intent"] == "document.upload"
    subtasks = [e["subtask"] for e in events if "subtask" in e]
    assert [s["task_id"] for s in subtasks][0] == "extract" and subtasks[-1]["task_id"] == "store"
    assert {s["task_id"] for s in subtasks} == {"extract", "summarize", "key_ideas", "store"}
    assert all(s["state"] == "TASK_STATE_SUCCEEDED" for s in subtasks), subtasks
    by_id = {s["task_id"]: s for s in subtasks}
    assert by_id["summarize"]["provider"] == "nlp" and "Lovelace" in by_id["summarize"]["data"]["summary"]
    assert by_id["key_ideas"]["data"]["ideas"]
    done = events[-1]["done"]
    assert done["success"] and done["trace_id"]
    assert set(done["data"]["results"]) == {"extract", "summarize", "key_ideas", "store"}


def test_supervisor_classifies_free_text_offline(client):
    reply = client.post("/v1/supervisor/process", json={
        "message": "Is the tone of this review positive or negative?", "text": "What a wonderful, happy day."})
    assert reply.status_code == 200, reply.text
    events = sse_events(reply.text)
    classification = events[0]["classification"]
    assert classification["intent"] == "document.sentiment" and classification["source"] == "classifier"
    assert events[-1]["done"]["success"]
    sentiment = [e["subtask"] for e in events if "subtask" in e][0]["data"]
    assert sentiment["overall"]["label"] == "SENTIMENT_LABEL_POSITIVE"


def test_missing_input_is_400_before_the_stream(client):
    reply = client.post("/v1/supervisor/process", json={"intent": "document.summarize"})
    assert reply.status_code == 400, reply.text
    assert reply.json()["details"][0]["reason"] == "MISSING_TEXT"


def test_conversation_summarisation_kicks_in_at_21_messages(client):
    path = "/v1/conversations/me/doc-1/messages"
    client.delete(path)
    for n in range(20):
        reply = client.post(path, json={"role": "user" if n % 2 == 0 else "assistant",
                                        "content": f"Message {n}: we discussed topic number {n} in detail."})
        assert reply.status_code == 200, reply.text
    assert reply.json()["message_count"] == 20 and not reply.json()["has_summary"]
    reply = client.post(path, json={"role": "user", "content": "And this is the twenty-first message."})
    body = reply.json()
    assert body["has_summary"] and body["message_count"] == 10
    assert body["recent_messages"][-1]["content"] == "And this is the twenty-first message."
    conversation = client.get(path).json()
    assert conversation["summary"] and "topic number" in conversation["summary"]
    assert conversation["messages"][0]["content"].startswith("Message 11:")
    assert client.delete(path).json()["success"]
    assert client.get(path).status_code == 404


def test_batch_of_25_documents_reports_per_item_results(client):
    documents = [{"id": f"doc-{n}", "text": f"Report {n}. Sales grew by {n} percent this quarter. The team is happy."}
                 for n in range(25)]
    reply = client.post("/v1/batch/process", json={"documents": documents, "operation": "sentiment"})
    assert reply.status_code == 200, reply.text
    events = sse_events(reply.text)
    items = [e["item"] for e in events if "item" in e]
    progress = [e["progress"] for e in events if "progress" in e]
    assert sorted(i["document_id"] for i in items) == sorted(d["id"] for d in documents)
    assert all(i["success"] and i["data"]["overall"]["label"] for i in items)
    assert progress[-1] == {"completed": 25, "total": 25}
    assert events[-1]["done"] == {"total_processed": 25, "total_failed": 0, "success_rate": 1.0}


def test_tools_and_offline_agent(client):
    tools = client.get("/v1/tools").json()
    assert tools["count"] >= 6
    names = {t["name"] for t in tools["tools"]}
    assert {"analyze_document_text", "extract_entities", "rag_search", "vector_search", "knowledge_graph_query",
            "python_sentiment"} <= names
    executed = client.post("/v1/tools/extract_entities:execute", json={"input": {"text": DOCUMENT}})
    assert executed.status_code == 200, executed.text
    entities = {e["text"] for e in executed.json()["result"]["entities"]}
    assert "Ada Lovelace" in entities and "Charles Babbage" in entities
    assert client.post("/v1/tools/nope:execute", json={"input": {}}).status_code == 404
    run = client.post("/v1/agent/run", json={"message": f"Which entities are mentioned in: {DOCUMENT}"})
    assert run.status_code == 200, run.text
    body = run.json()
    assert body["provider"] == "rules" and [t["name"] for t in body["tools_used"]] == ["extract_entities"]
    assert "Charles Babbage" in body["response"]


def test_health_and_token_check(client):
    health = client.get("/v1/health").json()
    assert health["status"] == "SERVING"
    check = client.post("/v1/token-check", json={"model": "gpt-4", "messages": [{"role": "user",
                                                                                   "content": "x" * 400}]}).json()
    assert check["allowed"] and check["used"] == "100" and check["context_window"] == "128000"


# -- own mesh with a controllable vendor ---------------------------------------------------------


class FakeOpenAI:
    """An OpenAI Chat Completions endpoint that fails with 500 while ``failing`` is set."""

    def __init__(self) -> None:
        self.failing = True
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                outer.requests += 1
                if outer.failing:
                    body, status = {"error": {"message": "upstream overloaded", "type": "server_error"}}, 500
                else:
                    body, status = {
                        "id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()),
                        "model": "gpt-4o-mini",
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": "Hello from the vendor."}}],
                        "usage": {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500},
                    }, 200
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


# Longer than this module runs: the circuit, once open, stays open until the test ends its cooldown by
# restarting the orchestrator with none (a guessed sleep, or a cooldown the slow local answers could outlast
# on a loaded machine, made the fourth request a race).
COOLDOWN_S = 3600


@pytest.fixture(scope="module")
def vendor():
    server = FakeOpenAI()
    yield server
    server.close()


@pytest.fixture(scope="module")
def resilient(tmp_path_factory, vendor):
    from services.launcher.mesh import Mesh

    root = tmp_path_factory.mktemp("resilient")
    env = {
        "DOCUTHINKER_SHUTDOWN_GRACE_S": "2",
        "OPENAI_API_KEY": "test",
        "OPENAI_BASE_URL": vendor.url,
        # Only the orchestrator's chat goes to the vendor; every other task stays offline.
        "DOCUTHINKER_PROVIDER_ORDER": "local",
        "DOCUTHINKER_TASK_PROVIDERS": "chat=openai,local",
        "DOCUTHINKER_CIRCUIT_COOLDOWN_S": str(COOLDOWN_S),
        "DOCUTHINKER_DLQ_BACKOFF_S": "600",
    }
    with Mesh(data_dir=root / "data", log_dir=root / "logs", auto_ports=True, extra_env=env) as running:
        yield running


@pytest.fixture(scope="module")
def rclient(resilient):
    with resilient.http(timeout=180) as http:
        yield http


def circuits(rclient) -> dict[str, dict]:
    return {c["name"]: c for c in rclient.get("/v1/circuits").json()["circuits"]}


def chat(rclient, message: str = "Say hello in three words.") -> dict:
    reply = rclient.post("/v1/supervisor/process", json={"intent": "chat.general", "message": message})
    assert reply.status_code == 200, reply.text
    return [e["subtask"] for e in sse_events(reply.text) if "subtask" in e][0]


def restart_orchestrator(resilient, rclient, **env: str) -> None:
    resilient.stop_service("orchestrator")
    resilient.env.update(env)
    resilient.start_service("orchestrator")
    wait_routable(rclient)


def test_provider_failure_trips_the_breaker_fails_over_and_the_probe_closes_it(resilient, rclient, vendor):
    vendor.failing = True
    for _ in range(3):
        subtask = chat(rclient)
        assert subtask["state"] == "TASK_STATE_SUCCEEDED", subtask
        assert subtask["provider"] == "local" and subtask["data"]["providers_tried"] == ["openai", "local"]
    assert vendor.requests == 3
    openai = circuits(rclient)["provider:openai"]
    assert openai["state"] == "CIRCUIT_STATE_OPEN" and openai["total_failures"] == "3"
    # open: the vendor is skipped
    subtask = chat(rclient)
    assert subtask["data"]["providers_tried"] == ["local"] and vendor.requests == 3
    # The vendor recovers. The cooldown is a duration on the orchestrator's clock: rather than wait it out,
    # restart the orchestrator with none. It reloads the circuit OPEN (persisted), its cooldown now over, so
    # the next call is the single probe, which goes through and closes the circuit.
    vendor.failing = False
    restart_orchestrator(resilient, rclient, DOCUTHINKER_CIRCUIT_COOLDOWN_S="0")
    assert circuits(rclient)["provider:openai"]["state"] == "CIRCUIT_STATE_OPEN"
    subtask = chat(rclient)
    assert subtask["provider"] == "openai" and subtask["data"]["response"] == "Hello from the vendor."
    assert subtask["data"]["providers_tried"] == ["openai"] and vendor.requests == 4
    assert circuits(rclient)["provider:openai"]["state"] == "CIRCUIT_STATE_CLOSED"
    costs = rclient.get("/v1/costs", params={"period": "today"}).json()
    assert costs["by_provider"]["openai"]["requests"] == "1"
    assert costs["by_intent"]["chat.general"]["cost"] == pytest.approx((1200 * 0.15 + 300 * 0.6) / 1e6)


def test_failed_downstream_call_is_dead_lettered_and_replayed_after_recovery(resilient, rclient):
    resilient.stop_service("nlp")
    try:
        reply = rclient.post("/v1/supervisor/process", json={"intent": "document.keyIdeas", "text": DOCUMENT})
        assert reply.status_code == 200, reply.text
        events = sse_events(reply.text)
        subtask = [e["subtask"] for e in events if "subtask" in e][0]
        assert subtask["state"] == "TASK_STATE_FAILED" and subtask["error"]["code"] == 14  # UNAVAILABLE
        letter_id = subtask["data"]["dead_letter_id"]
        assert not events[-1]["done"]["success"]
        dlq = rclient.get("/v1/dlq").json()
        letter = next(m for m in dlq["messages"] if m["id"] == letter_id)
        assert letter["operation"] == "nlp.key_ideas" and letter["state"] == "retrying"
    finally:
        resilient.start_service("nlp")
    # The orchestrator's channel reconnects to the restarted service within its reconnect backoff.
    deadline = time.monotonic() + 30
    while True:
        replayed = rclient.post(f"/v1/dlq/{letter_id}:replay", json={})
        assert replayed.status_code == 200, replayed.text
        if replayed.json()["success"] or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert replayed.json()["success"], replayed.text
    assert replayed.json()["message"]["state"] == "replayed"
    assert rclient.get("/v1/dlq").json()["replayed"] >= 1


def test_restart_keeps_costs_circuits_dead_letters_and_conversations(resilient, rclient):
    rclient.post("/v1/conversations/me/general/messages", json={"role": "user", "content": "remember me"})
    before = {
        "costs": rclient.get("/v1/costs").json(),
        "circuits": circuits(rclient),
        "dlq": rclient.get("/v1/dlq").json(),
    }
    restart_orchestrator(resilient, rclient)
    assert rclient.get("/v1/costs").json()["total_cost"] == before["costs"]["total_cost"] > 0
    after = circuits(rclient)
    assert after["provider:openai"]["total_failures"] == before["circuits"]["provider:openai"]["total_failures"]
    assert after["provider:openai"]["successes"] == before["circuits"]["provider:openai"]["successes"]
    assert after["service:nlp"]["total_failures"] == before["circuits"]["service:nlp"]["total_failures"] != "0"
    dlq = rclient.get("/v1/dlq").json()
    assert [m["id"] for m in dlq["messages"]] == [m["id"] for m in before["dlq"]["messages"]]
    assert dlq["replayed"] == before["dlq"]["replayed"]
    conversation = rclient.get("/v1/conversations/me/general/messages").json()
    assert [m["content"] for m in conversation["messages"]] == ["remember me"]


def test_tiny_budget_rejects_with_429(resilient, rclient):
    restart_orchestrator(resilient, rclient, DOCUTHINKER_DAILY_BUDGET_USD="0.0000001")
    reply = rclient.post("/v1/supervisor/process", json={"intent": "chat.general", "message": "hello"})
    assert reply.status_code == 429, reply.text
    assert reply.json()["details"][0]["reason"] == "BUDGET_EXCEEDED"
    # requests that spend nothing are still served
    free = rclient.post("/v1/supervisor/process", json={"intent": "document.analytics", "text": DOCUMENT})
    assert free.status_code == 200 and sse_events(free.text)[-1]["done"]["success"]
