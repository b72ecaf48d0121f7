"""Token budgets per model context window, and compaction of a prompt that does not fit.

Tokens are estimated as ceil(chars / 4) (the seed's rule; vendors' tokenizers differ by
model, and an estimate that runs slightly high is the safe side). 4096 tokens are reserved
for the answer. A prompt over budget is compacted: older conversation turns are summarised
(keeping the last few verbatim), then the document context is cut to what still fits.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from services.providers.pricing import PriceTable

RESERVE_FOR_OUTPUT = 4096
RECOMMEND_AT = 0.8
DEFAULT_MODEL = "claude-sonnet-4-20250514"


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4) if text else 0


@dataclass(frozen=True)
class Turn:
    role: str
    content: str


@dataclass(frozen=True)
class TokenCheck:
    allowed: bool
    used: int
    available: int
    context_window: int
    utilization: float
    overflow: int
    recommendation: str


Summarizer = Callable[[str], Awaitable[str]]


class TokenBudget:
    def __init__(self, prices: PriceTable, reserve_for_output: int = RESERVE_FOR_OUTPUT) -> None:
        self._prices = prices
        self.reserve_for_output = reserve_for_output

    def context_window(self, model: str) -> int:
        return self._prices.context_window(model or DEFAULT_MODEL)

    def available(self, model: str) -> int:
        return max(0, self.context_window(model) - self.reserve_for_output)

    def count(
        self, system_prompt: str = "", turns: Sequence[Turn] = (), tools: Sequence[Mapping[str, Any]] = ()
    ) -> int:
        used = estimate_tokens(system_prompt)
        used += sum(estimate_tokens(t.content) for t in turns)
        used += sum(estimate_tokens(json.dumps(dict(t), sort_keys=True, default=str)) for t in tools)
        return used

    def check(
        self,
        model: str,
        system_prompt: str = "",
        turns: Sequence[Turn] = (),
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> TokenCheck:
        window = self.context_window(model)
        available = self.available(model)
        used = self.count(system_prompt, turns, tools)
        utilization = used / available if available else 1.0
        overflow = max(0, used - available)
        if overflow:
            recommendation = (
                f"over the {window}-token window by {overflow} tokens (with {self.reserve_for_output} reserved"
                " for the answer): compact the conversation history or send less document context"
            )
        elif utilization > RECOMMEND_AT:
            recommendation = f"{utilization:.0%} of the available context used: consider compacting the history"
        else:
            recommendation = ""
        return TokenCheck(overflow == 0, used, available, window, round(utilization, 4), overflow, recommendation)


async def compact_turns(turns: Sequence[Turn], keep_last: int, summarize: Summarizer) -> tuple[str, list[Turn]]:
    """Summarises all but the last ``keep_last`` turns; returns (summary, kept turns)."""
    if len(turns) <= keep_last:
        return "", list(turns)
    older, kept = turns[: len(turns) - keep_last], list(turns[len(turns) - keep_last :])
    transcript = "\n".join(f"{t.role}: {t.content}" for t in older)
    return await summarize(transcript), kept


def truncate_to_tokens(text: str, tokens: int) -> str:
    """The head of ``text`` that fits ``tokens`` estimated tokens, cut at a paragraph or sentence end."""
    limit = max(0, tokens) * 4
    if len(text) <= limit:
        return text
    head = text[:limit]
    for boundary in ("\n\n", ". ", "\n"):
        cut = head.rfind(boundary)
        if cut > limit // 2:
            return head[: cut + len(boundary)].rstrip()
    return head
