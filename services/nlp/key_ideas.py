"""Key ideas: the document's most central, mutually distinct sentences (3 to 7).

Offline they are verbatim sentences picked by salience with a strong diversity weight
(MMR), most central first. With an LLM serving ``key_ideas`` they are short statements
written by the model, validated against a schema; an unusable answer falls back.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from pydantic import BaseModel, Field

from services.clients.results import Engine
from services.nlp import engines, generation
from services.nlp.generation import TextGenerator
from services.nlp.prepared import PreparedText
from services.nlp.salience import mmr, sentence_salience
from services.runtime.errors import DomainError, FieldViolation, InvalidArgument

log = logging.getLogger("docuthinker.nlp.key_ideas")

MIN_IDEAS, MAX_IDEAS, DEFAULT_IDEAS = 3, 7, 5
DIVERSITY_TRADE_OFF = 0.5


@dataclass(frozen=True)
class KeyIdeas:
    ideas: tuple[str, ...]
    engine: Engine


def count_of(requested: int) -> int:
    if requested == 0:
        return DEFAULT_IDEAS
    if not MIN_IDEAS <= requested <= MAX_IDEAS:
        raise InvalidArgument(
            f"max_ideas must be between {MIN_IDEAS} and {MAX_IDEAS} (or 0 for {DEFAULT_IDEAS})",
            violations=[FieldViolation("max_ideas", f"must be {MIN_IDEAS}..{MAX_IDEAS}")],
        )
    return requested


def extractive(prepared: PreparedText, count: int) -> KeyIdeas:
    if not prepared.candidates:
        return KeyIdeas((), engines.EXTRACTIVE)
    rows = mmr(prepared.vectors, sentence_salience(prepared), count, DIVERSITY_TRADE_OFF)
    ideas = tuple(" ".join(prepared.sentence(prepared.candidates[row]).split()) for row in rows)
    return KeyIdeas(ideas, engines.EXTRACTIVE)


class _Ideas(BaseModel):
    ideas: list[str] = Field(min_length=MIN_IDEAS, max_length=MAX_IDEAS)


async def key_ideas(
    prepared: PreparedText, count: int, generator: TextGenerator, *, prefer_llm: bool, context_chars: int
) -> KeyIdeas:
    """From an LLM when one serves ``key_ideas`` and answers usably; else extractive."""
    if prefer_llm and len(prepared.text) <= context_chars:
        request = generation.ask(
            f"List the {count} key ideas of the document below as a JSON object {{\"ideas\": [...]}}: "
            "each idea one short sentence, most important first, only what the document states.\n\n"
            f"<document>\n{prepared.text}\n</document>",
            "You extract the key ideas of documents faithfully.",
            schema=_Ideas,
            max_tokens=600,
        )
        try:
            result = await generation.generate(generator, "key_ideas", request)
        except DomainError as exc:
            log.info("extractive key ideas: %s", exc.message)
        else:
            parsed = generation.parse_json(result.text, _Ideas)
            ideas = tuple(i.strip() for i in parsed.ideas if i.strip())[:count] if parsed else ()
            if len(ideas) >= min(MIN_IDEAS, count):
                return KeyIdeas(ideas, generation.engine_of(result))
    return await asyncio.to_thread(extractive, prepared, count)
