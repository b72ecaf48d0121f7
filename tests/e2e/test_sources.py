"""Sources through the real Envoy gateway, each against a real server the test starts on loopback: a watched
folder (file events), Dovecot (IMAP), wsgidav (WebDAV) and git http-backend (Git over HTTP). For each kind: items
added, changed and deleted become documents, versions and deletions; a refused credential is a clear error on
that source's status while another source goes on; a server that goes away mid-sync fails the sync, and the
next one resumes without ingesting anything twice."""

from __future__ import annotations

import email.message
import time

import pytest

from tests.rag.sources.servers import Dovecot, Relay, WsgiServer, commit, git_http_app, make_repository, webdav_server

pytestmark = pytest.mark.e2e

TENANT = {"x-tenant-id": "sources-e2e"}
NOTE = "# {title}\n\nThe {title} office opens at {hour} in the morning.\n\nIts ferry leaves from pier {pier}.\n"


def note(title: str, hour: int = 7, pier: int = 4) -> str:
    return NOTE.format(title=title, hour=hour, pier=pier)


@pytest.fixture(scope="module")
def client(mesh):
    with mesh.http(timeout=120) as http:
        yield http


def create(client, source: dict) -> dict:
    reply = client.post("/v1/sources", json=source, headers=TENANT)
    assert reply.status_code == 200, reply.text
    created = reply.json()["source"]
    assert not created.get("credential")  # never returned
    return created


def wait_synced(client, source_id: str, after: float, timeout: float = 120) -> dict:
    """The source once a sync that started after ``after`` has ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        source = client.get(f"/v1/sources/{source_id}", headers=TENANT).json()["source"]
        status = source["status"]
        ended = status.get("last_run_end_time")
        started = status.get("last_run_start_time")
        if ended and status["state"] != "SOURCE_STATE_RUNNING" and _seconds(started) >= after - 1 \
                and _seconds(ended) >= _seconds(started):
            return source
        time.sleep(0.3)
    raise AssertionError(f"source {source_id} did not finish a sync in {timeout} s: {source}")


def sync(client, source_id: str) -> dict:
    asked = time.time()
    reply = client.post(f"/v1/sources/{source_id}:sync", json={}, headers=TENANT)
    assert reply.status_code == 200, reply.text
    return wait_synced(client, source_id, asked)


def _seconds(stamp: str | None) -> float:
    import datetime as dt

    if not stamp:
        return 0.0
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def documents(client, source_id: str) -> list[dict]:
    listed = client.get("/v1/documents", params={"page_size": 100}, headers=TENANT).json()["documents"]
    return [d for d in listed if d["document_key"].startswith(f"source:{source_id}:")]


def counts(source: dict) -> tuple:
    run = source["status"]["last_run"]
    return tuple(run[k] for k in ("seen", "added", "changed", "unchanged", "deleted", "failed"))


def test_folder_watched_for_file_events(client, mesh):
    folder = mesh.data_dir / "sources" / "e2e-reports"
    folder.mkdir(parents=True)
    (folder / "north.md").write_text(note("north"))
    (folder / "south.md").write_text(note("south"))
    started = time.time()
    source = create(client, {"name": "reports", "folder": {"path": str(folder)}, "interval_seconds": 3600})
    source_id = source["source_id"]
    first = wait_synced(client, source_id, started)
    # The last run may already be the watch's catch-up sync (nothing new): the documents tell what arrived.
    assert first["status"]["state"] == "SOURCE_STATE_OK"
    assert sorted((d["filename"], d["version"]) for d in documents(client, source_id)) == [("north.md", 1),
                                                                                           ("south.md", 1)]
    time.sleep(3)  # whether the watch is live by now or not, nothing below is lost: it catches up when it is
    # No sync is asked for from here on: the file events start them.
    (folder / "north.md").write_text(note("north", hour=9))
    (folder / "east.md").write_text(note("east"))
    (folder / "south.md").unlink()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        docs = {d["filename"]: d for d in documents(client, source_id)}
        if set(docs) == {"north.md", "east.md"} and docs["north.md"]["version"] == 2:
            break
        time.sleep(0.5)
    else:
        raise AssertionError(f"the folder's changes did not arrive: {documents(client, source_id)}")
    deadline = time.monotonic() + 60  # the sync's outcome is recorded just after its last document lands
    while True:
        status = client.get(f"/v1/sources/{source_id}", headers=TENANT).json()["source"]["status"]
        if (status["state"], status["documents"]) == ("SOURCE_STATE_OK", 2) or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert (status["state"], status["documents"]) == ("SOURCE_STATE_OK", 2), status


def _message(subject: str, body: str, attachment: tuple[str, str] | None = None) -> bytes:
    message = email.message.EmailMessage()
    message["From"] = "office@harbour.example"
    message["To"] = "ada@example.org"
    message["Subject"] = subject
    message.set_content(body)
    if attachment:
        message.add_attachment(attachment[1].encode(), maintype="text", subtype="markdown", filename=attachment[0])
    return bytes(message)


def test_imap_mailbox(client):
    dovecot = Dovecot().start()
    relay = Relay(dovecot.port)
    try:
        first = dovecot.deliver(_message("Ferry times", "The ferry leaves at seven.", ("timetable.md", note("tt"))))
        dovecot.deliver(_message("Storm warning", "The harbour closes on Friday."))
        imap = {"host": "127.0.0.1", "port": relay.port, "security": "IMAP_SECURITY_NONE", "username": dovecot.user}
        source_id = create(client, {"name": "mail", "imap": imap, "credential": dovecot.password,
                                    "interval_seconds": 3600})["source_id"]
        bad_id = create(client, {"name": "mail, wrong password", "imap": {**imap, "port": dovecot.port},
                                 "credential": "wrong", "interval_seconds": 3600})["source_id"]
        synced = sync(client, source_id)
        assert synced["status"]["state"] == "SOURCE_STATE_OK", synced
        assert synced["status"]["documents"] == 3  # two messages and one attachment
        bad = sync(client, bad_id)
        assert bad["status"]["state"] == "SOURCE_STATE_FAILED"
        assert bad["status"]["error_reason"] == "SOURCE_AUTH_FAILED" and "refused the login" in \
            bad["status"]["error_message"]
        assert bad["has_credential"] and not bad.get("credential")

        dovecot.expunge(first)
        for i in range(4):
            dovecot.deliver(_message(f"Bulletin {i}", f"Harbour bulletin number {i}."))
        relay.cut_at(rb"UID FETCH", 2)  # the server goes away while the second new message is fetched
        cut = sync(client, source_id)
        assert relay.cut.is_set()
        assert cut["status"]["state"] == "SOURCE_STATE_FAILED" and cut["status"]["error_reason"] == "SOURCE_UNREACHABLE"
        assert len(documents(client, source_id)) >= 3  # nothing deleted by the failed sync
        relay.restore()
        resumed = sync(client, source_id)
        assert resumed["status"]["state"] == "SOURCE_STATE_OK"
        docs = documents(client, source_id)
        names = sorted(d["filename"] for d in docs)
        assert names == ["Bulletin 0 (3).eml", "Bulletin 1 (4).eml", "Bulletin 2 (5).eml", "Bulletin 3 (6).eml",
                         "Storm warning (2).eml"], names
        assert all(d["version"] == 1 for d in docs)  # nothing ingested twice
        assert client.get(f"/v1/sources/{bad_id}", headers=TENANT).json()["source"]["status"]["state"] == \
            "SOURCE_STATE_FAILED"
    finally:
        relay.close()
        dovecot.remove()


def test_webdav_share(client, tmp_path):
    share = tmp_path / "share"
    (share / "minutes").mkdir(parents=True)
    (share / "minutes" / "march.md").write_text(note("march"))
    (share / "policy.md").write_text(note("policy"))
    server = webdav_server(share, "ada", "dav-secret").start()
    relay = Relay(server.port)
    try:
        dav = {"url": f"http://127.0.0.1:{relay.port}/", "username": "ada"}
        source_id = create(client, {"name": "share", "webdav": dav, "credential": "dav-secret",
                                    "interval_seconds": 3600})["source_id"]
        bad_id = create(client, {"name": "share, bad", "webdav": dav, "credential": "nope",
                                 "interval_seconds": 3600})["source_id"]
        assert sync(client, source_id)["status"]["documents"] == 2
        bad = sync(client, bad_id)
        assert (bad["status"]["state"], bad["status"]["error_reason"]) == ("SOURCE_STATE_FAILED", "SOURCE_AUTH_FAILED")

        # A new size: this server's ETag is inode-mtime-size with whole seconds, so a same-size rewrite
        # within the second of the first write is invisible to any WebDAV client.
        (share / "minutes" / "march.md").write_text(note("march", pier=19))
        (share / "policy.md").unlink()
        for i in range(3):
            (share / f"notice-{i}.md").write_text(note(f"notice {i}"))
        relay.cut_at(rb"GET /", 3)
        cut = sync(client, source_id)
        assert (cut["status"]["state"], cut["status"]["error_reason"]) == ("SOURCE_STATE_FAILED", "SOURCE_UNREACHABLE")
        relay.restore()
        resumed = sync(client, source_id)
        assert resumed["status"]["state"] == "SOURCE_STATE_OK"
        docs = {d["filename"]: d for d in documents(client, source_id)}
        assert sorted(docs) == ["march.md", "notice-0.md", "notice-1.md", "notice-2.md"]
        assert docs["march.md"]["version"] == 2 and all(d["version"] == 1 for n, d in docs.items() if n != "march.md")
        versions = client.get(f"/v1/documents/{docs['march.md']['document_id']}/versions", headers=TENANT).json()
        assert [v["version"] for v in versions["versions"]] == [2, 1]
    finally:
        relay.close()
        server.stop()


def test_git_branch(client, tmp_path):
    projects = tmp_path / "projects"
    projects.mkdir()
    work = make_repository(projects, "handbook", {"README.md": note("readme"), "docs/boats.md": note("boats"),
                                                 "docs/crew.md": note("crew")}, tmp_path / "work")
    server = WsgiServer(git_http_app(projects, "ada", "git-secret")).start()
    relay = Relay(server.port)
    try:
        git = {"url": f"http://127.0.0.1:{relay.port}/handbook.git", "branch": "main", "username": "ada"}
        source_id = create(client, {"name": "handbook", "git": git, "credential": "git-secret",
                                    "interval_seconds": 3600})["source_id"]
        bad_id = create(client, {"name": "handbook, bad", "git": git, "credential": "wrong",
                                 "interval_seconds": 3600})["source_id"]
        first = sync(client, source_id)
        assert first["status"]["state"] == "SOURCE_STATE_OK" and first["status"]["documents"] == 3
        bad = sync(client, bad_id)
        assert (bad["status"]["state"], bad["status"]["error_reason"]) == ("SOURCE_STATE_FAILED", "SOURCE_AUTH_FAILED")

        commit(work, {"docs/boats.md": note("boats", hour=10), "docs/crew.md": None, "docs/nets.md": note("nets")},
               "second")
        relay.cut_at(rb"POST /", 1)
        cut = sync(client, source_id)
        assert (cut["status"]["state"], cut["status"]["error_reason"]) == ("SOURCE_STATE_FAILED", "SOURCE_UNREACHABLE")
        relay.restore()
        resumed = sync(client, source_id)
        assert counts(resumed) == (3, 1, 1, 1, 1, 0)
        docs = {d["filename"]: d for d in documents(client, source_id)}
        assert sorted(docs) == ["README.md", "boats.md", "nets.md"] and docs["boats.md"]["version"] == 2
        listed = client.get("/v1/sources", headers=TENANT).json()["sources"]
        assert {s["source_id"] for s in listed} >= {source_id, bad_id}
        # Pause (a field mask), then a new credential for the failing one: it syncs again at once.
        paused = client.patch(f"/v1/sources/{source_id}", params={"update_mask": "paused"}, json={"paused": True},
                              headers=TENANT)
        assert paused.status_code == 200 and paused.json()["source"]["paused"], paused.text
        asked = time.time()
        fixed = client.patch(f"/v1/sources/{bad_id}", params={"update_mask": "credential"},
                             json={"credential": "git-secret"}, headers=TENANT)
        assert fixed.status_code == 200, fixed.text
        assert wait_synced(client, bad_id, asked)["status"]["state"] == "SOURCE_STATE_OK"
        assert client.delete(f"/v1/sources/{bad_id}", params={"keep_documents": "true"}, headers=TENANT).json()[
            "documents_deleted"] == 0
        # Deleting the source deletes its documents.
        gone = client.delete(f"/v1/sources/{source_id}", headers=TENANT)
        assert gone.status_code == 200 and gone.json()["documents_deleted"] == 3
        assert documents(client, source_id) == []
    finally:
        relay.close()
        server.stop()


def test_bad_requests_are_clear_errors(client):
    outside = client.post("/v1/sources", json={"name": "etc", "folder": {"path": "/etc"}}, headers=TENANT)
    assert outside.status_code == 400 and outside.json()["details"][0]["reason"] == "SOURCE_NOT_ALLOWED"
    nothing = client.post("/v1/sources", json={"name": "empty"}, headers=TENANT)
    assert nothing.status_code == 400
    assert client.get("/v1/sources/no-such-source", headers=TENANT).status_code == 404
    assert client.post("/v1/sources/no-such-source:sync", json={}, headers=TENANT).status_code == 404
