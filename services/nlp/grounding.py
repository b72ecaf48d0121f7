"""What the generative operations know about a document before asking an LLM, and what
they fall back to when the LLM's answer is unusable.

A weak model (the offline SmolLM2-135M) rambles or drifts off the document, so prompts
carry the document's extractive summary and key ideas, answers must share vocabulary with
the document to count, and when too few answers survive, discussion points and
recommendations are built deterministically from the key ideas and from the document's
own directive sentences ("should", "must", "recommend", ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.nlp import key_ideas, summarize
from services.nlp.prepared import PreparedText, prose_like
from services.vocabulary.text import STOPWORDS, words

_QUESTION_TEMPLATES = (
    'What evidence in the document supports this point: "{idea}"?',
    'What would follow if this holds: "{idea}"?',
    'What assumptions lie behind this statement: "{idea}"?',
    'How does this connect to the rest of the document: "{idea}"?',
    'What remains open or debatable here: "{idea}"?',
)
_QUOTES = re.compile(r"[\"“”]")
_EDGE_QUOTES = "\"'“”‘’ "
# Cue -> priority (1 high, 2 medium, 3 low), strongest first.
_DIRECTIVES = (
    (re.compile(r"\b(must|required|critical|urgent(?:ly)?|need(?:s)? to|have to|essential)\b", re.I), 1),
    (re.compile(r"\b(should|recommend(?:s|ed)?|ought to|advis(?:e|ed|able)|important to)\b", re.I), 2),
    (re.compile(r"\b(consider|could|may want to|might|suggest(?:s|ed)?)\b", re.I), 3),
)


@dataclass(frozen=True)
class Grounding:
    summary: str
    ideas: tuple[str, ...]
    directives: tuple[tuple[str, int], ...]
    """Sentences of the document that tell the reader to act, with a priority (1 high .. 3 low)."""
    vocabulary: frozenset[str]

    def prompt_context(self) -> str:
        ideas = "\n".join(f"- {idea}" for idea in self.ideas)
        return f"Summary:\n{self.summary}\n\nKey ideas:\n{ideas}"

    def mentions_document(self, text: str) -> bool:
        """Whether ``text`` shares at least one content word with the document."""
        return bool(content_words(text) & self.vocabulary)


def content_words(text: str) -> set[str]:
    return {w.lower() for w in words(text) if len(w) > 3 and w.lower() not in STOPWORDS and not w.isdigit()}


def build(prepared: PreparedText) -> Grounding:
    """Extractive summary, key ideas and directive sentences (CPU-bound: call from a worker thread)."""
    summary = summarize.extractive(prepared, summarize.Style.NARRATIVE, summarize.Limits()).summary
    ideas = key_ideas.extractive(prepared, key_ideas.DEFAULT_IDEAS).ideas
    directives: list[tuple[str, int]] = []
    for index in range(len(prepared.spans)):
        sentence = " ".join(prepared.sentence(index).split())
        priority = directive_priority(sentence)
        # Quoted speech ("I must go," said the prince) tells a character, not the reader, to act.
        if priority is not None and prose_like(sentence) and not _QUOTES.search(sentence):
            directives.append((sentence, priority))
    return Grounding(summary, ideas, tuple(directives), frozenset(content_words(prepared.text)))


def directive_priority(sentence: str) -> int | None:
    for pattern, priority in _DIRECTIVES:
        if pattern.search(sentence):
            return priority
    return None


def fallback_questions(grounding: Grounding, limit: int = 5) -> list[str]:
    return [
        _QUESTION_TEMPLATES[i % len(_QUESTION_TEMPLATES)].format(idea=_bare(idea))
        for i, idea in enumerate(grounding.ideas[:limit])
    ]


def _bare(sentence: str) -> str:
    """``sentence`` without its own surrounding quotes and final punctuation, to quote it again."""
    return sentence.strip(_EDGE_QUOTES).rstrip(".!?;:,-").strip(_EDGE_QUOTES)


@dataclass(frozen=True)
class Advice:
    recommendation: str
    rationale: str
    priority: int
    """1 high, 2 medium, 3 low."""


def fallback_advice(grounding: Grounding, limit: int = 5) -> list[Advice]:
    """The document's own directives, strongest first; key ideas to follow up when too few."""
    ranked = sorted(enumerate(grounding.directives), key=lambda item: (item[1][1], item[0]))
    advice = [
        Advice(sentence, "The document states this as something to do.", priority)
        for _, (sentence, priority) in ranked[:limit]
    ]
    for rank, idea in enumerate(grounding.ideas, start=1):
        if len(advice) >= min(limit, 3):
            break
        advice.append(
            Advice(
                f'Review and act on this central point of the document: "{_bare(idea)}".',
                f"It is key idea {rank} of the document (by centrality).",
                2 if rank == 1 else 3,
            )
        )
    return advice
