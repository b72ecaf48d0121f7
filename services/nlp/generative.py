"""Discussion points, recommendations, rewriting and translation, through the provider layer.

Discussion points and recommendations ask the ``discussion_points`` / ``recommendations``
tasks for JSON (validated against a schema), grounded in the document's summary and key
ideas; answers that do not survive the checks in ``grounding`` are replaced by a
deterministic grounded construction, and ``engine`` says which produced the result.
Rewriting and translation are LLM-only: the text goes in windows, answers are joined.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from services.clients.results import Engine
from services.nlp import engines, generation, grounding, windows
from services.nlp.generation import TextGenerator
from services.nlp.grounding import Advice, Grounding
from services.runtime.errors import DomainError, FieldViolation, InvalidArgument, Unavailable

log = logging.getLogger("docuthinker.nlp.generative")

MIN_POINTS, MAX_POINTS = 3, 7
DEFAULT_STYLE = "clear and concise"
MAX_OPTION_CHARS = 200
_PRIORITIES = {"high": 1, "medium": 2, "low": 3}
_LIST_MARKER = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


@dataclass(frozen=True)
class Points:
    points: tuple[str, ...]
    engine: Engine


@dataclass(frozen=True)
class Recommendations:
    items: tuple[Advice, ...]
    engine: Engine


@dataclass(frozen=True)
class Rewritten:
    text: str
    instruction: str
    """The style or target language that was asked for."""
    engine: Engine


class _Points(BaseModel):
    points: list[str] = Field(min_length=1, max_length=10)


class _Recommendation(BaseModel):
    recommendation: str = Field(min_length=3)
    rationale: str = Field(min_length=3)
    priority: Literal["high", "medium", "low"]


class _Recommendations(BaseModel):
    recommendations: list[_Recommendation] = Field(min_length=1, max_length=10)


def _prompt(ground: Grounding, text: str, context_chars: int, ask: str) -> str:
    excerpt = f"\n\n<document>\n{text}\n</document>" if len(text) <= context_chars else ""
    return f"{ground.prompt_context()}{excerpt}\n\n{ask}"


async def discussion_points(
    text: str, ground: Grounding, generator: TextGenerator, *, context_chars: int
) -> Points:
    request = generation.ask(
        _prompt(ground, text, context_chars,
                f'Write {MIN_POINTS} to 5 open questions for discussing this document, as JSON: {{"points": [...]}}.'),
        "You write thoughtful discussion questions about a document, grounded in what it says.",
        schema=_Points,
        max_tokens=400,
    )
    try:
        result = await generation.generate(generator, "discussion_points", request)
    except DomainError as exc:  # no provider, or every provider failed: still answer, from the document
        log.log(_fallback_level(exc), "discussion points fall back to the grounded template: %s", exc.message)
        return Points(tuple(grounding.fallback_questions(ground)), engines.GROUNDED_TEMPLATE)
    points = _usable_points(result.text, ground)
    if len(points) >= MIN_POINTS:
        return Points(tuple(points[:MAX_POINTS]), generation.engine_of(result))
    log.info("unusable %s output for discussion points: %r", result.model, result.text[:200])
    return Points(tuple(grounding.fallback_questions(ground)), engines.GROUNDED_TEMPLATE)


def _fallback_level(exc: DomainError) -> int:
    """Offline (no provider configured) is the expected case: not worth a warning."""
    return logging.INFO if exc.reason == "NO_PROVIDER_AVAILABLE" else logging.WARNING


def _usable_points(output: str, ground: Grounding) -> list[str]:
    parsed = generation.parse_json(output, _Points)
    raw = parsed.points if parsed else [_LIST_MARKER.sub("", line) for line in output.splitlines()]
    seen: set[str] = set()
    usable: list[str] = []
    for point in raw:
        point = " ".join(point.split())
        key = point.lower()
        if (
            point.endswith("?")
            and 4 <= len(point.split()) <= 60
            and key not in seen
            and ground.mentions_document(point)
        ):
            seen.add(key)
            usable.append(point)
    return usable


async def recommendations(
    text: str, ground: Grounding, generator: TextGenerator, *, context_chars: int
) -> Recommendations:
    request = generation.ask(
        _prompt(ground, text, context_chars,
                "Give 3 to 5 actionable recommendations based on this document, as JSON: "
                '{"recommendations": [{"recommendation": ..., "rationale": ..., "priority": "high|medium|low"}]}.'),
        "You turn documents into concrete, actionable recommendations justified by the document.",
        schema=_Recommendations,
        max_tokens=600,
    )
    try:
        result = await generation.generate(generator, "recommendations", request)
    except DomainError as exc:  # no provider, or every provider failed: still answer, from the document
        log.log(_fallback_level(exc), "recommendations fall back to the grounded template: %s", exc.message)
        return Recommendations(tuple(grounding.fallback_advice(ground)), engines.GROUNDED_TEMPLATE)
    items = _usable_advice(result.text, ground)
    if len(items) >= 2:
        items.sort(key=lambda a: a.priority)  # stable: the model's order within a priority
        return Recommendations(tuple(items[:MAX_POINTS]), generation.engine_of(result))
    log.info("unusable %s output for recommendations: %r", result.model, result.text[:200])
    return Recommendations(tuple(grounding.fallback_advice(ground)), engines.GROUNDED_TEMPLATE)


def _usable_advice(output: str, ground: Grounding) -> list[Advice]:
    """Distinct recommendations about the document, each with a rationale that is not a copy of it."""
    parsed = generation.parse_json(output, _Recommendations)
    seen: set[str] = set()
    usable: list[Advice] = []
    for item in parsed.recommendations if parsed else []:
        text, why = " ".join(item.recommendation.split()), " ".join(item.rationale.split())
        key = text.lower().rstrip(".")
        if (
            len(text.split()) >= 3
            and key not in seen
            and why.lower().rstrip(".") != key
            and ground.mentions_document(f"{text} {why}")
        ):
            seen.add(key)
            usable.append(Advice(text, why, _PRIORITIES[item.priority]))
    return usable


def _option(value: str, name: str, default: str | None = None) -> str:
    value = " ".join(value.split()) or (default or "")
    if not value:
        raise InvalidArgument(f"{name} is required", violations=[FieldViolation(name, "must not be empty")])
    if len(value) > MAX_OPTION_CHARS:
        raise InvalidArgument(
            f"{name} is too long", violations=[FieldViolation(name, f"at most {MAX_OPTION_CHARS} characters")]
        )
    return value


async def rewrite(text: str, style: str, generator: TextGenerator, *, window_chars: int, max_chars: int) -> Rewritten:
    style = _option(style, "style", DEFAULT_STYLE)
    return await _transform(
        text, style, "rewrite", generator, window_chars, max_chars,
        system="You rewrite text in the requested style. Keep its meaning, facts, names and numbers. "
        "Answer with the rewritten text only.",
        instruction=f"Rewrite the text below in this style: {style}.",
        tokens_per_char=0.35,
    )


async def translate(
    text: str, target_language: str, generator: TextGenerator, *, window_chars: int, max_chars: int
) -> Rewritten:
    target = _option(target_language, "target_language")
    return await _transform(
        text, target, "translate", generator, window_chars, max_chars,
        system="You are a professional translator. Translate faithfully, keeping formatting, names and numbers. "
        "Answer with the translation only.",
        instruction=f"Translate the text below into {target}.",
        tokens_per_char=0.6,
    )


async def _transform(
    text: str, instruction_value: str, task: str, generator: TextGenerator, window_chars: int, max_chars: int,
    *, system: str, instruction: str, tokens_per_char: float,
) -> Rewritten:
    if len(text) > max_chars:
        raise InvalidArgument(
            f"{task} accepts at most {max_chars} characters (this text has {len(text)})",
            reason="TEXT_TOO_LARGE_FOR_LLM",
            metadata={"limit": str(max_chars), "size": str(len(text)), "setting": "DOCUTHINKER_NLP_MAX_GENERATION_CHARS"},
        )
    parts = [w.of(text).strip() for w in windows.split(text, window_chars)]
    parts = [p for p in parts if p]

    async def one(part: str):
        request = generation.ask(
            f"{instruction}\n\n<text>\n{part}\n</text>", system,
            max_tokens=min(8192, int(len(part) * tokens_per_char) + 256), temperature=0.2,
        )
        return await generation.generate(generator, task, request)

    # Windows go out together; the router and the providers bound real concurrency.
    results = await asyncio.gather(*(one(p) for p in parts))
    outputs = [_strip_wrapper(r.text) for r in results]
    if not all(outputs):
        raise Unavailable(f"the model returned an empty {task}", reason="EMPTY_GENERATION",
                          metadata={"provider": results[0].provider, "model": results[0].model})
    return Rewritten("\n\n".join(outputs), instruction_value, generation.engine_of(results[0]))


def _strip_wrapper(output: str) -> str:
    """The answer without an echoed ``<text>`` wrapper (small models copy the prompt's tags)."""
    return re.sub(r"</?text>", "", output).strip()
