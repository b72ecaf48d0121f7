"""Syncs of each kind of source against a real server (a folder, Dovecot, wsgidav, git http-backend) through the
real pipeline and stores: new, changed and vanished items, a failing item among good ones, a refused credential,
and a server that goes away mid-sync (the next sync resumes; nothing is ingested twice)."""

from __future__ import annotations

import asyncio
import email.message
import shutil
import time

import pytest

from services.rag.documents import document_id_for_key
from services.rag.sources.engine import document_key
from services.rag.sources.model import SourceKind, SourceState
from services.rag.sources.secrets import SealedCredentialError
from services.runtime.errors import InvalidArgument, NotFound

from .conftest import TENANT
from .servers import Relay, WsgiServer, commit, git_http_app, make_repository, webdav_server

NOTE = "# {title}\n\nThe {title} office opens at {hour} in the morning.\n\nIts ferry leaves from pier {pier}.\n"


def note(title: str, hour: int = 7, pier: int = 4) -> str:
    return NOTE.format(title=title, hour=hour, pier=pier)


def _doc(stack, source_id: str, key: str):
    return stack.runtime.metadata.get_document(TENANT, document_id_for_key(TENANT, document_key(source_id, key)))


async def test_folder_new_changed_deleted_and_a_bad_file(stack) -> None:
    folder = stack.roots / "reports"
    folder.mkdir()
    for name in ("north.md", "south.md", "east.md"):
        (folder / name).write_text(note(name[:-3]))
    (folder / "ignored.exe").write_bytes(b"MZ")
    source_id = await stack.create("reports", SourceKind.FOLDER, {"path": str(folder)})

    first = await stack.sync(source_id)
    counts = first.record.counts
    assert first.record.state is SourceState.OK
    assert (counts.seen, counts.added, counts.failed) == (3, 3, 0)
    assert first.documents == 3 and len(stack.documents()) == 3
    from prometheus_client import REGISTRY

    assert REGISTRY.get_sample_value("docuthinker_source_syncs_total", {"kind": "folder", "outcome": "ok"}) >= 1
    assert REGISTRY.get_sample_value("docuthinker_source_items_total", {"kind": "folder", "change": "added"}) >= 3

    (folder / "north.md").write_text(note("north", hour=9))
    (folder / "south.md").unlink()
    (folder / "west.md").write_text(note("west"))
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7 this is no PDF")
    second = await stack.sync(source_id)
    counts = second.record.counts
    assert (counts.seen, counts.added, counts.changed, counts.unchanged, counts.deleted, counts.failed) == \
        (4, 1, 1, 1, 1, 1)
    assert second.record.state is SourceState.PARTIAL
    assert [(e.key, e.error_reason) for e in second.item_errors] == [("broken.pdf", "CORRUPT_FILE")]
    north = _doc(stack, source_id, "north.md")
    assert north.version == 2
    assert _doc(stack, source_id, "south.md") is None
    assert sorted(d.filename for d in stack.documents()) == ["east.md", "north.md", "west.md"]

    # The failing item is retried once its backoff has passed, with one more attempt counted.
    time.sleep(0.3)
    third = await stack.sync(source_id)
    assert third.record.counts.failed == 1 and third.item_errors[0].attempts == 2
    (folder / "broken.pdf").unlink()
    fourth = await stack.sync(source_id)
    assert fourth.record.state is SourceState.OK and fourth.failing == 0

    # The folder going away is the source's failure: nothing is deleted.
    shutil.move(folder, stack.roots / "elsewhere")
    gone = await stack.sync(source_id)
    assert gone.record.state is SourceState.FAILED and gone.record.error_reason == "SOURCE_NOT_FOUND"
    assert len(stack.documents()) == 3
    shutil.move(stack.roots / "elsewhere", folder)
    back = await stack.sync(source_id)
    assert back.record.state is SourceState.OK and back.record.counts.unchanged == 3
    assert all(d.version == (2 if d.filename == "north.md" else 1) for d in stack.documents())


async def test_folders_outside_the_allowed_roots_are_refused(stack, tmp_path) -> None:
    with pytest.raises(InvalidArgument) as refused:
        await stack.create("etc", SourceKind.FOLDER, {"path": "/etc"})
    assert refused.value.reason == "SOURCE_NOT_ALLOWED"
    with pytest.raises(InvalidArgument):
        await stack.create("relative", SourceKind.FOLDER, {"path": "reports"})
    with pytest.raises(InvalidArgument) as bad:
        await stack.create("no host", SourceKind.IMAP, {"username": "ada"})
    assert any(v.field == "source.imap.host" for v in bad.value.violations)


def _message(subject: str, body: str, attachments: dict[str, str] | None = None) -> bytes:
    message = email.message.EmailMessage()
    message["From"] = "Harbour Office <office@harbour.example>"
    message["To"] = "ada@example.org"
    message["Subject"] = subject
    message.set_content(body)
    for name, text in (attachments or {}).items():
        message.add_attachment(text.encode(), maintype="text", subtype="markdown", filename=name)
    return bytes(message)


async def test_imap_messages_and_attachments(stack, dovecot) -> None:
    first = dovecot.deliver(_message("Ferry times", "The ferry leaves at seven.",
                                     {"timetable.md": note("timetable"), "fares.md": note("fares", pier=2)}))
    dovecot.deliver(_message("Storm warning", "The harbour closes on Friday."))
    relay = Relay(dovecot.port)
    config = {"host": "127.0.0.1", "port": relay.port, "security": 3, "username": dovecot.user}
    source_id = await stack.create("mail", SourceKind.IMAP, config, credential=dovecot.password)
    try:
        view = await stack.sync(source_id)
        assert view.record.state is SourceState.OK, view.record.error_message
        assert view.record.counts.added == 2 and view.documents == 4  # 2 messages + 2 attachments
        names = sorted(d.filename for d in stack.documents())
        assert names == ["Ferry times (1).eml", "Storm warning (2).eml", "fares.md", "timetable.md"]
        text = stack.runtime.metadata.sections(
            next(d.document_id for d in stack.documents() if d.filename.startswith("Ferry")))
        assert "Attachments (each a document of its own): timetable.md, fares.md" in text[-1].text
        # Nothing was marked as read by the sync.
        with dovecot.client() as client:
            client.select("INBOX", readonly=True)
            assert client.uid("SEARCH", None, "UNSEEN")[1][0].split() == [b"1", b"2"]

        dovecot.expunge(first)
        third = dovecot.deliver(_message("Pier works", "Pier 4 is closed for works."))
        view = await stack.sync(source_id)
        counts = view.record.counts
        assert (counts.added, counts.deleted, counts.unchanged) == (1, 1, 1)
        assert sorted(d.filename for d in stack.documents()) == ["Pier works (3).eml", "Storm warning (2).eml"]

        # The server goes away while the sync fetches its second message: the sync fails, the next one resumes.
        for i in range(4):
            dovecot.deliver(_message(f"Bulletin {i}", f"Bulletin number {i} of the harbour."))
        relay.cut_at(rb"UID FETCH", 2)
        cut = await stack.sync(source_id)
        assert relay.cut.is_set()
        assert cut.record.state is SourceState.FAILED and cut.record.error_reason == "SOURCE_UNREACHABLE"
        done_before = cut.record.counts.added
        assert 1 <= done_before < 4
        relay.restore()
        resumed = await stack.sync(source_id)
        assert resumed.record.state is SourceState.OK
        assert resumed.record.counts.added == 4 - done_before and resumed.record.counts.unchanged == 2 + done_before
        documents = stack.documents()
        assert len(documents) == 6 and all(d.version == 1 for d in documents)
        assert third
    finally:
        relay.close()


async def test_imap_bad_credential_is_the_sources_error(stack, dovecot) -> None:
    dovecot.deliver(_message("Hello", "Just a note."))
    config = {"host": "127.0.0.1", "port": dovecot.port, "security": "3", "username": dovecot.user}
    bad = await stack.create("wrong password", SourceKind.IMAP, config, credential="not-the-password")
    good = await stack.create("right password", SourceKind.IMAP, config, credential=dovecot.password)
    view = await stack.sync(bad)
    assert view.record.state is SourceState.FAILED and view.record.error_reason == "SOURCE_AUTH_FAILED"
    assert "refused the login" in view.record.error_message and view.record.consecutive_failures == 1
    assert (await stack.sync(good)).record.state is SourceState.OK  # the other source is not affected
    # The credential is sealed at rest: not in the row, and not readable as another source or tenant.
    record = stack.store.get(TENANT, bad)
    assert "not-the-password" not in record.secret and record.secret.startswith("v1:")
    assert stack.box.open(TENANT, bad, record.secret) == "not-the-password"
    with pytest.raises(SealedCredentialError):
        stack.box.open("other-tenant", bad, record.secret)
    with pytest.raises(SealedCredentialError):
        stack.box.open(TENANT, good, record.secret)
    with pytest.raises(NotFound):
        await stack.service.get("other-tenant", bad)


async def test_webdav_share(stack, tmp_path) -> None:
    share = tmp_path / "share"
    (share / "minutes").mkdir(parents=True)
    (share / "minutes" / "march.md").write_text(note("march"))
    (share / "minutes" / "april.md").write_text(note("april"))
    (share / "policy.md").write_text(note("policy"))
    server = webdav_server(share, "ada", "dav-secret").start()
    relay = Relay(server.port)
    config = {"url": f"http://127.0.0.1:{relay.port}/", "username": "ada"}
    try:
        source_id = await stack.create("share", SourceKind.WEBDAV, config, credential="dav-secret")
        bad = await stack.create("share, bad password", SourceKind.WEBDAV, config, credential="nope")
        view = await stack.sync(source_id)
        assert view.record.state is SourceState.OK and view.record.counts.added == 3
        failed = await stack.sync(bad)
        assert failed.record.state is SourceState.FAILED and failed.record.error_reason == "SOURCE_AUTH_FAILED"

        (share / "minutes" / "march.md").write_text(note("march", pier=9))
        (share / "policy.md").unlink()
        for i in range(3):
            (share / f"notice-{i}.md").write_text(note(f"notice {i}"))
        relay.cut_at(rb"GET /", 3)
        cut = await stack.sync(source_id)
        assert cut.record.state is SourceState.FAILED and cut.record.error_reason == "SOURCE_UNREACHABLE"
        assert _doc(stack, source_id, "policy.md") is not None  # no deletion by a failed sync
        relay.restore()
        resumed = await stack.sync(source_id)
        assert resumed.record.state is SourceState.OK and resumed.record.counts.deleted == 1
        assert _doc(stack, source_id, "minutes/march.md").version == 2
        documents = stack.documents()
        assert sorted(d.filename for d in documents) == ["april.md", "march.md", "notice-0.md", "notice-1.md",
                                                         "notice-2.md"]
        assert all(d.version == (2 if d.filename == "march.md" else 1) for d in documents)
    finally:
        relay.close()
        server.stop()


async def test_git_branch(stack, tmp_path) -> None:
    projects = tmp_path / "projects"
    projects.mkdir()
    work = make_repository(projects, "handbook", {"README.md": note("readme"), "docs/boats.md": note("boats"),
                                                 "docs/crew.md": note("crew"), "tool.py": "print(1)\n"},
                           tmp_path / "work")
    server = WsgiServer(git_http_app(projects, "ada", "git-secret")).start()
    relay = Relay(server.port)
    config = {"url": f"http://127.0.0.1:{relay.port}/handbook.git", "branch": "main", "username": "ada"}
    try:
        source_id = await stack.create("handbook", SourceKind.GIT, config, credential="git-secret")
        view = await stack.sync(source_id)
        assert view.record.state is SourceState.OK, view.record.error_message
        assert view.record.counts.added == 3  # tool.py is not a document type
        head = view.record.cursor["commit"]
        bad = await stack.create("handbook, bad token", SourceKind.GIT, config, credential="wrong")
        failed = await stack.sync(bad)
        assert failed.record.state is SourceState.FAILED and failed.record.error_reason == "SOURCE_AUTH_FAILED"

        new_head = commit(work, {"docs/boats.md": note("boats", hour=10), "docs/crew.md": None,
                                 "docs/nets.md": note("nets")}, "second")
        relay.cut_at(rb"POST /", 1)
        cut = await stack.sync(source_id)
        assert cut.record.state is SourceState.FAILED and cut.record.error_reason == "SOURCE_UNREACHABLE"
        assert cut.record.cursor["commit"] == head
        relay.restore()
        resumed = await stack.sync(source_id)
        counts = resumed.record.counts
        assert (counts.added, counts.changed, counts.deleted, counts.unchanged) == (1, 1, 1, 1)
        assert resumed.record.cursor["commit"] == new_head
        assert _doc(stack, source_id, "docs/boats.md").version == 2
        assert _doc(stack, source_id, "docs/crew.md") is None
        again = await stack.sync(source_id)
        assert again.record.counts.unchanged == 3 and again.record.counts.added == 0
        with pytest.raises(InvalidArgument) as refused:
            await stack.create("local", SourceKind.GIT, {"url": "file:///etc/secrets.git"})
        assert refused.value.reason == "SOURCE_NOT_ALLOWED"
    finally:
        relay.close()
        server.stop()


async def test_a_crash_between_upload_and_record_does_not_ingest_twice(stack) -> None:
    folder = stack.roots / "crash"
    folder.mkdir()
    (folder / "a.md").write_text(note("alpha"))
    (folder / "b.md").write_text(note("beta"))
    source_id = await stack.create("crash", SourceKind.FOLDER, {"path": str(folder)})
    await stack.sync(source_id)
    # As if the process died after the uploads and before the items were recorded.
    for key in ("a.md", "b.md"):
        stack.store.delete_item(TENANT, source_id, key)
    view = await stack.sync(source_id)
    assert view.record.state is SourceState.OK
    documents = stack.documents()
    assert len(documents) == 2 and all(d.version == 1 for d in documents)
    assert view.documents == 2


async def test_deleting_a_source_deletes_its_documents_unless_kept(stack) -> None:
    folder = stack.roots / "bye"
    folder.mkdir()
    (folder / "a.md").write_text(note("alpha"))
    kept_folder = stack.roots / "kept"
    kept_folder.mkdir()
    (kept_folder / "k.md").write_text(note("kappa"))
    first = await stack.create("bye", SourceKind.FOLDER, {"path": str(folder)})
    second = await stack.create("kept", SourceKind.FOLDER, {"path": str(kept_folder)})
    await stack.sync(first)
    await stack.sync(second)
    assert await stack.service.delete(TENANT, first, keep_documents=False) == 1
    assert await stack.service.delete(TENANT, second, keep_documents=True) == 0
    assert [d.filename for d in stack.documents()] == ["k.md"]
    with pytest.raises(NotFound):
        await stack.service.get(TENANT, first)
    await asyncio.sleep(0)


async def test_network_sources_reach_only_the_allowed_hosts(stack) -> None:
    from services.rag.sources.connect import Connectors
    from services.rag.sources.service import SourceService
    from services.rag.sources.settings import SourcesSettings

    settings = SourcesSettings(folder_roots=[stack.roots], allowed_hosts=["127.0.0.1", "*.example.org"])
    connectors = Connectors(settings, stack.box, [stack.roots], stack.roots / "cache")
    service = SourceService(stack.store, stack.runtime.catalog, stack.box, connectors, settings)
    from services.rag.sources.service import SourceDraft

    for kind, config in ((SourceKind.IMAP, {"host": "169.254.169.254", "username": "a"}),
                         (SourceKind.WEBDAV, {"url": "http://metadata.internal/"}),
                         (SourceKind.GIT, {"url": "https://evil.example.com/x.git"})):
        with pytest.raises(InvalidArgument) as refused:
            await service.create(TENANT, SourceDraft(name="n", kind=kind, config=config))
        assert refused.value.reason == "SOURCE_NOT_ALLOWED", kind
    allowed = await service.create(TENANT, SourceDraft(name="ok", kind=SourceKind.WEBDAV,
                                                       config={"url": "https://dav.example.org/files/"}, paused=True))
    assert allowed.record.config["url"] == "https://dav.example.org/files/"
