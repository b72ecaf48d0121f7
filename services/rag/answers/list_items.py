"""List answers: the items of bullet lines, of an enumeration "A, B and C", or the people of a by-line.

Every item carries its exact offsets inside the chunk text, so a list answer cites what it lists.
"""

from __future__ import annotations

import re

from services.rag.answers.sentences import Span, split_sentences
from services.rag.answers.spans import entity_spans

Item = tuple[int, int, str]
"""(start, end, text) inside the chunk text."""

_PART = r"(?:[^,;:]|,(?=\d))+"
_ENUMERATION = re.compile(rf"{_PART}(?:,\s*{_PART})+,?\s+(?:and|or)\s+(?:[^,;:.]|,(?=\d)|\.(?=\d))+")
_BULLET = re.compile(r"^\s*(?:[-*•▪‣◦]|\d{1,3}[.)]|[a-zA-Z][.)])\s+")

WHO_LIST = re.compile(r"^\s*who\b|\b(?:authors|people|persons|members|players|speakers|signatories)\b", re.I)
MIN_PEOPLE = 3
"""Names of people in one sentence that make it a list of them (two are a pair in a sentence, not a by-line)."""


def with_next(text: str, span: Span) -> Span:
    """The sentence and the one after it (PDF by-lines are cut into "sentences" at their footnote marks)."""
    following = next((s for s in split_sentences(text) if s.start >= span.end), None)
    end = following.end if following is not None else span.end
    return Span(span.start, end, text[span.start:end])


def people_in(span: Span) -> list[Item]:
    """The people a sentence names, when it names several (a by-line, a list of members)."""
    found = [(span.start + start, span.start + end, span.text[start:end])
             for label, start, end in entity_spans(span.text) if label == "PERSON"]
    return found if len(found) >= MIN_PEOPLE else []


def bullets_after(text: str, span: Span) -> list[Item]:
    """Bullet lines right after (or making up) a sentence: the list it introduces."""
    items: list[Item] = []
    pos = text.find("\n", span.start if span.text.endswith(":") else span.end)
    lines = text[span.start:].splitlines(keepends=True)
    offset = span.start
    for line in lines:
        start = offset
        offset += len(line)
        if start < span.start:
            continue
        marker = _BULLET.match(line)
        if marker:
            body = line[marker.end():].strip()
            if body:
                s = start + marker.end()
                items.append((s, s + len(body), body))
        elif items and line.strip():
            break
    del pos
    return items if len(items) >= 2 else []


def enumeration(span: Span) -> list[Item]:
    """The items of "A, B and C" inside a sentence."""
    match = _ENUMERATION.search(span.text)
    if not match:
        return []
    body = match.group(0)
    base = span.start + match.start()
    parts = re.split(r",(?!\d)\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+", body)
    items = []
    pos = 0
    for part in parts:
        value = part.strip()
        if not value:
            continue
        at = body.find(value, pos)
        pos = at + len(value)
        items.append((base + at, base + at + len(value), value))
    # Items are short: keep them from the end back to the first long part, whose tail after its
    # last linking word ("commentator for Sky Sports") is the first item.
    if items and len(items[-1][2].split()) > 5:
        # The last item runs on into the sentence ("GitHub had millions ..."): keep its leading name.
        s, e, v = items[-1]
        lead = re.match(r"(?:[A-Z0-9][\w.&'-]*\s?){1,4}", v)
        head = lead.group(0).strip() if lead else " ".join(v.split()[:3])
        items[-1] = (s, s + len(head), head)
    kept: list[Item] = []
    for s, e, v in reversed(items):
        words = v.split()
        if len(words) <= 5:
            kept.insert(0, (s, e, v))
            continue
        tail = re.search(r"(?:^|\s)(?:for|of|like|including|include|includes|as|are|were|was|is|with|such as)\s+"
                         r"((?:\S+\s*){1,4})$", v)
        if tail:
            at = v.rfind(tail.group(1))
            kept.insert(0, (s + at, e, tail.group(1).strip()))
        break
    items = kept
    return items if len(items) >= 2 else []
