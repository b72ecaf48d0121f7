"""Ties each agent's answer to the passages it was given.

A weak model often answers with a bare marker ("[2]") or a loose restatement; a strong one
cites properly. Either way the reader should see the evidence: the passages an answer cites
(or, when it cites none, the ones it visibly restates) are appended under "Sources", quoted
as the agent saw them. An answer that neither cites nor restates any passage says so rather
than passing for grounded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from services.rag.answers import lexical
from services.rag.crew.evidence import Snippet

_MARKER = re.compile(r"\[(\d{1,2})\]")
MIN_SHARED_TERMS = 3
"""Content terms an uncited answer must share with a passage to count as restating it."""
NO_ANSWER = "The model gave no usable answer; these are the passages it was given."
UNSUPPORTED = "Sources: none of the passages supports this answer."


def cited(text: str, passages: Sequence[Snippet]) -> list[int]:
    """1-based numbers of the passages ``text`` cites, or else visibly restates."""
    numbers = sorted({int(n) for n in _MARKER.findall(text) if 1 <= int(n) <= len(passages)})
    if numbers:
        return numbers
    terms = lexical.content_terms(text)
    return [i for i, p in enumerate(passages, 1) if len(terms & lexical.content_terms(p.snippet)) >= MIN_SHARED_TERMS]


def with_sources(text: str, passages: Sequence[Snippet], fallback: int = 3) -> str:
    if not passages:
        return text
    if not text.strip():
        text, numbers = NO_ANSWER, list(range(1, min(fallback, len(passages)) + 1))
    else:
        numbers = cited(text, passages)
    if not numbers:
        return f"{text}\n\n{UNSUPPORTED}"
    flat = " ".join(text.split())
    quoted = [f"[{n}] {passages[n - 1].snippet}" for n in numbers if passages[n - 1].snippet not in flat]
    return f"{text}\n\nSources:\n" + "\n".join(quoted) if quoted else text
