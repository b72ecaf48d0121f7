"""Domain types of the analysis pipeline; the transport maps them to ``AnalyzeDocumentResponse``."""

from __future__ import annotations

from dataclasses import dataclass

from services.rag.analysis.nlp import Sentiment, Summary, Translation
from services.rag.answers.model import GroundedAnswer
from services.rag.crew import CrewResult, Topic
from services.runtime.errors import DomainError


@dataclass(frozen=True)
class AnalysisRequest:
    text: str = ""
    document_id: str = ""
    question: str = ""
    translate_lang: str = ""
    sync_graph: bool = False
    skip_crew: bool = False


@dataclass(frozen=True)
class Step:
    node: str
    summary: str
    duration_ms: float


@dataclass(frozen=True)
class AnalysisResult:
    document_id: str
    question: str
    overview: str
    summary: Summary
    topics: tuple[Topic, ...]
    answer: GroundedAnswer
    supporting_context: tuple[str, ...]
    crew: CrewResult | None
    """None when the crew could not run (``crew_error`` says why)."""
    sentiment: Sentiment | None
    translation: Translation | None
    translation_error: DomainError | None
    crew_error: DomainError | None
    steps: tuple[Step, ...]

    @property
    def steps_run(self) -> tuple[str, ...]:
        return tuple(s.node for s in self.steps)
