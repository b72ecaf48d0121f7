"""The NLP operations as one typed facade over the domain modules.

Each method takes text (or a ``PreparedText`` shared by several operations) and options,
and returns a domain result. CPU-bound work runs in worker threads (``asyncio.to_thread``)
so that Analyze can run operations side by side and the event loop keeps serving; models
load lazily, once per process (``warm_up`` loads them ahead of the first request).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from services.nlp import entities, generative, grounding, key_ideas, sentiment, summarize, topics
from services.nlp.generation import TextGenerator
from services.nlp.prepared import PreparedText
from services.nlp.settings import NlpSettings
from services.nlp.spacy_pipeline import SpacyPipeline, get_pipeline
from services.vocabulary import analytics

log = logging.getLogger("docuthinker.nlp")


@dataclass
class NlpOperations:
    settings: NlpSettings
    generator: TextGenerator

    @classmethod
    def from_settings(cls, settings: NlpSettings, generator: TextGenerator) -> NlpOperations:
        return cls(settings, generator)

    def prepare(self, text: str) -> PreparedText:
        return PreparedText(text, max_sentences=self.settings.max_embedded_sentences)

    def pipeline(self) -> SpacyPipeline:
        return get_pipeline(self.settings.spacy_model)

    def warm_up(self) -> None:
        """Loads spaCy, MiniLM and VADER (blocking; ~10 s on two cores)."""
        self.pipeline()
        self.prepare("Warm up the sentence embedder with this sentence.").vectors  # noqa: B018
        sentiment.analyze("Warm up.")

    async def entities(self, text: str, labels: list[str]) -> entities.EntitiesResult:
        return await asyncio.to_thread(
            lambda: entities.extract(text, self.pipeline(), self.settings.spacy_window_chars, labels)
        )

    async def sentiment(self, text: str) -> sentiment.SentimentResult:
        return await asyncio.to_thread(sentiment.analyze, text)

    async def summary(
        self, prepared: PreparedText, style: summarize.Style, limits: summarize.Limits
    ) -> summarize.Summary:
        return await summarize.summarize(
            prepared, style, limits, self.generator,
            prefer_llm=self.settings.prefer_llm, context_chars=self.settings.generation_window_chars,
        )

    async def key_ideas(self, prepared: PreparedText, count: int) -> key_ideas.KeyIdeas:
        return await key_ideas.key_ideas(
            prepared, count, self.generator,
            prefer_llm=self.settings.prefer_llm, context_chars=self.settings.generation_window_chars,
        )

    async def topics(self, prepared: PreparedText, count: int) -> topics.TopicsResult:
        return await asyncio.to_thread(
            lambda: topics.extract(prepared, self.pipeline(), self.settings.spacy_window_chars, count)
        )

    async def _grounding(self, prepared: PreparedText) -> grounding.Grounding:
        return await asyncio.to_thread(prepared.derived, "grounding", grounding.build)

    async def discussion_points(self, prepared: PreparedText) -> generative.Points:
        ground = await self._grounding(prepared)
        return await generative.discussion_points(
            prepared.text, ground, self.generator, context_chars=self.settings.generation_window_chars
        )

    async def recommendations(self, prepared: PreparedText) -> generative.Recommendations:
        ground = await self._grounding(prepared)
        return await generative.recommendations(
            prepared.text, ground, self.generator, context_chars=self.settings.generation_window_chars
        )

    async def rewrite(self, text: str, style: str) -> generative.Rewritten:
        return await generative.rewrite(
            text, style, self.generator,
            window_chars=self.settings.generation_window_chars, max_chars=self.settings.max_generation_chars,
        )

    async def translate(self, text: str, target_language: str) -> generative.Rewritten:
        return await generative.translate(
            text, target_language, self.generator,
            window_chars=self.settings.generation_window_chars, max_chars=self.settings.max_generation_chars,
        )

    async def analytics(self, text: str, top_keywords: int) -> analytics.Analytics:
        return await asyncio.to_thread(analytics.compute, text, top_keywords)
