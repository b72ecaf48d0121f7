"""Chat on a document (or in general): conversation history + document context -> the router's "chat" task.

The prompt is the instructions, the document (``<document_context>``, a prompt-cache
breakpoint), any stored summary of the document (``<previous_summary>``) and of the older
conversation, then the recent turns and the new message. When that does not fit the model's
context window, older turns are summarised (the last four kept) and the document context
is cut to what fits. Both turns of the exchange are appended to the conversation.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.orchestrator.conversations import GENERAL, Conversation, ConversationStore, Summarize
from services.orchestrator.insights import InsightStore
from services.orchestrator.llm import LanguageModels
from services.orchestrator.tokens import TokenBudget, Turn, compact_turns, estimate_tokens, truncate_to_tokens
from services.providers.base import GenerationRequest, GenerationResult, Message, TextBlock
from services.runtime.errors import InvalidArgument

TASK = "chat"
KEEP_TURNS_WHEN_COMPACTING = 4
MAX_ANSWER_TOKENS = 512
INSTRUCTIONS = (
    "You are DocuThinker, an assistant for questions about documents. When a document is given,"
    " answer from it and say so when it does not contain the answer. Be concise."
)


@dataclass(frozen=True)
class ChatReply:
    response: str
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    compacted: bool
    history_messages: int


class ChatResponder:
    def __init__(
        self,
        llm: LanguageModels,
        conversations: ConversationStore,
        insights: InsightStore,
        budget: TokenBudget,
        summarize: Summarize,
    ) -> None:
        self._llm = llm
        self._conversations = conversations
        self._insights = insights
        self._budget = budget
        self._summarize = summarize

    async def reply(
        self,
        *,
        tenant: str,
        message: str,
        user_id: str = "",
        document_id: str = "",
        document_text: str = "",
        provider: str = "",
    ) -> ChatReply:
        conversation_key = document_id or GENERAL
        history: Conversation | None = None
        if user_id:
            history = self._conversations.find(tenant, user_id, conversation_key)
        insight = self._insights.get(tenant, document_id) if document_id else None
        turns = [Turn(m.role, m.content) for m in (history.messages if history else ()) if m.role != "system"]
        conversation_summary = history.summary if history else ""

        serving = self._llm.likely_provider(TASK)
        window = serving.context_window if serving is not None else self._budget.context_window("")
        available = max(0, window - self._budget.reserve_for_output)
        if estimate_tokens(message) > available:
            raise InvalidArgument(
                f"the message alone needs about {estimate_tokens(message)} tokens; {available} are available",
                reason="TOKEN_BUDGET_EXCEEDED",
                metadata={"available": str(available)},
            )

        fixed = estimate_tokens(INSTRUCTIONS) + estimate_tokens(message) + estimate_tokens(
            insight.summary if insight else ""
        )
        fitted = await self._fit(available - fixed, conversation_summary, turns, document_text)
        conversation_summary, turns, document_text, compacted = fitted

        system = [TextBlock(INSTRUCTIONS)]
        if document_text:
            system.append(TextBlock(f"<document_context>\n{document_text}\n</document_context>", cacheable=True))
        if insight and insight.summary:
            system.append(TextBlock(f"<previous_summary>\n{insight.summary}\n</previous_summary>"))
        if conversation_summary:
            system.append(TextBlock(f"<conversation_summary>\n{conversation_summary}\n</conversation_summary>"))
        request = GenerationRequest(
            messages=_alternating([*turns, Turn("user", message)]),
            system=system,
            temperature=0.5,
            max_tokens=MAX_ANSWER_TOKENS,
        )
        result: GenerationResult = await self._llm.generate(TASK, request, provider or None)
        answer = result.text.strip()
        held = len(turns)
        if user_id:
            await self._conversations.add(tenant, user_id, conversation_key, "user", message)
            after = await self._conversations.add(tenant, user_id, conversation_key, "assistant", answer or "(empty)")
            held = len(after.messages)
        return ChatReply(
            response=answer,
            provider=result.provider,
            model=result.model,
            input_tokens=result.usage.prompt_tokens,
            output_tokens=result.usage.output_tokens,
            compacted=compacted,
            history_messages=held,
        )


    async def _fit(
        self, room: int, summary: str, turns: list[Turn], document: str
    ) -> tuple[str, list[Turn], str, bool]:
        """Summary, turns and document cut to ``room`` tokens: the document keeps at least half of it.

        Older turns are summarised first (the last four kept); if the history still does not fit,
        the summary is cut to a third of the history's share, then the oldest kept turns are left
        out of this prompt (they stay in the stored conversation); the document gets what remains.
        """
        if self._budget.count(summary, turns) + estimate_tokens(document) <= room:
            return summary, turns, document, False
        if len(turns) > KEEP_TURNS_WHEN_COMPACTING:
            older, turns = await compact_turns(turns, KEEP_TURNS_WHEN_COMPACTING, self._summarize)
            summary = "\n".join(p for p in (summary, older) if p)
        history_room = max(0, room - min(estimate_tokens(document), room // 2))
        if self._budget.count(summary, turns) > history_room:
            # Recent turns matter more than the summary of old ones: the summary gets a third at most.
            summary = truncate_to_tokens(summary, history_room // 3)
        while turns and self._budget.count(summary, turns) > history_room:
            turns = turns[1:]
        if self._budget.count(summary, turns) > history_room:
            summary = truncate_to_tokens(summary, history_room - self._budget.count("", turns))
        document_room = max(0, room - self._budget.count(summary, turns))
        if estimate_tokens(document) > document_room:
            document = truncate_to_tokens(document, document_room)
        return summary, turns, document, True


def _alternating(turns: list[Turn]) -> list[Message]:
    """Vendor APIs want user/assistant turns alternating and starting with the user: merge runs."""
    merged: list[Turn] = []
    for turn in turns:
        role = "assistant" if turn.role == "assistant" else "user"
        if merged and merged[-1].role == role:
            merged[-1] = Turn(role, f"{merged[-1].content}\n\n{turn.content}")
        else:
            merged.append(Turn(role, turn.content))
    if merged and merged[0].role == "assistant":
        merged.insert(0, Turn("user", "(conversation resumed)"))
    return [Message(t.role, t.content) for t in merged]  # type: ignore[arg-type]
