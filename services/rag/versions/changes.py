"""Questions about what changed between versions of a document, answered from the comparison of the two.

A question is one when it asks about change ("what changed", "differences", "how does ... differ",
"compare", "revised", "updated") and speaks of versions ("version 2", "v1", "the March and June versions",
"the previous revision", "since the last upload"). The document is the one ``document_ids`` names, or, among
the tenant's documents that have several versions, the one the question names (its file name, title or
name words), else the one retrieval ranks first for the question. The versions are those the question
names by number, by month (of the version's upload), or as first/previous/latest; by default the version
before the live one and the live one. Anything else (no such document, one version only) is left to the
ordinary answer engine: ``answer`` returns None.

The answer lists the changed, added and removed passages, each cited: a changed passage cites its text in
both versions, so the answer cites both.
"""

from __future__ import annotations

import asyncio
import calendar
import datetime as dt
import re
from collections.abc import Awaitable, Callable, Sequence

from services.rag.answers.model import AnswerSentence, Citation, Engine, GroundedAnswer, SupportStatus
from services.rag.documents import Chunk, DocumentRecord
from services.rag.retrieval import RetrievedChunk
from services.rag.store.ports import MetadataPort
from services.rag.versions.catalog import READABLE, VersionCatalog
from services.rag.versions.diff import Change, ChangeKind, Comparison, Passage
from services.rag.versions.model import DocumentVersion, split_version

MAX_CHANGES = 8
"""Changes spelled out in one answer; the rest are counted (the comparison endpoint lists them all)."""
EXCERPT_CHARS = 160
ENGINE = Engine(provider="local", model="docuthinker-version-diff")

_CHANGE = re.compile(r"\b(chang\w*|differ\w*|diffs?|compar\w*|revis\w*|updated?|modif\w*|edit(?:s|ed)?|amend\w*|"
                     r"what'?s\s+new|new\s+in)\b", re.I)
_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): number for number, name in enumerate(calendar.month_abbr) if name})
_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
_MONTH = rf"(?:{_MONTH_NAMES})\b"
_VERSIONS = re.compile(r"\b(?:versions?|v\d+|revisions?|editions?|drafts?|iterations?)\b|"
                       r"\b(?:previous|prior|earlier|older|last|latest|newest|original|first)\s+(?:one|copy|upload|"
                       rf"file|document)\b|\bsince\s+(?:the\s+)?(?:last|previous|{_MONTH_NAMES})\b", re.I)
_NUMBER = re.compile(r"\b(?:v|version|revision|edition|draft)\s*#?\s*(\d{1,4})\b", re.I)
_NUMBERS = re.compile(r"\b(?:versions|revisions|editions|drafts)\s+#?(\d{1,4})\s*(?:and|to|vs\.?|versus|&|,|-)\s*"
                      r"#?(\d{1,4})\b", re.I)
_MONTH_WORD = re.compile(r"\b(?:" + "|".join(n.capitalize() for n in sorted(_MONTHS, key=len, reverse=True)) + r")\b")
"""Months as people write them in a question (capitalised: "may" is a verb)."""
_FIRST = re.compile(r"\b(?:first|original|initial|oldest)\b", re.I)
_PREVIOUS = re.compile(r"\b(?:previous|prior|earlier|older|last)\b(?!\s+(?:version|one)\s+(?:and|to))", re.I)
_WORD = re.compile(r"[A-Za-z0-9]{3,}")
_SINCE = re.compile(r"\b(?:since|after|from)\b", re.I)

Search = Callable[[str, str, int, Sequence[str]], Awaitable[Sequence[RetrievedChunk]]]
"""``search(tenant, question, top_k, document_ids)``: hybrid retrieval, to find the document asked about."""


def is_change_question(question: str) -> bool:
    return bool(_CHANGE.search(question)) and bool(_VERSIONS.search(question))


class ChangeQuestions:
    def __init__(self, versions: VersionCatalog, metadata: MetadataPort, search: Search | None = None) -> None:
        self._versions = versions
        self._metadata = metadata
        self._search = search

    async def answer(self, tenant: str, question: str, document_ids: Sequence[str] = ()) -> GroundedAnswer | None:
        """The answer from the comparison, or None when the question is not about versions of a document."""
        if not question.strip() or not is_change_question(question):
            return None
        record = await self._document(tenant, question, document_ids)
        if record is None:
            return None
        _, versions = await self._versions.versions(tenant, record.document_id)
        published = sorted((v for v in versions if v.state in READABLE), key=lambda v: v.version)
        if len(published) < 2:
            return None
        pinned = [v for d in document_ids if (p := split_version(d))[0] == record.document_id and
                  (v := p[1]) is not None]
        start, end = choose_versions(question, published, pinned)
        comparison = await self._versions.compare(tenant, record.document_id, start.version, end.version)
        chunks = {
            start.version: await self._versions.chunks(tenant, record.document_id, start.version),
            end.version: await self._versions.chunks(tenant, record.document_id, end.version),
        }
        return compose(question, record, start, end, comparison, chunks)

    async def _document(self, tenant: str, question: str, document_ids: Sequence[str]) -> DocumentRecord | None:
        named = list(dict.fromkeys(split_version(d)[0] for d in document_ids))
        if named:
            found = [r for d in named if (r := await asyncio.to_thread(self._metadata.get_document, tenant, d))
                     is not None and not r.version_of]
            candidates = [r for r in found if r.version > 1 or await self._has_history(tenant, r)]
        else:
            candidates = await asyncio.to_thread(self._metadata.versioned_documents, tenant)
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        scored = sorted(((_name_overlap(question, r), i, r) for i, r in enumerate(candidates)),
                        key=lambda t: (-t[0], t[1]))
        if scored[0][0] > 0:
            return scored[0][2]
        if self._search is not None:
            hits = await self._search(tenant, question, 5, [r.document_id for r in candidates][:100])
            by_id = {r.document_id: r for r in candidates}
            for hit in hits:
                if hit.chunk.document_id in by_id:
                    return by_id[hit.chunk.document_id]
        return candidates[0]

    async def _has_history(self, tenant: str, record: DocumentRecord) -> bool:
        versions = await asyncio.to_thread(self._metadata.versions, tenant, record.document_id)
        return sum(v.state in READABLE for v in versions) > 1


def _name_overlap(question: str, record: DocumentRecord) -> int:
    """Words of the document's name, title and key (3+ letters, not version words) the question uses."""
    name = " ".join((record.filename.rsplit(".", 1)[0], record.title, record.key))
    words = {w.lower() for w in _WORD.findall(re.sub(r"([a-z])([A-Z])", r"\1 \2", name))}
    words -= {"version", "versions", "draft", "final", "copy", "doc", "document", "file", "pdf", "txt", "docx"}
    asked = {w.lower() for w in _WORD.findall(question)}
    return len(words & asked)


def choose_versions(question: str, published: Sequence[DocumentVersion],
                    pinned: Sequence[int] = ()) -> tuple[DocumentVersion, DocumentVersion]:
    """(from, to) among the published versions (oldest first): two named (by number, by month, first) are compared
    with each other; one named is compared with the version before it ("what changed in version 2"), or with the
    live one after "since"; by default the version before the live one and the live one."""
    by_number = {v.version: v for v in published}
    live = published[-1]
    wanted: list[DocumentVersion] = [by_number[n] for n in pinned if n in by_number]
    pair = _NUMBERS.search(question)
    numbers = [int(n) for n in pair.groups()] if pair else [int(m) for m in _NUMBER.findall(question)]
    wanted += [by_number[n] for n in numbers if n in by_number]
    for month in _MONTH_WORD.findall(question):
        in_month = [v for v in published if dt.datetime.fromtimestamp(v.create_time).month == _MONTHS[month.lower()]]
        if in_month:
            wanted.append(in_month[-1])
    if not wanted and _FIRST.search(question):
        wanted.append(published[0])
    distinct = sorted({v.version: v for v in wanted}.values(), key=lambda v: v.version)
    if len(distinct) >= 2:
        return distinct[0], distinct[-1]
    if len(distinct) == 1:
        only = distinct[0]
        position = published.index(only)
        if _SINCE.search(question) and only.version != live.version:
            return only, live  # "since version 2": from it to now
        if position == 0:
            return only, published[1]  # "in the first version": what the next one changed of it
        return published[position - 1], only  # "in version 2": what version 2 changed
    return published[-2], live


def compose(question: str, record: DocumentRecord, start: DocumentVersion, end: DocumentVersion,
            comparison: Comparison, chunks: dict[int, list[Chunk]]) -> GroundedAnswer:
    """The cited answer: a summary sentence, then one sentence per change (at most ``MAX_CHANGES``)."""
    citations: list[Citation] = []
    sentences: list[AnswerSentence] = []
    name = record.title or record.filename

    def cite(passage: Passage) -> int | None:
        citation = _citation(passage, chunks.get(passage.version, []), len(citations) + 1)
        if citation is None:
            return None
        citations.append(citation)
        return citation.marker

    counts = (f"{comparison.count(ChangeKind.CHANGED)} passage(s) changed, {comparison.count(ChangeKind.ADDED)} "
              f"added and {comparison.count(ChangeKind.REMOVED)} removed")
    head = (f"Between version {start.version} ({_date(start)}) and version {end.version} ({_date(end)}) of "
            f"{name}: {counts}.")
    if not comparison.changes:
        head = (f"Version {start.version} ({_date(start)}) and version {end.version} ({_date(end)}) of {name} have "
                "the same text.")
    sentences.append(AnswerSentence(head, (), True, 1.0))
    for change in comparison.changes[:MAX_CHANGES]:
        text, markers = _describe(change, start.version, end.version, cite)
        sentences.append(AnswerSentence(text, markers, True, 1.0))
    rest = len(comparison.changes) - MAX_CHANGES
    if rest > 0:
        sentences.append(AnswerSentence(f"{rest} more change(s) are listed by the comparison of the two versions.",
                                        (), True, 1.0))
    answer = " ".join(_with_markers(s) for s in sentences)
    retrieved = tuple(dict((c.chunk.chunk_id, RetrievedChunk(c.chunk, 1.0)) for c in citations).values())
    return GroundedAnswer(
        question=question, answer=answer, citations=tuple(citations), retrieved=retrieved,
        support_status=SupportStatus.SUPPORTED,
        confidence_note=(f"Answered from the differences between version {start.version} and version {end.version} "
                         f"of {name} ({len(comparison.changes)} change(s), {comparison.unchanged} passage(s) the "
                         "same); each change cites its passage in the version it is from."),
        sentences=tuple(sentences), engine=ENGINE)


def _with_markers(sentence: AnswerSentence) -> str:
    """The sentence with its citation markers before its full stop ("... 45 days [2] [3].")."""
    if not sentence.markers:
        return sentence.text
    marks = " " + " ".join(f"[{m}]" for m in sentence.markers)
    text = sentence.text
    return text[:-1] + marks + "." if text.endswith(".") else text + marks


def _describe(change: Change, start: int, end: int, cite) -> tuple[str, tuple[int, ...]]:
    if change.kind is ChangeKind.CHANGED:
        assert change.before is not None and change.after is not None
        before, after = cite(change.before), cite(change.after)
        words = ""
        if change.removed_words or change.added_words:
            words = (f" ({_quote_list(change.removed_words) or 'nothing'} became "
                     f"{_quote_list(change.added_words) or 'nothing'})")
        text = (f"Changed{_where(change.after)}: version {start} said \"{_excerpt(change.before.text)}\" and version "
                f"{end} says \"{_excerpt(change.after.text)}\"{words}.")
        return text, tuple(m for m in (before, after) if m is not None)
    if change.kind is ChangeKind.ADDED:
        assert change.after is not None
        marker = cite(change.after)
        return (f"Added in version {end}{_where(change.after)}: \"{_excerpt(change.after.text)}\".",
                (marker,) if marker is not None else ())
    assert change.before is not None
    marker = cite(change.before)
    return (f"Removed from version {start}{_where(change.before)}: \"{_excerpt(change.before.text)}\".",
            (marker,) if marker is not None else ())


def _where(passage: Passage) -> str:
    parts = []
    if passage.heading_path:
        parts.append(f"under \"{passage.heading_path[-1]}\"")
    if passage.page:
        parts.append(f"on page {passage.page}")
    if passage.sheet_name:
        parts.append(f"in sheet {passage.sheet_name}")
    return (" " + ", ".join(parts)) if parts else ""


def _quote_list(runs: Sequence[str]) -> str:
    return ", ".join(f"\"{_excerpt(r, 60)}\"" for r in runs[:3] if r)


def _excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rsplit(" ", 1)[0] + "…"


def _date(version: DocumentVersion) -> str:
    return dt.datetime.fromtimestamp(version.create_time).strftime("%d %B %Y").lstrip("0")


def _citation(passage: Passage, chunks: Sequence[Chunk], marker: int) -> Citation | None:
    """The passage as a citation of the chunk of its version that holds most of it (clipped to that chunk)."""
    best, overlap = None, 0
    for chunk in chunks:
        p = chunk.provenance
        if p.section_index != passage.section_index:
            continue
        shared = min(p.char_end, passage.char_end) - max(p.char_start, passage.char_start)
        if shared > overlap:
            best, overlap = chunk, shared
    if best is None:
        return None
    p = best.provenance
    start, end = max(p.char_start, passage.char_start), min(p.char_end, passage.char_end)
    excerpt = best.text[start - p.char_start:end - p.char_start]
    return Citation(marker=marker, chunk=best, char_start=start, char_end=end, excerpt=excerpt, score=1.0)
