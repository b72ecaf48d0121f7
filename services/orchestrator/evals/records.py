"""What the evaluation store keeps: sets, runs and per-item results, as plain values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from services.orchestrator.evals.sets import EvalItem

RUNNING, SUCCEEDED, CANCELLED, FAILED, INTERRUPTED = "running", "succeeded", "cancelled", "failed", "interrupted"
STATES = (RUNNING, SUCCEEDED, CANCELLED, FAILED, INTERRUPTED)
"""``interrupted``: the orchestrator running it stopped (or lost its lease) before the end; the items done are kept."""
ANSWER, AGENT = "answer", "agent"
MODES = (ANSWER, AGENT)


@dataclass(frozen=True)
class EvalSet:
    id: str
    name: str
    format: str
    item_count: int
    created_at: float
    items: tuple[EvalItem, ...] = ()
    kinds: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class RunSettings:
    """What a run asks of the answer engine: the settings two runs are compared by."""

    mode: str = ANSWER
    """``answer`` (the grounded answer engine, rag Query) or ``agent`` (the agent graph, rag AgentQuery)."""
    top_k: int = 0
    """Chunks retrieved per question; 0: the rag service's default."""
    document_ids: tuple[str, ...] = ()
    """The selection the questions are asked over; empty: the whole library."""

    def as_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "top_k": self.top_k, "document_ids": list(self.document_ids)}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> RunSettings:
        return cls(str(raw.get("mode") or ANSWER), int(raw.get("top_k") or 0), tuple(raw.get("document_ids") or ()))


@dataclass(frozen=True)
class EvalRun:
    id: str
    set_id: str
    set_name: str
    label: str
    state: str
    total: int
    completed: int
    settings: RunSettings
    identities: Mapping[str, Any]
    """The models and mesh settings it ran with (``runner.identities``): the embedder, the answer engines seen."""
    created_at: float
    finished_at: float | None = None
    error: str = ""
    cancel_requested: bool = False
    totals: Mapping[str, Any] | None = None
    """``totals.breakdown`` of its results plus ``errors``; None until it ends (``EvalStore.totals`` computes it)."""

    @property
    def active(self) -> bool:
        return self.state == RUNNING


@dataclass(frozen=True)
class CitedSpan:
    filename: str
    document_id: str
    page: int
    sheet_name: str
    excerpt: str
    short_answer: str = ""


@dataclass(frozen=True)
class ItemResult:
    """One question of a run: what the engine said and how it scored."""

    position: int
    item: EvalItem
    answer: str
    short_answer: str
    support: str
    citations: tuple[CitedSpan, ...]
    seconds: float
    answered: bool
    correct: bool
    citation_hit: bool
    error: str = ""
    engine: str = ""

    # -- what ``totals.summarise`` reads ---------------------------------------------------------
    @property
    def kind(self) -> str:
        return self.item.kind

    @property
    def tags(self) -> tuple[str, ...]:
        return self.item.tags

    @property
    def answerable(self) -> bool:
        return self.item.answerable

    @property
    def refused(self) -> bool:
        return not self.answered and not self.error

    def as_json(self) -> dict[str, Any]:
        return {
            "position": self.position, "item": self.item.as_json(), "answer": self.answer,
            "short_answer": self.short_answer, "support": self.support,
            "citations": [c.__dict__ for c in self.citations], "seconds": self.seconds, "answered": self.answered,
            "correct": self.correct, "citation_hit": self.citation_hit, "error": self.error, "engine": self.engine,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> ItemResult:
        return cls(int(raw["position"]), EvalItem.from_json(raw["item"]), str(raw["answer"]), str(raw["short_answer"]),
                   str(raw["support"]), tuple(CitedSpan(**c) for c in raw.get("citations") or ()),
                   float(raw["seconds"]), bool(raw["answered"]), bool(raw["correct"]), bool(raw["citation_hit"]),
                   str(raw.get("error") or ""), str(raw.get("engine") or ""))
