"""Ties each agent's answer to the passages it was given, and says how (the grounding verdict).

A weak model often answers with a bare marker ("[2]") or a loose restatement; a strong one
cites properly. Either way the reader should see the evidence: the passages an answer cites
(or, when it cites none, the ones it visibly restates) are appended under "Sources", quoted
as the agent saw them, and returned as citations: exact spans of the document's text. An
answer that neither cites nor restates any passage is not passed off as grounded: its verdict
is UNSUPPORTED, it has no citations, and its text says so. The contract callers (and tests)
rely on is that verdict, never the model's wording.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass

from services.rag.answers import lexical
from services.rag.crew.evidence import Snippet

_MARKER = re.compile(r"\[(\d{1,2})\]")
MIN_SHARED_TERMS = 3
"""Content terms an uncited answer must share with a passage to count as restating it."""
NO_ANSWER = "The model gave no usable answer; these are the passages it was given."
UNSUPPORTED = "Sources: none of the passages supports this answer."


class Verdict(enum.IntEnum):
    """How an answer is tied to its passages (the values of ``CrewGrounding`` in the contract)."""

    CITED = 1
    """It cites passages by number; those are its citations."""
    RESTATED = 2
    """It cites none but restates passages (``MIN_SHARED_TERMS`` content terms in common)."""
    NO_ANSWER = 3
    """The model wrote nothing usable; the passages it was given are shown (and cited) instead."""
    UNSUPPORTED = 4
    """Neither cites nor restates a passage: marked so in the text, no citations."""


@dataclass(frozen=True)
class Grounded:
    text: str
    """The answer with its sources quoted (or the UNSUPPORTED note)."""
    verdict: Verdict
    cited: tuple[int, ...]
    """1-based numbers of the passages the answer rests on (empty when UNSUPPORTED)."""


def cited(text: str, passages: Sequence[Snippet]) -> tuple[Verdict, list[int]]:
    """The passages ``text`` cites by marker, or else visibly restates, and which of the two."""
    numbers = sorted({int(n) for n in _MARKER.findall(text) if 1 <= int(n) <= len(passages)})
    if numbers:
        return Verdict.CITED, numbers
    terms = lexical.content_terms(text)
    restated = [i for i, p in enumerate(passages, 1)
                if len(terms & lexical.content_terms(p.snippet)) >= MIN_SHARED_TERMS]
    return (Verdict.RESTATED, restated) if restated else (Verdict.UNSUPPORTED, [])


def ground(text: str, passages: Sequence[Snippet], fallback: int = 3) -> Grounded:
    if not passages:
        return Grounded(text, Verdict.UNSUPPORTED, ()) if text.strip() else Grounded(text, Verdict.NO_ANSWER, ())
    if not text.strip():
        text, verdict, numbers = NO_ANSWER, Verdict.NO_ANSWER, list(range(1, min(fallback, len(passages)) + 1))
    else:
        verdict, numbers = cited(text, passages)
    if not numbers:
        return Grounded(f"{text}\n\n{UNSUPPORTED}", Verdict.UNSUPPORTED, ())
    flat = " ".join(text.split())
    quoted = [f"[{n}] {passages[n - 1].snippet}" for n in numbers if passages[n - 1].snippet not in flat]
    shown = f"{text}\n\nSources:\n" + "\n".join(quoted) if quoted else text
    return Grounded(shown, verdict, tuple(numbers))
