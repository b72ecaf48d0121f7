"""Evidence a question's form points at, wherever the fused ranking put it.

Two questions are answered by a document's structure rather than by words shared with them:
- "who signed / wrote / sent the memo": the name under a letter's sign-off ("Best regards,"
  then "Mallori") or on its "From:" line; the memo never says "signed";
- "what does ICT stand for": the passage that defines the acronym ("inverse cloze task (ICT)"),
  usually its first use, while later chunks that only use it share more words with the question.

``promote`` moves such chunks to the front of the evidence (the definition is also searched
for by the acronym alone); the reader then reads them (``sign_off`` for the name).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from services.rag.answers.sentences import Span
from services.rag.answers.typed_spans import acronym_expansion, acronyms_in
from services.rag.retrieval import RetrievedChunk

_ASKS_SIGNER = re.compile(
    r"^\s*(?:who\s+(?:signed|wrote|sent|authored|penned)\b|who\s+(?:is|was)\s+(?:the\s+|this\s+|that\s+)?"
    r"(?:memo|letter|e-?mail|note|message|notice)\s+from\b|from\s+whom\b)", re.I)
_VALEDICTION = re.compile(
    r"^\s*(?:(?:best|kind|warm|warmest|kindest)\s+regards|regards|sincerely(?:\s+yours)?|yours\s+(?:truly|sincerely|"
    r"faithfully)|respectfully(?:\s+yours)?|best\s+wishes|best|cheers|thanks|thank\s+you|cordially|with\s+thanks)\s*[,.!]?\s*$",
    re.I | re.M)
_FROM_LINE = re.compile(r"^\s*from\s*:\s*(?P<name>[^\n<@]{2,60}?)\s*(?:<[^>\n]*>)?\s*$", re.I | re.M)
_NAME_LINE = re.compile(r"[A-Z][\w.'’-]*(?:[ \t]+[A-Z][\w.'’-]*){0,3}")


def asks_signer(question: str) -> bool:
    return bool(_ASKS_SIGNER.search(question))


def sign_off(text: str) -> Span | None:
    """The signer's name: the line under the last sign-off, else a "From:" line."""
    for valediction in reversed(list(_VALEDICTION.finditer(text))):
        rest = text[valediction.end():]
        line = re.match(r"\s*\n[ \t]*([^\n]+)", rest)
        if line:
            name = _NAME_LINE.fullmatch(line.group(1).strip())
            if name:
                start = valediction.end() + line.start(1) + (len(line.group(1)) - len(line.group(1).lstrip()))
                end = start + len(line.group(1).strip())
                return Span(start, end, text[start:end])
    sender = _FROM_LINE.search(text)
    if sender:
        return Span(sender.start("name"), sender.end("name"), sender.group("name"))
    return None


def defines(text: str, acronyms: Sequence[str]) -> bool:
    return any(acronym_expansion(text, a) is not None for a in acronyms)


def promote(question: str, ranked: Sequence[RetrievedChunk], extra: Sequence[RetrievedChunk] = ()) -> list[RetrievedChunk]:
    """``ranked`` with the chunks the question's form points at first (their order kept); ``extra`` are
    more candidates found for it (by the acronym alone), taken only when they qualify."""
    if asks_signer(question):
        wanted = lambda hit: sign_off(hit.chunk.text) is not None  # noqa: E731
    elif acronyms := acronyms_in(question):
        wanted = lambda hit: defines(hit.chunk.text, acronyms)  # noqa: E731
    else:
        return list(ranked)
    seen = {h.chunk.chunk_id for h in ranked}
    pool = [*ranked, *(h for h in extra if h.chunk.chunk_id not in seen)]
    first = [h for h in pool if wanted(h)]
    if not first:
        return list(ranked)
    chosen = {h.chunk.chunk_id for h in first}
    return [*first, *(h for h in ranked if h.chunk.chunk_id not in chosen)]
