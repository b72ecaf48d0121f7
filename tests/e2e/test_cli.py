"""The installed ``docuthinker`` command against the real mesh (Envoy, the four services, the chat API).

The command is the console script ``make setup`` installs next to the venv's python: a test run from a
checkout whose package was not re-installed fails here, saying so, rather than testing something else.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from services.launcher.probes import free_port

pytestmark = pytest.mark.e2e

TENANT = "cli-e2e"
MEMO = (
    "Harbor Street warehouse: facilities memo.\n\n"
    "The Harbor Street warehouse opened in 1998 and stores spare turbine parts for the northern wind farms. "
    "Its annual fire inspection is scheduled for 14 March 2027 and will be carried out by inspector Dana Whitfield. "
    "The loading dock was resurfaced last autumn after two forklifts were damaged. "
    "Staff badges are renewed every January by the security office."
)
NOTES = (
    "# Canteen notes\n\n"
    "The canteen on the second floor serves lunch from noon until two o'clock. "
    "Vegetarian dishes are offered every day and the coffee machine was replaced in May. "
    "Complaints about the queue should be sent to the facilities manager, Ruth Okafor."
)
QUESTION = "Who will carry out the fire inspection of the Harbor Street warehouse?"


@pytest.fixture(scope="module")
def docuthinker() -> pathlib.Path:
    script = pathlib.Path(sys.executable).parent / "docuthinker"
    if not script.is_file():
        pytest.fail(f"the docuthinker console script is missing: expected {script}; "
                    "run `make setup` (it installs the package with its [project.scripts] entry)")
    return script


@pytest.fixture(scope="module")
def token_env(mesh, tmp_path_factory) -> dict[str, str]:
    """The CLI's token comes from a token file, as ``make run`` leaves one (here a user token of TENANT)."""
    token_file = tmp_path_factory.mktemp("cli-token") / "token"
    token_file.write_text(mesh.mint(TENANT) or "")
    env = {k: v for k, v in os.environ.items() if k != "DOCUTHINKER_TOKEN"}
    return {**env, "DOCUTHINKER_TOKEN_FILE": str(token_file)}


@pytest.fixture(scope="module")
def cli(mesh, docuthinker, token_env):
    def run(*args: str, gateway: str | None = None, check: int | None = 0) -> subprocess.CompletedProcess:
        env = {**token_env, "COLUMNS": "200", "NO_COLOR": "1"}
        argv = [str(docuthinker), "--gateway", gateway or mesh.base_url, "--tenant", TENANT, *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env)
        if check is not None:
            assert done.returncode == check, f"{args}: rc={done.returncode}\n{done.stdout}\n{done.stderr}"
        return done

    return run


def as_json(done: subprocess.CompletedProcess):
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def uploaded(cli, tmp_path_factory) -> dict[str, dict]:
    folder = tmp_path_factory.mktemp("cli-docs")
    (folder / "harbor-memo.txt").write_text(MEMO)
    (folder / "canteen.md").write_text(NOTES)
    done = cli("upload", str(folder / "harbor-memo.txt"), str(folder / "canteen.md"), "--wait", "--json")
    results = as_json(done)
    return {pathlib.Path(r["file"]).name: r for r in results}


def test_upload_wait_reports_each_file_ready_and_in_the_graph(uploaded):
    assert set(uploaded) == {"harbor-memo.txt", "canteen.md"}
    for result in uploaded.values():
        document = result["document"]
        assert document["status"] == "DOCUMENT_STATUS_READY" and int(document["chunk_count"]) >= 1
        assert document["graph_sync"] in ("GRAPH_SYNC_STATUS_SYNCED", "GRAPH_SYNC_STATUS_DISABLED")
        stages = result["stages"]
        assert stages[0] == "INGEST_STAGE_RECEIVED" and "INGEST_STAGE_INDEXED" in stages


def test_upload_shows_a_progress_bar_per_file_and_refuses_a_missing_file(cli, uploaded, tmp_path):
    again = tmp_path / "harbor-memo.txt"
    again.write_text(MEMO)
    done = cli("upload", str(again), str(tmp_path / "absent.pdf"), check=3)
    assert "harbor-memo.txt" in done.stderr and "100%" in done.stderr and "absent.pdf" in done.stderr
    assert uploaded["harbor-memo.txt"]["document"]["document_id"] in done.stdout  # the duplicate's id
    assert "no such file" in done.stderr


def test_docs_lists_the_library(cli, uploaded):
    listed = {d["document_id"]: d for d in as_json(cli("docs", "--json"))}
    for result in uploaded.values():
        assert result["document"]["document_id"] in listed
    table = cli("docs").stdout
    assert "harbor-memo.txt" in table and "canteen.md" in table and "ready" in table


def test_ask_streams_the_answer_with_numbered_citations(cli, uploaded):
    memo_id = uploaded["harbor-memo.txt"]["document"]["document_id"]
    text = cli("ask", QUESTION).stdout
    answer, _, rest = text.partition("Citations")
    assert "Dana Whitfield" in answer and "[1]" in answer
    assert "[1] harbor-memo.txt" in rest and "fire inspection" in rest
    body = as_json(cli("ask", QUESTION, "--doc", memo_id, "--json"))
    assert "Dana Whitfield" in body["answer"] and body["support_status"] == "SUPPORT_STATUS_SUPPORTED"
    assert body["citations"][0]["document_id"] == memo_id and body["citations"][0]["excerpt"] in MEMO


def test_ask_agent_answers_with_its_steps(cli, uploaded):
    done = cli("ask", QUESTION, "--agent")
    assert "Dana Whitfield" in done.stdout and "Citations" in done.stdout
    assert "planner" in done.stderr and "validator" in done.stderr
    body = as_json(cli("ask", QUESTION, "--agent", "--json"))
    assert [s["node"] for s in body["execution_summary"]["steps"]][0] == "planner"


def test_search_and_document_operations(cli, uploaded):
    canteen = uploaded["canteen.md"]["document"]["document_id"]
    results = as_json(cli("search", "lunch in the canteen", "--top-k", "3", "--json"))["results"]
    assert results and results[0]["provenance"]["filename"] == "canteen.md"
    summary = as_json(cli("summary", canteen, "--json"))
    assert summary["sentences"] and all(s["text"] in NOTES for s in summary["sentences"])
    assert "canteen" in cli("summary", canteen).stdout.lower()
    assert as_json(cli("key-ideas", canteen, "--json"))["ideas"]
    names = {e["text"] for e in as_json(cli("entities", canteen, "--json"))["entities"]}
    assert "Ruth Okafor" in names
    assert as_json(cli("sentiment", canteen, "--json"))["overall"]["label"].startswith("SENTIMENT_LABEL_")
    # The people's renderings of the same results.
    assert "canteen.md" in cli("search", "lunch in the canteen", "--top-k", "3").stdout
    assert "Ruth Okafor" in cli("entities", canteen).stdout and "PERSON" in cli("entities", canteen).stdout
    assert cli("key-ideas", canteen).stdout.startswith("1. ")
    assert "score" in cli("sentiment", canteen).stdout


def test_graph_query_health_and_costs(cli, uploaded):
    ids = {r["id"] for r in as_json(cli("graph", "query", "MATCH (d:Document) RETURN d.id AS id", "--json"))["rows"]}
    assert {r["document"]["document_id"] for r in uploaded.values()} <= ids
    health = as_json(cli("health", "--json"))
    assert health["status"] == "SERVING" and {s["name"] for s in health["services"]} >= {"rag", "nlp", "graph"}
    assert "total_cost" in as_json(cli("costs", "--json"))
    memo = uploaded["harbor-memo.txt"]["document"]["document_id"]
    rows = cli("graph", "query", "MATCH (d:Document) WHERE d.id = $id RETURN d.id AS id, d.file_type AS type",
               "-p", f"id={memo}").stdout
    assert memo in rows and "1 row(s)" in rows
    assert "mesh: SERVING" in cli("health").stdout and "rag" in cli("health").stdout
    assert "total: $" in cli("costs").stdout


def test_missing_documents_exit_3_and_bad_gateways_exit_5(cli, uploaded):
    gone = cli("summary", "no-such-document", "--json", check=3)
    assert as_json(gone)["error"]["http_status"] == 404
    cli("delete", "no-such-document", check=3)
    unreachable = cli("docs", "--json", gateway=f"http://127.0.0.1:{free_port()}", check=5)
    assert as_json(unreachable)["error"]["exit_code"] == 5 and "cannot reach the gateway" in unreachable.stderr
    cli("docs", gateway="not-a-url", check=5)
    cli("ask", check=2)  # usage: the question is missing


def test_delete_removes_a_document(cli, uploaded):
    canteen = uploaded["canteen.md"]["document"]["document_id"]
    removed = as_json(cli("delete", canteen, "--json"))
    assert removed[0]["document_id"] == canteen
    cli("summary", canteen, check=3)
    assert canteen not in {d["document_id"] for d in as_json(cli("docs", "--json"))}


def test_document_ids_complete_in_the_shell(mesh, docuthinker, uploaded, token_env):
    memo = uploaded["harbor-memo.txt"]["document"]["document_id"]
    words = f"docuthinker --gateway {mesh.base_url} --tenant {TENANT} summary "
    env = {**token_env, "_DOCUTHINKER_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split()))}
    done = subprocess.run([str(docuthinker)], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0 and memo in done.stdout.split(), done.stdout + done.stderr


def test_shell_completion_script(docuthinker):
    # Typer finds the shell by looking up the process tree (shellingham), so the script is asked for from a real
    # bash, as a user does; "; exit $?" keeps bash from exec-ing the command in its own place.
    done = subprocess.run(["bash", "-c", '"$0" --show-completion; exit $?', str(docuthinker)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and "_DOCUTHINKER_COMPLETE" in done.stdout
