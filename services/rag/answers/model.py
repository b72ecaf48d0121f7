"""Domain types of a grounded answer; the transport maps them to ``docuthinker.rag.v1.Answer``."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from services.rag.documents import Chunk
from services.rag.retrieval import RetrievedChunk

REFUSAL = "I could not find enough evidence in the provided documents to answer this question."
"""The one fixed sentence of every abstention (the seed's wording, which clients may match on)."""


class SupportStatus(IntEnum):
    """Values equal ``docuthinker.rag.v1.SupportStatus``; NOT_APPLICABLE maps to UNSPECIFIED."""

    NOT_APPLICABLE = 0
    """Nothing factual was claimed (a greeting answered without retrieval)."""
    SUPPORTED = 1
    PARTIAL = 2
    INSUFFICIENT = 3


def with_marker(sentence: str, marker: int) -> str:
    """Puts a citation marker before the final stop (e.g. "opened in 1998 [2].")."""
    body = " ".join(sentence.split())
    stop = body[-1] if body and body[-1] in ".!?" else "."
    return f"{body.rstrip('.!?').rstrip()} [{marker}]{stop}"


@dataclass(frozen=True)
class Citation:
    """An exact span of a page (or section) text: ``page_text[char_start:char_end] == excerpt``."""

    marker: int
    chunk: Chunk
    char_start: int
    char_end: int
    excerpt: str
    score: float
    row_label: str = ""
    """A table cell's row (its label cell), when the answer is a cell."""
    column_header: str = ""
    """A table cell's column header, when the answer is a cell."""
    answer_start: int = -1
    """Offsets of the short answer inside the page text (within the cited span); -1 when none."""
    answer_end: int = -1
    short_answer: str = ""
    answer_type: str = ""


@dataclass(frozen=True)
class AnswerSentence:
    text: str
    markers: tuple[int, ...]
    supported: bool
    support_score: float
    part: int = 0
    """Index of the sub-question this sentence answers (agent graph); 0 for a plain question."""


@dataclass(frozen=True)
class Engine:
    provider: str = "local"
    model: str = "docuthinker-extractive"


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class GroundedAnswer:
    question: str
    answer: str
    """Answer text; each sentence ends with its citation markers, e.g. "... in 1066 [1]."."""
    citations: tuple[Citation, ...]
    retrieved: tuple[RetrievedChunk, ...]
    support_status: SupportStatus
    confidence_note: str
    sentences: tuple[AnswerSentence, ...] = ()
    engine: Engine = field(default_factory=Engine)
    usage: Usage = field(default_factory=Usage)
    short_answer: str = ""
    """Shortest span of the best sentence that answers the question (extractive engine), else ""."""
    answer_type: str = ""
    """The answer type the question asks for (``answer_types.AnswerType``; extractive engine), else ""."""

    @property
    def abstained(self) -> bool:
        return not self.sentences
