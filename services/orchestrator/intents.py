"""The supervisor's intents, the route map, and the classifier.

Classification order: an explicit intent, then a known route (confidence 1.0), then an LLM
when a remote provider serves the router task "classify", then, offline, a real classifier:
the request (all-MiniLM-L6-v2) goes to the intent whose examples' centroid is nearest, or to
``chat.general`` when no centroid reaches ``min_confidence``.

The centroid, not the nearest single example, decides: one example that happens to share a
word with a request ("points", "language", "budget") no longer outvotes the rest of its intent's
examples. On requests worded unlike any example (tests/orchestrator/test_intents.py), the nearest
example picked the right intent for 29 of 34 and the centroid for 32 of 34 (int8 default); the
margin over the runner-up is kept so callers and tests can tell a clear decision from a near tie.
Examples describe an intent in general; one shaped after a particular request's wording makes
that request pass while teaching the classifier nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from services.runtime.errors import FieldViolation, InvalidArgument

log = logging.getLogger("docuthinker.orchestrator.intents")

FALLBACK_INTENT = "chat.general"
FALLBACK_CONFIDENCE = 0.5
CLASSIFY_MAX_CHARS = 500


@dataclass(frozen=True)
class Intent:
    name: str
    description: str
    examples: tuple[str, ...]
    llm_task: str | None = None
    """Router task the intent may spend money on (budget checks); None: no LLM involved."""


INTENTS: dict[str, Intent] = {
    i.name: i
    for i in (
        Intent("document.upload", "Store a new document and analyse it", (
            "upload this document", "store this file and analyse it", "add this document to my library",
            "save this report", "ingest this text"), "summarize"),
        Intent("document.summarize", "Summarise a document in prose", (
            "summarize this document", "give me a summary", "what is this document about",
            "tl;dr of this text", "condense this report into a short summary"), "summarize"),
        Intent("document.keyIdeas", "Key ideas of a document", (
            "what are the key ideas", "list the main points", "extract the key takeaways",
            "what are the most important ideas in this text"), "key_ideas"),
        Intent("document.discussionPoints", "Questions worth discussing", (
            "generate discussion points", "what questions could we discuss about this",
            "give me questions for a book club", "discussion topics for a meeting about this document"),
            "discussion_points"),
        Intent("document.sentiment", "Sentiment and tone", (
            "what is the sentiment of this text", "is this review positive or negative",
            "analyse the tone of this document", "how does the author feel"), None),
        Intent("document.bulletSummary", "Bullet-point summary", (
            "summarize in bullet points", "give me a bulleted list of the main points",
            "bullet summary please", "make bullets out of this text"), "summarize"),
        Intent("document.rewrite", "Rewrite a text in a style", (
            "rewrite this in a formal tone", "make this text more casual", "rephrase this paragraph",
            "rewrite this for a ten-year-old", "improve the wording of this text"), "rewrite"),
        Intent("document.recommendations", "Actionable recommendations", (
            "what should I do based on this report", "give me actionable recommendations",
            "what actions do you recommend", "suggest next steps from this document"), "recommendations"),
        Intent("document.categorize", "Topics and categories of a document", (
            "categorize this document", "what topics does this cover", "classify this text by topic",
            "tag this document with categories"), None),
        Intent("document.analytics", "Text statistics", (
            "how many words are in this text", "reading time of this document", "readability score",
            "text statistics please", "word count and keyword frequency"), None),
        Intent("document.translate", "Translate a document", (
            "translate this into French", "summary in Spanish", "what does this say in German",
            "translate the document to Japanese"), "translate"),
        Intent("chat.document", "Chat about a document", (
            "what does the document say about pricing", "according to this report, who is responsible",
            "explain the second section of the document", "does the contract mention termination"), "chat"),
        Intent("chat.voice", "Chat by voice (audio)", (
            "process this audio recording", "transcribe my voice message", "answer my voice question"), "chat"),
        Intent("chat.general", "General conversation", (
            "hello", "how are you", "tell me a joke", "what can you do", "thanks"), "chat"),
        Intent("user.register", "Create an account", (
            "sign me up", "create an account", "register a new user"), None),
        Intent("user.login", "Log in", ("log me in", "sign in to my account", "login"), None),
        Intent("user.profile", "Profile and settings", (
            "show my profile", "update my email address", "change my account settings"), None),
        Intent("batch.multiDocument", "Process many documents at once", (
            "summarize all of these documents", "process these files in bulk", "run sentiment on every document",
            "batch process my documents"), "summarize"),
        Intent("rag.query", "Question answered from the stored documents with citations", (
            "search my documents for the refund policy", "find where the documents mention revenue",
            "across my files, what was the budget for 2024", "which of my documents talks about security"), "answer"),
        Intent("graph.query", "Knowledge graph query", (
            "which documents are related to this one", "show the knowledge graph connections for Acme",
            "what entities are connected to Ada Lovelace", "graph query for topics shared between documents"),
            None),
        Intent("system.health", "Health of the system", (
            "is the system healthy", "service status", "are all services up", "health check"), None),
        Intent("system.costs", "Spend and budgets", (
            "how much have we spent today", "show me the costs", "what is the LLM budget",
            "cost report for this month"), None),
    )
}

ROUTES: dict[str, str] = {
    "/upload": "document.upload",
    "/summarize": "document.summarize",
    "/refine-summary": "document.summarize",
    "/generate-key-ideas": "document.keyIdeas",
    "/generate-discussion-points": "document.discussionPoints",
    "/sentiment-analysis": "document.sentiment",
    "/bullet-summary": "document.bulletSummary",
    "/content-rewriting": "document.rewrite",
    "/actionable-recommendations": "document.recommendations",
    "/categorize": "document.categorize",
    "/analytics": "document.analytics",
    "/summary-in-language": "document.translate",
    "/translate": "document.translate",
    "/chat": "chat.document",
    "/process-audio": "chat.voice",
    "/register": "user.register",
    "/login": "user.login",
    "/profile": "user.profile",
    "/batch": "batch.multiDocument",
    "/query": "rag.query",
    "/graph/query": "graph.query",
    "/health": "system.health",
    "/costs": "system.costs",
}


@dataclass(frozen=True)
class Classification:
    intent: str
    confidence: float
    source: str
    """explicit, route-match, llm, classifier or fallback."""
    reasoning: str
    margin: float = 1.0
    """How far the intent's score is ahead of the runner-up's (1.0 when no classifier ranked them)."""


class Encoder(Protocol):
    """What the offline classifier needs from an embedding model (``services.models.embedder``)."""

    def encode(self, texts: list[str]) -> np.ndarray: ...


LlmClassify = Callable[[str], Awaitable[Mapping[str, Any] | None]]
"""Asks an LLM for {intent, confidence, reasoning}; returns None when no LLM is configured."""


class IntentClassifier:
    def __init__(
        self,
        encoder_factory: Callable[[], Encoder],
        *,
        min_confidence: float = 0.45,
        llm: LlmClassify | None = None,
    ) -> None:
        self._encoder_factory = encoder_factory
        self._min_confidence = min_confidence
        self._llm = llm
        self._index: _ExampleIndex | None = None

    def warm(self) -> None:
        """Loads the model and embeds the examples (blocking; call it in a thread)."""
        self._example_index()

    async def classify(
        self, *, intent: str = "", route: str = "", text: str = "", has_document: bool = False
    ) -> Classification:
        if intent:
            if intent not in INTENTS:
                raise InvalidArgument(
                    f"unknown intent {intent!r}",
                    reason="UNKNOWN_INTENT",
                    violations=[FieldViolation("intent", "one of " + ", ".join(sorted(INTENTS)))],
                )
            return Classification(intent, 1.0, "explicit", "intent given by the caller")
        if route:
            matched = ROUTES.get("/" + route.strip().strip("/").lower())
            if matched:
                return Classification(matched, 1.0, "route-match", f"route {route!r}")
        snippet = text.strip()[:CLASSIFY_MAX_CHARS]
        if not snippet:
            return Classification(FALLBACK_INTENT, FALLBACK_CONFIDENCE, "fallback", "nothing to classify")
        result = await self._ask_llm(snippet)
        if result is None:
            result = await asyncio.to_thread(self._nearest, snippet)
        if result.intent == "chat.general" and has_document and result.source != "fallback":
            return Classification("chat.document", result.confidence, result.source,
                                  result.reasoning + "; a document is attached, so chat about it")
        return result

    async def _ask_llm(self, snippet: str) -> Classification | None:
        if self._llm is None:
            return None
        try:
            answer = await self._llm(snippet)
        except Exception as exc:  # noqa: BLE001 - the offline classifier still answers
            log.warning("LLM intent classification failed; using the offline classifier",
                        extra={"fields": {"error": str(exc)}})
            return None
        if not answer or answer.get("intent") not in INTENTS:
            return None
        confidence = float(answer.get("confidence") or 0.0)
        return Classification(answer["intent"], max(0.0, min(1.0, confidence)), "llm",
                              str(answer.get("reasoning") or ""))

    def _example_index(self) -> _ExampleIndex:
        if self._index is None:
            encoder = self._encoder_factory()
            labelled = [(name, example) for name, i in INTENTS.items() for example in i.examples]
            vectors = encoder.encode([example for _, example in labelled])
            names = list(INTENTS)
            centroids = np.stack([vectors[[n == name for n, _ in labelled]].mean(axis=0) for name in names])
            centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
            self._index = _ExampleIndex(encoder, vectors, labelled, names, centroids)
        return self._index

    def _nearest(self, snippet: str) -> Classification:
        index = self._example_index()
        query = index.encoder.encode([snippet])[0]
        ranked = sorted(zip(index.names, (float(s) for s in index.centroids @ query), strict=True),
                        key=lambda kv: kv[1], reverse=True)
        (top, score), (runner_up, second) = ranked[0], ranked[1]
        example_scores = index.vectors @ query
        nearest = int(example_scores.argmax())
        reasoning = (f"nearest intent {top} ({score:.2f}); runner-up {runner_up} ({second:.2f}); nearest example "
                     f"{index.labelled[nearest][1]!r} ({example_scores[nearest]:.2f})")
        if score < self._min_confidence:
            return Classification(FALLBACK_INTENT, FALLBACK_CONFIDENCE, "fallback",
                                  f"no intent reached {self._min_confidence:.2f}: {reasoning}")
        return Classification(top, round(min(1.0, score), 4), "classifier", reasoning, round(score - second, 4))


@dataclass(frozen=True)
class _ExampleIndex:
    encoder: Encoder
    vectors: np.ndarray
    """One row per example, in the order of ``labelled``."""
    labelled: list[tuple[str, str]]
    """(intent, example) pairs."""
    names: list[str]
    centroids: np.ndarray
    """One unit row per intent of ``names``: the normalised mean of its examples' vectors."""


def llm_classification_prompt(snippet: str) -> tuple[str, str, dict[str, Any]]:
    """(system, user, json schema) for asking an LLM to classify a request."""
    catalogue = "\n".join(f"- {i.name}: {i.description}" for i in INTENTS.values())
    system = (
        "You route requests of a document-intelligence assistant. Pick the single best intent.\n"
        f"Intents:\n{catalogue}\nAnswer with JSON: intent, confidence (0..1), reasoning (one sentence)."
    )
    schema = {
        "type": "object",
        "properties": {
            "intent": {"type": "string", "enum": sorted(INTENTS)},
            "confidence": {"type": "number"},
            "reasoning": {"type": "string"},
        },
        "required": ["intent", "confidence", "reasoning"],
    }
    return system, json.dumps({"request": snippet}), schema
