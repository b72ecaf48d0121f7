"""What changed between two versions of a document: added, removed and changed passages with provenance.

Each version's extracted sections are cut into passages (paragraphs; the lines of tables and lists; the
sentences of a paragraph too long to cite whole), each with the exact span of its section text it came
from, so a change cites the same offsets a search hit does. The two passage sequences are aligned with
``difflib`` (longest matching blocks, whitespace ignored); inside a block replaced by another, passages
are paired by word similarity, in order, and a pair is a changed passage with the words taken out and put
in; the rest are removed or added. A passage that only moved (the same text elsewhere) is not a change.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from services.rag.documents import Section

LONG_PASSAGE = 700
"""Characters past which a paragraph is compared sentence by sentence."""
PAIRING = 0.5
"""Word similarity (difflib ratio) from which a removed and an added passage are one changed passage."""

_PARAGRAPH = re.compile(r"\n[ \t]*\n+")
_SENTENCE = re.compile(r"(?<=[.!?;])[\"')\]]*\s+(?=\S)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\(?\d{1,3}[.)]|\(?[a-z][.)])\s+")
_WORDS = re.compile(r"\S+")


class ChangeKind(IntEnum):
    """Values equal the proto's ``PassageChange.Kind``."""

    ADDED = 1
    REMOVED = 2
    CHANGED = 3


@dataclass(frozen=True)
class Passage:
    version: int
    section_index: int
    char_start: int
    char_end: int
    text: str
    page: int = 0
    sheet_name: str = ""
    heading_path: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return " ".join(self.text.split())


@dataclass(frozen=True)
class Change:
    kind: ChangeKind
    before: Passage | None
    after: Passage | None
    removed_words: tuple[str, ...] = ()
    """Changed passages: the runs of words the new version no longer has."""
    added_words: tuple[str, ...] = ()
    """Changed passages: the runs of words the new version put in."""


@dataclass(frozen=True)
class Comparison:
    document_id: str
    from_version: int
    to_version: int
    changes: tuple[Change, ...]
    unchanged: int
    """Passages both versions have."""

    def count(self, kind: ChangeKind) -> int:
        return sum(c.kind is kind for c in self.changes)


def passages(sections: Sequence[Section], version: int) -> list[Passage]:
    """The passages of a version, in reading order, each an exact span of its section's text."""
    found: list[Passage] = []
    for index, section in enumerate(sections):
        for start, end in _spans(section):
            found.append(Passage(version, index, start, end, section.text[start:end], section.page,
                                 section.sheet_name, section.heading_path))
    return found


def _spans(section: Section) -> list[tuple[int, int]]:
    text = section.text
    spans: list[tuple[int, int]] = []
    position = 0
    for match in [*_PARAGRAPH.finditer(text), None]:
        end = match.start() if match else len(text)
        spans.extend(_paragraph(text, position, end, bool(section.row_starts)))
        position = match.end() if match else len(text)
    return spans


def _paragraph(text: str, start: int, end: int, tabular: bool) -> list[tuple[int, int]]:
    start, end = _strip(text, start, end)
    if start >= end:
        return []
    lines = _pieces(text, start, end, re.compile(r"\n"))
    if len(lines) > 1 and (tabular or sum(bool(_LIST_ITEM.match(text[a:b])) for a, b in lines) >= len(lines) / 2
                           or "|" in text[start:end]):
        return lines
    if end - start > LONG_PASSAGE:
        return _pieces(text, start, end, _SENTENCE)
    return [(start, end)]


def _pieces(text: str, start: int, end: int, separator: re.Pattern[str]) -> list[tuple[int, int]]:
    pieces = []
    position = start
    for match in [*separator.finditer(text, start, end), None]:
        stop = match.start() if match else end
        a, b = _strip(text, position, stop)
        if a < b:
            pieces.append((a, b))
        position = match.end() if match else end
    return pieces


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def compare(document_id: str, before: Sequence[Section], after: Sequence[Section], from_version: int,
            to_version: int) -> Comparison:
    """The changes from version ``from_version`` (``before``'s sections) to ``to_version`` (``after``'s)."""
    old, new = passages(before, from_version), passages(after, to_version)
    matcher = difflib.SequenceMatcher(None, [p.key for p in old], [p.key for p in new], autojunk=False)
    changes: list[Change] = []
    unchanged = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            unchanged += i2 - i1
        else:
            changes.extend(_block(old[i1:i2], new[j1:j2]))
    removed = {c.before.key for c in changes if c.kind is ChangeKind.REMOVED and c.before is not None}
    added = {c.after.key for c in changes if c.kind is ChangeKind.ADDED and c.after is not None}
    moved = removed & added
    kept = [c for c in changes if c.kind is ChangeKind.CHANGED
            or (c.before if c.kind is ChangeKind.REMOVED else c.after).key not in moved]  # type: ignore[union-attr]
    unchanged += len(moved)
    return Comparison(document_id, from_version, to_version, tuple(kept), unchanged)


def _block(old: Sequence[Passage], new: Sequence[Passage]) -> list[Change]:
    """One replaced block: passages paired in order by word similarity; the others removed or added."""
    pairs: list[tuple[int, int]] = []
    next_new = 0
    for i, passage in enumerate(old):
        best, best_ratio = None, PAIRING
        for j in range(next_new, len(new)):
            ratio = _similarity(passage.text, new[j].text)
            if ratio >= best_ratio:
                best, best_ratio = j, ratio
        if best is not None:
            pairs.append((i, best))
            next_new = best + 1
    paired_old = {i for i, _ in pairs}
    paired_new = {j: i for i, j in pairs}
    changes: list[Change] = []
    old_position = 0
    for j, passage in enumerate(new):
        if j in paired_new:
            i = paired_new[j]
            changes.extend(Change(ChangeKind.REMOVED, old[k], None) for k in range(old_position, i)
                           if k not in paired_old)
            removed, added = _word_changes(old[i].text, passage.text)
            changes.append(Change(ChangeKind.CHANGED, old[i], passage, removed, added))
            old_position = i + 1
        else:
            changes.append(Change(ChangeKind.ADDED, None, passage))
    changes.extend(Change(ChangeKind.REMOVED, old[k], None) for k in range(old_position, len(old))
                   if k not in paired_old)
    return changes


def _similarity(a: str, b: str) -> float:
    words_a, words_b = _WORDS.findall(a), _WORDS.findall(b)
    matcher = difflib.SequenceMatcher(None, words_a, words_b, autojunk=False)
    if matcher.real_quick_ratio() < PAIRING or matcher.quick_ratio() < PAIRING:
        return 0.0
    return matcher.ratio()


def _word_changes(before: str, after: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    words_a, words_b = _WORDS.findall(before), _WORDS.findall(after)
    removed: list[str] = []
    added: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, words_a, words_b, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            removed.append(" ".join(words_a[i1:i2]))
        if tag in ("replace", "insert"):
            added.append(" ".join(words_b[j1:j2]))
    return tuple(removed), tuple(added)
