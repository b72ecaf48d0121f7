"""Evaluation sets through the real Envoy gateway and the real mesh (REST), and the ``docuthinker evals`` CLI.

Upload a 20-question set, run it, cancel a second run midway, run a third with another top_k and compare it
with the first item by item, export the first as CSV; a set with a malformed row is refused with the row
number; another tenant sees none of it; the per-tenant run quota answers 429; the orchestrator's metrics show
the last run's figures.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import time

import httpx
import pytest

from tests.e2e.evals_fixture import DOCUMENTS, malformed_csv, set_csv

pytestmark = pytest.mark.e2e

A = {"x-tenant-id": "evals-e2e-a"}
B = {"x-tenant-id": "evals-e2e-b"}


def sse_events(body: str) -> list[dict]:
    return [json.loads(line[len("data: "):]) for line in body.splitlines() if line.startswith("data: ")]


@pytest.fixture(scope="module")
def client(mesh):
    with mesh.http(timeout=120) as http:
        yield http


@pytest.fixture(scope="module")
def documents(client) -> dict[str, str]:
    ids = {}
    for name, text in DOCUMENTS.items():
        reply = client.post("/v1/documents", params={"filename": name}, content=text.encode(),
                            headers={**A, "content-type": "text/plain"})
        assert reply.status_code == 200, reply.text
        done = sse_events(reply.text)[-1]["done"]["document"]
        assert done["status"] == "DOCUMENT_STATUS_READY", done
        ids[name] = done["document_id"]
    return ids


@pytest.fixture(scope="module")
def evalset(client, documents) -> dict:
    # %20, not "+": the transcoder decodes query parameters by percent-decoding only (as curl sends them)
    reply = client.post("/v1/eval-sets?filename=harbour.csv&name=harbour%20and%20lighthouse",
                        content=set_csv(), headers={**A, "content-type": "text/csv"})
    assert reply.status_code == 200, reply.text
    return reply.json()["eval_set"]


def start(client, set_id: str, headers=A, **body) -> httpx.Response:
    return client.post(f"/v1/eval-sets/{set_id}/runs", json=body, headers=headers)


def wait_for(client, run_id: str, until=lambda run: run["state"] != "EVAL_RUN_STATE_RUNNING",
             timeout_s: float = 300) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        run = client.get(f"/v1/eval-runs/{run_id}", headers=A).json()["run"]
        if until(run):
            return run
        assert time.monotonic() < deadline, f"run {run_id} still {run['state']} at {run.get('completed')}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def first_run(client, evalset) -> dict:
    reply = start(client, evalset["set_id"], label="default top_k")
    assert reply.status_code == 200, reply.text
    assert reply.json()["run"]["state"] == "EVAL_RUN_STATE_RUNNING"
    return wait_for(client, reply.json()["run"]["run_id"])


def test_upload_a_twenty_question_set(client, evalset):
    assert evalset["item_count"] == 20 and evalset["name"] == "harbour and lighthouse"
    assert evalset["kinds"]["unanswerable"] == 4
    stored = client.get(f"/v1/eval-sets/{evalset['set_id']}", headers=A).json()["eval_set"]
    assert len(stored["items"]) == 20 and stored["items"][6]["answers"] == ["moorings, pilots and the fish market",
                                                                              "moorings"]
    listed = client.get("/v1/eval-sets", headers=A).json()
    assert evalset["set_id"] in [s["set_id"] for s in listed["eval_sets"]]


def test_a_set_with_a_malformed_row_is_refused_with_the_row_number(client):
    reply = client.post("/v1/eval-sets", params={"filename": "broken.csv"}, content=malformed_csv(),
                        headers={**A, "content-type": "text/csv"})
    assert reply.status_code == 400, reply.text
    status = reply.json()
    assert status["code"] == 3 and "row 6: no accepted answers" in status["message"]
    details = {d["@type"].rsplit("/", 1)[-1]: d for d in status["details"]}
    assert details["google.rpc.ErrorInfo"]["reason"] == "MALFORMED_EVAL_SET"
    assert details["google.rpc.ErrorInfo"]["metadata"]["row"] == "6"
    assert details["google.rpc.BadRequest"]["field_violations"][0]["field"] == "row 6"


def test_a_run_scores_all_twenty_questions(client, first_run):
    run = first_run
    assert run["state"] == "EVAL_RUN_STATE_SUCCEEDED" and run["completed"] == run["total"] == 20
    overall = run["totals"]["overall"]
    assert (overall["items"], overall["answerable"], overall["unanswerable"]) == (20, 16, 4)
    assert overall["answer_correct"] >= 0.5 and overall["citation_hit"] >= 0.5  # the engine does answer these
    assert "latency_p50_s" in overall and set(run["totals"]["per_kind"]) >= {"date", "number", "unanswerable"}
    assert run["identities"]["embedder"].startswith("all-MiniLM-L6-v2@") and run["identities"]["answer_engines"]
    items = client.get(f"/v1/eval-runs/{run['run_id']}/items", headers=A).json()
    assert items["total_size"] == 20 and [i["position"] for i in items["items"]] == list(range(1, 21))
    correct = [i for i in items["items"] if i["correct"] and i["item"]["answers"]]
    assert all(i["citations"] and i["latency_ms"] > 0 for i in correct)


def test_cancel_a_second_run_midway(client, evalset, first_run):
    run_id = start(client, evalset["set_id"], label="to cancel").json()["run"]["run_id"]
    wait_for(client, run_id, until=lambda run: int(run.get("completed", 0)) >= 2)
    reply = client.post(f"/v1/eval-runs/{run_id}:cancel", json={}, headers=A)
    assert reply.status_code == 200, reply.text
    cancelled = reply.json()["run"]
    assert cancelled["state"] == "EVAL_RUN_STATE_CANCELLED" and cancelled["cancel_requested"]
    assert 2 <= cancelled["completed"] < 20
    items = client.get(f"/v1/eval-runs/{run_id}/items", headers=A).json()
    assert items["total_size"] == cancelled["completed"] == len(items["items"])
    time.sleep(1.0)  # nothing more lands after the cancellation
    assert client.get(f"/v1/eval-runs/{run_id}", headers=A).json()["run"]["completed"] == cancelled["completed"]


def test_compare_two_runs_that_differ_by_a_setting(client, evalset, first_run):
    reply = start(client, evalset["set_id"], top_k=1, label="top_k 1")
    assert reply.status_code == 200, reply.text
    narrow = wait_for(client, reply.json()["run"]["run_id"])
    assert narrow["settings"]["top_k"] == 1
    compared = client.get("/v1/eval-runs:compare", params={"base_run_id": first_run["run_id"],
                                                          "candidate_run_id": narrow["run_id"]}, headers=A)
    assert compared.status_code == 200, compared.text
    body = compared.json()
    assert [d["name"] for d in body["differences"]] == ["settings.top_k"]
    assert body["differences"][0]["candidate"] == 1
    counts = [body.get(k, 0) for k in ("better", "worse", "same")]
    assert sum(counts) == 20 and len(body["items"]) == 20
    deltas = body.get("deltas", {})
    assert deltas.get("answer_correct", 0.0) == pytest.approx(
        narrow["totals"]["overall"]["answer_correct"] - first_run["totals"]["overall"]["answer_correct"], abs=1e-3)
    for item in body["items"]:
        before, after = item["base"], item["candidate"]
        rank = lambda r: (r.get("correct", False), r.get("cited", False))  # noqa: E731
        expected = ("EVAL_CHANGE_BETTER" if rank(after) > rank(before) else
                    "EVAL_CHANGE_WORSE" if rank(after) < rank(before) else "EVAL_CHANGE_SAME")
        assert item["change"] == expected


def test_export_csv(client, first_run):
    reply = client.get(f"/v1/eval-runs/{first_run['run_id']}:export", params={"format": "csv"}, headers=A)
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(reply.text)))
    assert len(rows) == 20 and rows[0]["id"] == "h01" and rows[16]["expected_answers"] == "unanswerable"
    assert sum(int(r["correct"]) for r in rows[:16]) / 16 == pytest.approx(
        first_run["totals"]["overall"]["answer_correct"], abs=1e-3)
    as_json = client.get(f"/v1/eval-runs/{first_run['run_id']}:export", params={"format": "json"}, headers=A)
    assert as_json.headers["content-type"].startswith("application/json") and len(as_json.json()["items"]) == 20


def test_another_tenant_cannot_see_the_set_or_its_runs(client, evalset, first_run):
    assert client.get(f"/v1/eval-sets/{evalset['set_id']}", headers=B).status_code == 404
    assert client.get(f"/v1/eval-runs/{first_run['run_id']}", headers=B).status_code == 404
    assert client.get(f"/v1/eval-runs/{first_run['run_id']}:export", headers=B).status_code == 404
    assert start(client, evalset["set_id"], headers=B).status_code == 404
    assert client.delete(f"/v1/eval-sets/{evalset['set_id']}", headers=B).status_code == 404
    assert client.get("/v1/eval-sets", headers=B).json().get("eval_sets", []) == []
    assert client.get("/v1/eval-runs", headers=B).json().get("runs", []) == []


def test_runs_are_bounded_per_tenant_and_a_bad_selection_fails_the_run(client, evalset, first_run):
    first = start(client, evalset["set_id"], label="quota 1").json()["run"]["run_id"]
    second = start(client, evalset["set_id"], label="quota 2").json()["run"]["run_id"]
    third = start(client, evalset["set_id"], label="quota 3")
    assert third.status_code == 429 and third.json()["details"][0]["reason"] == "EVAL_RUN_QUOTA"
    for run_id in (first, second):
        assert client.post(f"/v1/eval-runs/{run_id}:cancel", json={}, headers=A).status_code == 200
    failed = wait_for(client, start(client, evalset["set_id"], document_ids=["no-such-document"]).json()["run"]["run_id"])
    assert failed["state"] == "EVAL_RUN_STATE_FAILED" and "refused" in failed["error"]
    assert start(client, evalset["set_id"], top_k=99).status_code == 400


def test_metrics_show_the_last_run(mesh, client, first_run):
    text = httpx.get(mesh.metrics_urls()["orchestrator"], timeout=10).text
    assert 'docuthinker_eval_last_run{quantity="answer_correct"}' in text
    assert 'docuthinker_eval_runs{state="succeeded"}' in text


def test_the_cli_uploads_runs_and_exports(mesh, evalset, first_run, tmp_path):
    docuthinker = pathlib_script()
    (tmp_path / "set.csv").write_bytes(set_csv())
    token = mesh.mint(A["x-tenant-id"]) or ""

    def cli(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([str(docuthinker), "--gateway", mesh.base_url, "--token", token, *args],
                              capture_output=True, text=True, timeout=600, env={"COLUMNS": "200", "NO_COLOR": "1",
                                                                                 **_env()})
        return done

    uploaded = cli("evals", "upload", str(tmp_path / "set.csv"), "--json")
    assert uploaded.returncode == 0, uploaded.stderr
    set_id = json.loads(uploaded.stdout)["set_id"]
    ran = cli("evals", "run", set_id, "--top-k", "3", "--json")
    assert ran.returncode == 0, ran.stderr
    run = json.loads(ran.stdout)
    assert run["state"] == "EVAL_RUN_STATE_SUCCEEDED" and run["completed"] == 20
    shown = cli("evals", "compare", first_run["run_id"], run["run_id"])
    assert shown.returncode == 0 and "settings.top_k: 0 -> 3" in shown.stdout.replace("'", "")
    exported = cli("evals", "export", run["run_id"], "-o", str(tmp_path / "out.csv"))
    assert exported.returncode == 0 and (tmp_path / "out.csv").read_text().count("\n") == 21
    broken = tmp_path / "broken.csv"
    broken.write_bytes(malformed_csv())
    refused = cli("evals", "upload", str(broken))
    assert refused.returncode == 1 and "row 6" in refused.stderr


def pathlib_script():
    import pathlib

    script = pathlib.Path(sys.executable).parent / "docuthinker"
    if not script.is_file():
        pytest.fail(f"the docuthinker console script is missing: {script} (make setup installs it)")
    return script


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k not in ("DOCUTHINKER_TOKEN", "DOCUTHINKER_TENANT")}
