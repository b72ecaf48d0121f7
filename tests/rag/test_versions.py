"""Document versions over the real stores, on both backends: named uploads, a new version re-embedding only
changed chunks, the live version searchable while the next one ingests, earlier versions readable, citable
and searchable by number, the comparison of two versions, "what changed" answers, and deletion of every
version's chunks, vectors and bytes."""

from __future__ import annotations

import asyncio

import pytest

from services.rag.catalog import DocumentCatalog
from services.rag.documents import DocumentStatus, IngestOutcome, IngestProgress, IngestStage, document_id_for_key
from services.rag.versions.catalog import VersionCatalog
from services.rag.versions.changes import ChangeQuestions, is_change_question
from services.rag.versions.diff import ChangeKind
from services.rag.versions.model import VersionState
from services.rag.versions.search import VersionedIndex, VersionedLookup
from services.runtime.errors import DomainError

from .fakes import GatedEmbedder, HashEmbedder
from .probes import collect

pytestmark = pytest.mark.store_backends("embedded", "embedded-chroma", "postgres")

SECTIONS = [
    f"## Section {i}\n\nThe harbour office of district {i} opens at {7 + i % 3} in the morning. "
    f"Ferries of district {i} carry {100 + i} passengers and stop at pier {i % 5}.\n\n"
    f"Inspectors of district {i} check the moorings every {2 + i % 4} weeks and log rust on chain {i}."
    for i in range(40)
]
V1 = "# Harbour rules\n\n" + "\n\n".join(SECTIONS)
V2 = V1.replace("district 3 opens at 7 in the morning", "district 3 opens at 9 in the morning") \
       .replace("Ferries of district 20 carry 120 passengers", "Ferries of district 20 carry 180 passengers") \
       .replace("log rust on chain 33.", "log rust on chain 33 and on the anchor winch.")
KEY = "policies/harbour-rules.md"


async def _upload(runtime, data: str, key: str = KEY, tenant: str = "acme", name: str = "harbour-rules.md"):
    return await collect(runtime.pipeline.upload(tenant, name, "text/markdown", data.encode(), key=key))


def _outcome(events) -> IngestOutcome:
    assert isinstance(events[-1], IngestOutcome)
    return events[-1]


def test_three_edits_make_a_second_version_that_re_embeds_only_the_changed_chunks(open_runtime) -> None:
    embedder = HashEmbedder()
    runtime = open_runtime(embedder)
    first = _outcome(asyncio.run(_upload(runtime, V1)))
    assert first.document.document_id == document_id_for_key("acme", KEY)
    assert first.document.version == 1 and first.document.key == KEY
    chunks_v1 = first.document.chunk_count
    assert first.chunks_embedded == chunks_v1 and first.chunks_reused == 0
    embedded_before = sum(embedder.calls)

    events = asyncio.run(_upload(runtime, V2))
    second = _outcome(events)
    assert second.document.document_id == first.document.document_id  # one document, a new version
    assert second.document.version == 2 and second.document.status is DocumentStatus.READY
    assert second.chunks_embedded + second.chunks_reused == second.document.chunk_count
    assert 1 <= second.chunks_embedded <= 6  # three edits touch a handful of chunks (each with its overlap)
    assert sum(embedder.calls) - embedded_before == second.chunks_embedded  # the rest were never encoded
    reused_note = [e for e in events if isinstance(e, IngestProgress) and e.stage is IngestStage.EMBEDDED]
    assert "reused from earlier versions" in reused_note[-1].message

    versions = runtime.metadata.versions("acme", first.document.document_id)
    assert [(v.version, v.state) for v in versions] == [(2, VersionState.LIVE), (1, VersionState.SUPERSEDED)]
    assert versions[0].chunks_reused == second.chunks_reused and versions[1].chunk_count == chunks_v1
    # The same bytes again: the live version, no third one.
    again = _outcome(asyncio.run(_upload(runtime, V2)))
    assert again.duplicate and again.document.version == 2


def test_searches_read_the_live_version_unless_a_version_is_named(open_runtime) -> None:
    embedder = HashEmbedder()
    runtime = open_runtime(embedder)
    document_id = _outcome(asyncio.run(_upload(runtime, V1))).document.document_id
    asyncio.run(_upload(runtime, V2))
    index = VersionedIndex(runtime.index, runtime.metadata)
    query = "district 20 ferries passengers"
    vector = embedder.encode([query])[0]

    def top_text(document_ids):
        dense = index.dense_search("acme", vector, 1, document_ids)
        keyword = index.keyword_search("acme", query, 1, document_ids)
        assert dense and keyword and dense[0][0] == keyword[0][0]
        chunk = index.get_chunks("acme", [dense[0][0]])[0]
        return chunk.provenance.version, chunk.text

    live_version, live_text = top_text(None)
    assert live_version == 2 and "180 passengers" in live_text
    assert top_text([document_id]) == (live_version, live_text)
    assert top_text([f"{document_id}@2"]) == (live_version, live_text)
    old_version, old_text = top_text([f"{document_id}@1"])
    assert old_version == 1 and "120 passengers" in old_text
    # Nothing of version 1 is in the default search.
    hits = index.keyword_search("acme", "120 passengers district 20", 50, None)
    assert all(c.provenance.version == 2 for c in index.get_chunks("acme", [h[0] for h in hits]))
    lookup = VersionedLookup(runtime.metadata)
    assert lookup.get_document("acme", f"{document_id}@1") is not None
    assert lookup.get_document("acme", f"{document_id}@3") is None
    assert lookup.get_document("other", f"{document_id}@1") is None


def test_the_live_version_stays_searchable_while_the_next_one_ingests(open_runtime) -> None:
    gated = GatedEmbedder()
    gated.release.set()
    runtime = open_runtime(gated)
    document_id = _outcome(asyncio.run(_upload(runtime, V1))).document.document_id
    gated.release.clear()
    gated.entered.clear()

    async def scenario():
        upload = asyncio.ensure_future(_upload(runtime, V2))
        await asyncio.to_thread(gated.entered.wait, 10)
        during = runtime.metadata.get_document("acme", document_id)
        versions = runtime.metadata.versions("acme", document_id)
        hits = runtime.index.keyword_search("acme", "district 20 passengers", 3)
        listed = runtime.metadata.list_documents("acme", 10)
        gated.release.set()
        return during, versions, hits, listed, await upload

    during, versions, hits, listed, events = asyncio.run(scenario())
    assert during.status is DocumentStatus.READY and during.version == 1
    assert [(v.version, v.state) for v in versions] == [(2, VersionState.INGESTING), (1, VersionState.LIVE)]
    assert hits  # version 1 answered meanwhile
    assert [d.document_id for d in listed] == [document_id]  # the staging row is not a document of its own
    assert _outcome(events).document.version == 2


def test_bad_bytes_for_a_new_version_leave_the_live_one_untouched(open_runtime) -> None:
    runtime = open_runtime()
    document_id = _outcome(asyncio.run(_upload(runtime, V1))).document.document_id
    with pytest.raises(DomainError):
        asyncio.run(collect(runtime.pipeline.upload("acme", "harbour-rules.pdf", "application/pdf",
                                                     b"%PDF-1.7 not really", key=KEY)))
    record = runtime.metadata.get_document("acme", document_id)
    assert record.status is DocumentStatus.READY and record.version == 1
    assert [v.version for v in runtime.metadata.versions("acme", document_id)] == [1]
    assert runtime.index.keyword_search("acme", "harbour office", 1)


def test_earlier_versions_are_readable_and_compared_with_provenance(open_runtime, tmp_path) -> None:
    runtime = open_runtime()
    document_id = _outcome(asyncio.run(_upload(runtime, V1))).document.document_id
    asyncio.run(_upload(runtime, V2, name="harbour-rules-v2.md"))
    versions = VersionCatalog(DocumentCatalog(runtime.index, runtime.blobs, runtime.pipeline.locks),
                              runtime.metadata, runtime.blobs)

    async def read():
        return (await versions.content("acme", document_id, 1), await versions.content("acme", document_id, 0),
                await versions.text("acme", document_id, 1), await versions.compare("acme", document_id, 1, 2),
                await versions.compare("acme", document_id))

    (v1, bytes1), (live, bytes2), (_, sections1), comparison, default = asyncio.run(read())
    assert bytes1 == V1.encode() and v1.filename == "harbour-rules.md"
    assert bytes2 == V2.encode() and live.version == 2 and live.filename == "harbour-rules-v2.md"
    assert "district 20 carry 120" in "\n".join(s.text for s in sections1)
    assert default == comparison
    assert comparison.count(ChangeKind.CHANGED) == 3 and not comparison.count(ChangeKind.ADDED)
    changed = {c.before.text: c for c in comparison.changes}
    pairs = [(c.removed_words, c.added_words) for c in changed.values()]
    assert (("7",), ("9",)) in pairs and (("120",), ("180",)) in pairs
    for change in comparison.changes:  # each side's offsets slice that version's section text exactly
        assert sections1[change.before.section_index].text[change.before.char_start:change.before.char_end] \
            == change.before.text
    with pytest.raises(DomainError) as missing:
        asyncio.run(versions.content("acme", document_id, 7))
    assert missing.value.reason == "VERSION_NOT_FOUND"
    with pytest.raises(DomainError):
        asyncio.run(versions.content("other-tenant", document_id, 1))


def test_a_what_changed_question_is_answered_from_the_comparison_citing_both_versions(open_runtime) -> None:
    runtime = open_runtime()
    document_id = _outcome(asyncio.run(_upload(runtime, V1))).document.document_id
    asyncio.run(_upload(runtime, V2))
    catalog = DocumentCatalog(runtime.index, runtime.blobs, runtime.pipeline.locks)
    changes = ChangeQuestions(VersionCatalog(catalog, runtime.metadata, runtime.blobs), runtime.metadata)
    answer = asyncio.run(changes.answer("acme", "What changed between version 1 and version 2 of the harbour rules?"))
    assert answer is not None
    assert "3 passage(s) changed" in answer.answer and "180" in answer.answer and "120" in answer.answer
    cited = {c.chunk.provenance.version for c in answer.citations}
    assert cited == {1, 2}
    for citation in answer.citations:  # exact spans of the cited version's chunks
        p = citation.chunk.provenance
        assert citation.chunk.text[citation.char_start - p.char_start:citation.char_end - p.char_start] \
            == citation.excerpt
        assert citation.chunk.document_id == document_id
    # Not a question about versions, or a document with one version: the ordinary engine answers.
    assert asyncio.run(changes.answer("acme", "When does the harbour office of district 3 open?")) is None
    asyncio.run(_upload(runtime, "# Other\n\nA single version of another text.", key="other.md", name="other.md"))
    assert asyncio.run(changes.answer("acme", "What changed in the latest version?",
                                      [document_id_for_key("acme", "other.md")])) is None


def test_deleting_a_document_deletes_every_version(open_runtime) -> None:
    runtime = open_runtime()
    document_id = _outcome(asyncio.run(_upload(runtime, V1))).document.document_id
    asyncio.run(_upload(runtime, V2))
    # Another document with version 1's bytes keeps them.
    asyncio.run(_upload(runtime, V1, key="copies/harbour.md"))
    archived = runtime.metadata.archived_vectors("acme", document_id)
    assert archived and all(a.vector is not None for a in archived)
    catalog = DocumentCatalog(runtime.index, runtime.blobs, runtime.pipeline.locks)
    asyncio.run(catalog.delete("acme", document_id))
    assert runtime.metadata.versions("acme", document_id) == []
    assert runtime.metadata.archived_vectors("acme", document_id) == []
    assert runtime.metadata.archived_chunks_by_id("acme", [a.chunk_id for a in archived]) == []
    assert runtime.vectors.stored_ids("acme", document_id) == []
    import hashlib

    assert runtime.blobs.get("acme", hashlib.sha256(V2.encode()).hexdigest()) is None
    assert runtime.blobs.get("acme", hashlib.sha256(V1.encode()).hexdigest()) is not None  # still the copy's
    assert [d.key for d in runtime.metadata.list_documents("acme", 10)] == ["copies/harbour.md"]


def test_change_questions_are_recognised_by_kind_not_wording() -> None:
    assert is_change_question("What changed between the March and June versions?")
    assert is_change_question("How does v2 differ from v1?")
    assert is_change_question("compare the previous revision with the latest one")
    assert not is_change_question("How did revenue change in 2023?")
    assert not is_change_question("Which version of Python does the project need?")


def test_versions_are_chosen_by_number_month_or_position() -> None:
    import datetime as dt

    from services.rag.versions.changes import choose_versions
    from services.rag.versions.model import DocumentVersion

    def version(number: int, month: int) -> DocumentVersion:
        stamp = dt.datetime(2026, month, 10).timestamp()
        return DocumentVersion("d", number, VersionState.SUPERSEDED, "p.md", "markdown", "text/markdown", "x", 1, stamp)

    published = [version(1, 3), version(2, 6), version(3, 9)]
    pick = lambda question, pinned=(): tuple(v.version for v in choose_versions(question, published, pinned))  # noqa: E731
    assert pick("What changed between the March and June versions?") == (1, 2)
    assert pick("what changed in version 2?") == (1, 2)  # what version 2 changed
    assert pick("what changed since version 2?") == (2, 3)
    assert pick("How does v3 differ from v1?") == (1, 3)
    assert pick("differences between versions 1 and 2") == (1, 2)
    assert pick("What changed in the latest revision?") == (2, 3)  # by default: the previous and the live one
    assert pick("What changed since the first version?") == (1, 3)
    assert pick("What was new in the June version?") == (1, 2)
    assert pick("what changed?", pinned=(1,)) == (1, 2)
