"""A compound question split into its parts ("What is X and who is Y?" -> two questions).

Used by the answer engine (one answer per part) and by the agent planner (one sub-query per part).
"""

from __future__ import annotations

import re

MAX_SUB_QUERIES = 5

_NUMBERED = re.compile(r"(?:^|\s)(?:\(?\d{1,2}[.)]|[-*•])\s+", re.M)
_WH = r"(?:what|who|whom|whose|when|where|why|how|which|is|are|was|were|does|do|did|can|could|should|will)"
_AND_WH = re.compile(rf",?\s+(?:and|also|as\s+well\s+as|plus)\s+(?:also\s+)?(?={_WH}\b)", re.I)
_ALSO = re.compile(r";\s*(?:and\s+)?(?:also,?\s+)?|\.\s+also,?\s+|\?\s*also,?\s+", re.I)
_QUESTION_END = re.compile(r"(?<=\?)\s+(?=\S)")


def split_question(question: str) -> list[str]:
    text = question.strip()
    items = _numbered_items(text)
    if len(items) < 2:
        items = [p for part in _QUESTION_END.split(text) for p in _ALSO.split(part)]
        items = [q for part in items for q in _AND_WH.split(part)]
    cleaned = [_tidy(q) for q in items]
    cleaned = [q for q in cleaned if len(re.findall(r"\w+", q)) >= 2]
    if len(cleaned) > MAX_SUB_QUERIES:
        # Too many fragments means we probably cut a single long question wrongly.
        return [text]
    return cleaned or [text]


def _numbered_items(text: str) -> list[str]:
    marks = list(_NUMBERED.finditer(text))
    if len(marks) < 2:
        return []
    items = [text[m.end() : (marks[i + 1].start() if i + 1 < len(marks) else len(text))] for i, m in enumerate(marks)]
    return [i for i in items if i.strip()]


def _tidy(fragment: str) -> str:
    q = fragment.strip(" \t\n,;:.")
    if not q:
        return ""
    q = q[0].upper() + q[1:]
    return q + "?" if re.match(rf"{_WH}\b", q, re.I) and not q.endswith("?") else q
