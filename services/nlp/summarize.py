"""Summaries: extractive offline (MiniLM salience + MMR), abstractive when an LLM serves them.

The extractive summary is a set of verbatim source sentences with their offsets, in
document order, within both length bounds; the bullet style returns the same sentences
as bullets. Abstractive summaries are asked of the provider layer's ``summarize`` task;
when no provider serves it (offline), or its answer is unusable, the summary is extractive,
and ``engine`` says which one produced it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from enum import Enum

from pydantic import BaseModel, Field

from services.clients.results import Engine
from services.nlp import engines, generation
from services.nlp.generation import TextGenerator
from services.nlp.prepared import PreparedText
from services.nlp.salience import mmr, sentence_salience
from services.runtime.errors import DomainError, FieldViolation, InvalidArgument
from services.vocabulary.text import sentence_spans, words

log = logging.getLogger("docuthinker.nlp.summarize")

DEFAULT_SENTENCES = 5
DEFAULT_WORDS = 250
REDUNDANCY_TRADE_OFF = 0.7
"""MMR weight of salience against similarity to already chosen sentences."""
LLM_CONTEXT_SENTENCES = 60
"""A document longer than the generation window reaches the LLM as its most salient sentences."""


class Style(Enum):
    NARRATIVE = "narrative"
    BULLETS = "bullets"


@dataclass(frozen=True)
class Limits:
    max_sentences: int = DEFAULT_SENTENCES
    max_words: int = DEFAULT_WORDS

    @classmethod
    def of(cls, max_sentences: int, max_words: int) -> Limits:
        """Request values (0 means the default; negatives are invalid)."""
        violations = [
            FieldViolation(name, "must not be negative")
            for name, value in (("max_sentences", max_sentences), ("max_words", max_words))
            if value < 0
        ]
        if violations:
            raise InvalidArgument("summary limits must not be negative", violations=violations)
        return cls(max_sentences or DEFAULT_SENTENCES, max_words or DEFAULT_WORDS)


@dataclass(frozen=True)
class SummarySentence:
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Summary:
    style: Style
    summary: str
    bullets: tuple[str, ...]
    sentences: tuple[SummarySentence, ...]
    """Set for extractive summaries only: the source sentences, in document order."""
    engine: Engine


def extractive(prepared: PreparedText, style: Style, limits: Limits) -> Summary:
    if not prepared.candidates:
        return Summary(style, "", (), (), engines.EXTRACTIVE)
    salience = sentence_salience(prepared)
    lengths = [len(words(prepared.sentence(i))) for i in prepared.candidates]
    budget = {"words": limits.max_words}

    def fits(row: int) -> bool:
        if lengths[row] > budget["words"]:
            return False
        budget["words"] -= lengths[row]
        return True

    rows = mmr(prepared.vectors, salience, limits.max_sentences, REDUNDANCY_TRADE_OFF, fits)
    if not rows:
        shortest = min(lengths)
        raise InvalidArgument(
            f"max_words={limits.max_words} is below the shortest candidate sentence ({shortest} words)",
            reason="SUMMARY_TOO_SHORT",
            violations=[FieldViolation("max_words", f"must be at least {shortest} for this text")],
        )
    chosen = sorted(prepared.candidates[row] for row in rows)
    sentences = tuple(SummarySentence(prepared.sentence(i), *prepared.spans[i]) for i in chosen)
    # Display strings collapse hard line wraps; ``sentences`` keep the exact source text.
    texts = tuple(" ".join(s.text.split()) for s in sentences)
    return Summary(style, " ".join(texts), texts if style is Style.BULLETS else (), sentences, engines.EXTRACTIVE)


class _Bullets(BaseModel):
    bullets: list[str] = Field(min_length=1, max_length=20)


def _clip(text: str, max_words: int) -> str:
    """``text`` cut back to whole sentences within ``max_words`` (LLMs overshoot word limits)."""
    kept: list[str] = []
    used = 0
    for start, end in sentence_spans(text):
        n = len(words(text[start:end]))
        if used + n > max_words:
            break
        kept.append(text[start:end])
        used += n
    return " ".join(kept)


async def summarize(
    prepared: PreparedText,
    style: Style,
    limits: Limits,
    generator: TextGenerator,
    *,
    prefer_llm: bool,
    context_chars: int,
) -> Summary:
    """Abstractive when a provider serves ``summarize`` and answers usably; else extractive."""
    if prefer_llm:
        try:
            result = await _abstractive(prepared, style, limits, generator, context_chars)
        except DomainError as exc:  # none configured offline, or every provider failed
            log.info("extractive summary: %s", exc.message)
            result = None
        if result is not None:
            return result
    return await asyncio.to_thread(extractive, prepared, style, limits)


async def _abstractive(
    prepared: PreparedText, style: Style, limits: Limits, generator: TextGenerator, context_chars: int
) -> Summary | None:
    if len(prepared.text) <= context_chars:
        source = prepared.text
    else:
        source = await asyncio.to_thread(_condensed, prepared)
    shape = (
        f'a JSON object {{"bullets": [...]}} with at most {limits.max_sentences} short bullet points'
        if style is Style.BULLETS
        else f"one paragraph of at most {limits.max_sentences} sentences"
    )
    request = generation.ask(
        f"Summarise the document below as {shape}, at most {limits.max_words} words in total, "
        f"in the document's own language. Use only facts stated in it.\n\n<document>\n{source}\n</document>",
        "You write faithful, concise summaries of documents.",
        schema=_Bullets if style is Style.BULLETS else None,
        max_tokens=min(2048, 2 * limits.max_words + 64),
    )
    result = await generation.generate(generator, "summarize", request)
    engine = generation.engine_of(result)
    if style is Style.BULLETS:
        parsed = generation.parse_json(result.text, _Bullets)
        if parsed is None:
            return None
        bullets = tuple(b.strip() for b in parsed.bullets if b.strip())[: limits.max_sentences]
        return Summary(style, " ".join(bullets), bullets, (), engine) if bullets else None
    text = _clip(result.text.strip(), limits.max_words)
    return Summary(style, text, (), (), engine) if text else None


def _condensed(prepared: PreparedText) -> str:
    """The document's most salient sentences, in order: what a long document shows the LLM."""
    salience = sentence_salience(prepared)
    top = sorted(range(len(salience)), key=lambda r: -salience[r])[:LLM_CONTEXT_SENTENCES]
    return "\n".join(prepared.sentence(prepared.candidates[r]) for r in sorted(top))
