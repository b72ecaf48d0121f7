"""The first hour through the APIs, against the real mesh and Envoy:

- grpcurl at the gateway without ``-protoset``: list, describe and call every public service (reflection
  through Envoy), with the bearer token as for REST;
- conversations per user through the gateway (#38 item 5): the owner is the token's subject, a header a client
  sends is dropped, another user's conversation is invisible, the seed's ``user_id`` routes refuse another
  user's id, admins read others' only on the admin routes, and a token without a subject keeps none;
- ``/v1/chat/completions`` reads a follow-up against the message history and counts its usage.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import uuid

import httpx
import openai
import pytest

pytestmark = pytest.mark.e2e

TENANT = "first-hour"
MEMO = ("The Handbook of Cats was written by Jane Smith in 1998. It covers feeding, grooming and the care of kittens."
        "\n\nJane Smith lives in Lyon, where she teaches veterinary science at the university.")
GRPCURL = pathlib.Path(sys.executable).parent / "grpcurl"


@pytest.fixture(scope="module")
def document(mesh) -> str:
    with httpx.Client(base_url=mesh.base_url, timeout=120,
                      headers={"authorization": f"Bearer {mesh.mint(TENANT, subject='alice')}"}) as api:
        reply = api.post("/v1/documents:ingest", params={"filename": "cats.txt"}, content=MEMO.encode(),
                         headers={"Content-Type": "text/plain"})
        assert reply.status_code == 200, reply.text
        return reply.json()["result"]["document"]["document_id"]


def run_grpcurl(mesh, token: str | None, *command: str, data: dict | None = None) -> subprocess.CompletedProcess:
    """``grpcurl -plaintext [-H token] [-d data] GATEWAY command...`` (no -protoset: reflection through Envoy)."""
    flags = [*(["-H", f"authorization: Bearer {token}"] if token else []), *(["-d", json.dumps(data)] if data else [])]
    argv = [str(GRPCURL), "-plaintext", *flags, mesh.base_url.removeprefix("http://"), *command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def test_grpcurl_lists_describes_and_calls_through_the_gateway_without_a_protoset(mesh, document):
    token = mesh.mint(TENANT, subject="alice")
    listed = run_grpcurl(mesh, token, "list")
    assert listed.returncode == 0, listed.stderr
    services = set(listed.stdout.split())
    assert {"docuthinker.orchestrator.v1.OrchestratorService", "docuthinker.rag.v1.RagService",
            "docuthinker.nlp.v1.NlpService", "docuthinker.graph.v1.GraphService"} <= services
    described = run_grpcurl(mesh, token, "describe", "docuthinker.rag.v1.RagService")
    assert described.returncode == 0 and "rpc LocateSpan" in described.stdout and "rpc Query" in described.stdout
    message = run_grpcurl(mesh, token, "describe", "docuthinker.orchestrator.v1.AskConversationRequest")
    assert "conversation_id" in message.stdout
    called = run_grpcurl(mesh, token, "docuthinker.rag.v1.RagService/GetDocument", data={"document_id": document})
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["document"]["filename"] == "cats.txt"
    answered = run_grpcurl(mesh, token, "docuthinker.nlp.v1.NlpService/ComputeAnalytics",
                           data={"text": "Jane Smith wrote about cats. She lives in Lyon."})
    assert answered.returncode == 0 and json.loads(answered.stdout)["sentences"] == 2
    refused = run_grpcurl(mesh, None, "list")  # the gateway's token check holds for reflection too
    assert refused.returncode != 0 and "Unauthenticated" in refused.stderr
    # A service's own port describes only itself, as before.
    own = subprocess.run([str(GRPCURL), "-plaintext", mesh.grpc_target("orchestrator"), "list"], capture_output=True,
                         text=True, timeout=60)
    assert "docuthinker.rag.v1.RagService" not in own.stdout and "OrchestratorService" in own.stdout


def _events(response: httpx.Response) -> list[dict]:
    return [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]


def test_conversations_belong_to_the_tokens_subject_through_the_gateway(mesh, document):
    def client(subject: str, role: str = "user") -> httpx.Client:
        return httpx.Client(base_url=mesh.base_url, timeout=120,
                            headers={"authorization": f"Bearer {mesh.mint(TENANT, role=role, subject=subject)}"})

    alice_id = f"alice-{uuid.uuid4().hex[:8]}"  # a user of her own on every run
    with client(alice_id) as alice, client("bob") as bob, client("root", "admin") as admin:
        first = _events(alice.post("/v1/conversations/-:ask", json={"question": "Who wrote the Handbook of Cats?"}))
        conversation = first[0]["conversation"]["conversation_id"]
        assert "Jane Smith" in first[-1]["done"]["answer"]["answer"]
        follow = _events(alice.post(f"/v1/conversations/{conversation}:ask", json={"question": "When did she write it?"}))
        assert follow[1]["resolved"]["resolved"] == "When did Jane Smith write the Handbook of Cats?"
        assert "1998" in follow[-1]["done"]["answer"]["answer"]
        listed = alice.get("/v1/conversations").json()["conversations"]
        assert [c["conversation_id"] for c in listed] == [conversation] and listed[0]["turn_count"] == 2
        assert alice.patch(f"/v1/conversations/{conversation}", json={"title": "Cats"}).json()["conversation"][
            "title"] == "Cats"

        # Bob, same tenant: none of it, even naming alice in a header of his own (the gateway drops it).
        assert bob.get("/v1/conversations").json()["conversations"] == []
        assert bob.get("/v1/conversations", headers={"x-docuthinker-subject": alice_id}).json()["conversations"] == []
        assert bob.get(f"/v1/conversations/{conversation}").status_code == 404
        assert bob.post(f"/v1/conversations/{conversation}:ask", json={"question": "And?"}).status_code == 404
        assert bob.delete(f"/v1/conversations/{conversation}").json()["deleted"] is False
        # The seed's routes name the user in the path: only one's own (or "me") is served.
        seed = f"/v1/conversations/{alice_id}/general/messages"
        alice.post(seed, json={"role": "user", "content": "alice's note"})
        for call in (lambda: bob.get(seed), lambda: bob.post(seed, json={"role": "user", "content": "x"}),
                     lambda: bob.delete(seed), lambda: admin.get(seed)):
            refused = call()
            assert refused.status_code == 403 and refused.json()["code"] == 7, refused.text
        assert alice.get("/v1/conversations/me/general/messages").json()["messages"][0]["content"] == "alice's note"

        # The admin reads alice's through the admin routes only; a user there is refused.
        theirs = admin.get(f"/v1/admin/users/{alice_id}/conversations").json()["conversations"]
        assert [c["conversation_id"] for c in theirs] == [conversation] and theirs[0]["subject"] == alice_id
        read = admin.get(f"/v1/admin/users/{alice_id}/conversations/{conversation}").json()
        assert [t["question"] for t in read["turns"]] == ["Who wrote the Handbook of Cats?", "When did she write it?"]
        assert admin.get(f"/v1/conversations/{conversation}").status_code == 404
        assert bob.get(f"/v1/admin/users/{alice_id}/conversations").status_code == 403

    nobody = httpx.Client(base_url=mesh.base_url, timeout=60,
                          headers={"authorization": f"Bearer {mesh.mint(TENANT, subject='')}"})
    with nobody:
        refused = nobody.get("/v1/conversations")
        assert refused.status_code == 403 and "sub" in refused.json()["message"]
        # Nor may it name a user in the seed's routes: it is nobody, not a call from inside the mesh.
        assert nobody.get(f"/v1/conversations/{alice_id}/general/messages").status_code == 403


def test_the_chat_api_reads_a_follow_up_from_the_history_and_counts_usage(mesh, document):
    client = openai.OpenAI(base_url=f"{mesh.base_url}/v1", api_key=mesh.mint(TENANT, subject="alice"), max_retries=0)
    messages = [{"role": "user", "content": "Who wrote the Handbook of Cats?"},
                {"role": "assistant", "content": "The Handbook of Cats was written by Jane Smith in 1998 [1]."},
                {"role": "user", "content": "Where does she live?"}]
    completion = client.chat.completions.create(model="docuthinker", messages=messages)
    assert completion.model_extra["resolved_question"] == "Where does Jane Smith live?"
    assert "Lyon" in completion.choices[0].message.content
    usage = completion.usage
    assert usage.prompt_tokens > 20 and usage.completion_tokens > 3
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    chunks = list(client.chat.completions.create(model="docuthinker", messages=messages, stream=True,
                                                 stream_options={"include_usage": True}))
    assert "Lyon" in "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert chunks[-1].usage.total_tokens > 0
