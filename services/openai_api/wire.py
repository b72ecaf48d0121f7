"""OpenAI's chat-completions wire format: the request we accept and the objects we answer with."""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from services.openai_api.answers import GroundedAnswer, WireCitation
from services.orchestrator.followups import PastTurn
from services.orchestrator.tokens import estimate_tokens

MODELS = {
    "docuthinker": "Grounded extractive (or provider-generated) answers with citations: the rag service's Query.",
    "docuthinker-agent": "The planner -> retriever -> reasoner -> validator agent graph: the rag service's AgentQuery.",
}
DEFAULT_MODEL = "docuthinker"
_CREATED = 1_767_225_600  # 2026-01-01: a stable "created" for the model list


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str = ""


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None

    @property
    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(part.text for part in self.content if part.type == "text")


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    include_usage: bool = False


class ChatRequest(BaseModel):
    """The fields we use; OpenAI's others (temperature, max_tokens, ...) are accepted and ignored."""

    model_config = ConfigDict(extra="allow")
    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int = 1
    document_ids: list[str] = Field(default_factory=list)
    """DocuThinker extension (``extra_body`` in the SDK): answer only from these documents."""
    top_k: int = Field(default=0, ge=0, le=50)
    """DocuThinker extension: chunks of evidence to retrieve (0: the engine's default)."""

    @field_validator("n")
    @classmethod
    def _one_choice(cls, value: int) -> int:
        if value != 1:
            raise ValueError("only n=1 is supported")
        return value

    @property
    def question(self) -> str:
        """The last user message: the grounded engine answers one question at a time."""
        for message in reversed(self.messages):
            if message.role == "user":
                return message.text.strip()
        return ""

    def history(self) -> list[PastTurn]:
        """The earlier exchanges (a user message and the assistant's reply after it), oldest first: a follow-up
        in the last user message is read against them (``services.orchestrator.followups``)."""
        last_user = max((i for i, m in enumerate(self.messages) if m.role == "user"), default=-1)
        turns: list[PastTurn] = []
        for message in self.messages[:last_user]:
            if message.role == "user" and message.text.strip():
                turns.append(PastTurn(message.text.strip()))
            elif message.role == "assistant" and turns and not turns[-1].answer:
                turns[-1] = PastTurn(turns[-1].question, message.text.strip())
        return turns

    @property
    def prompt_text(self) -> str:
        return "\n".join(m.text for m in self.messages)


def completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


def citation_json(citation: WireCitation) -> dict[str, Any]:
    return citation.as_json()


def usage(answer: GroundedAnswer, prompt_text: str = "") -> dict[str, int]:
    """The engine's own counts when it used a language model; otherwise counted here (the extractive engine
    reports none): the prompt is the messages sent plus the passages the engine read, the completion the
    answer's text, each at the mesh's estimate of a token (``orchestrator.tokens.estimate_tokens``)."""
    prompt, completion = answer.input_tokens, answer.output_tokens
    if not prompt and not completion:
        prompt = estimate_tokens(prompt_text) + answer.evidence_tokens
        completion = estimate_tokens(answer.text)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _extras(answer: GroundedAnswer) -> dict[str, Any]:
    return {"support_status": answer.support_status, "confidence_note": answer.confidence_note,
            "engine": answer.engine}


def completion(request_id: str, model: str, answer: GroundedAnswer, prompt_text: str = "",
               resolved: str = "") -> dict[str, Any]:
    message = {"role": "assistant", "content": answer.text, "refusal": None,
               "citations": [citation_json(c) for c in answer.citations]}
    return {
        "id": request_id, "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
        "usage": usage(answer, prompt_text), "system_fingerprint": None, **_extras(answer),
        **({"resolved_question": resolved} if resolved else {}),
    }


def chunk(request_id: str, model: str, created: int, delta: dict[str, Any], finish_reason: str | None = None,
          **extra: Any) -> dict[str, Any]:
    return {
        "id": request_id, "object": "chat.completion.chunk", "created": created, "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
        "system_fingerprint": None, **extra,
    }


def final_chunk(request_id: str, model: str, created: int, answer: GroundedAnswer) -> dict[str, Any]:
    """The last choice chunk: finish_reason "stop", all citations on its delta, the support status beside it."""
    delta = {"citations": [citation_json(c) for c in answer.citations]}
    return chunk(request_id, model, created, delta, "stop", **_extras(answer))


def usage_chunk(request_id: str, model: str, created: int, answer: GroundedAnswer,
                prompt_text: str = "") -> dict[str, Any]:
    """Sent when ``stream_options.include_usage``: no choices, only usage (as OpenAI does)."""
    return {"id": request_id, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [], "usage": usage(answer, prompt_text), "system_fingerprint": None}


def model_list() -> dict[str, Any]:
    return {"object": "list", "data": [model_card(name) for name in MODELS]}


def model_card(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": _CREATED, "owned_by": "docuthinker", "description": MODELS[name]}
