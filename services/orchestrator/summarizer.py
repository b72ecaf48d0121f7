"""Summaries of conversation history: a vendor model when one serves "summarize", else the NLP service.

Used when a conversation grows beyond its limit and when a chat prompt must be compacted to
fit the model's context window.
"""

from __future__ import annotations

from services.clients.nlp import NlpApi
from services.orchestrator.conversations import Summarize
from services.orchestrator.llm import LanguageModels
from services.providers.base import GenerationRequest, Message

TASK = "summarize"
INSTRUCTIONS = (
    "Summarise this conversation in 5-8 short bullet points. Keep names, numbers, decisions and open"
    " questions; drop greetings."
)
MAX_BULLETS = 8


def conversation_summarizer(llm: LanguageModels, nlp: NlpApi) -> Summarize:
    async def summarize(transcript: str) -> str:
        if llm.remote_can_serve(TASK):
            result = await llm.generate(
                TASK,
                GenerationRequest(messages=[Message("user", transcript)], system=INSTRUCTIONS,
                                  max_tokens=500, temperature=0.3),
            )
            return result.text.strip()
        summary = await nlp.summarize(transcript, max_sentences=MAX_BULLETS, style="bullets")
        if summary.bullets:
            return "\n".join(f"- {b}" for b in summary.bullets)
        return summary.text.strip()

    return summarize
