"""Vendor wire payloads (as documented by each vendor), built for the fake servers."""

from __future__ import annotations

ANTHROPIC_MODEL = "claude-sonnet-4-20250514"
OPENAI_MODEL = "gpt-4o-mini"
GEMINI_MODEL = "gemini-1.5-pro"


# -- Anthropic Messages API -----------------------------------------------------------------


HUNG_S = 120.0
"""How long a hung vendor stays silent by default: far longer than any deadline a test sets, so that a call
returning at all shows the deadline cut it short, however slowly a loaded machine runs the test."""


def anthropic_message(content, stop_reason="end_turn", usage=None, model: str = ANTHROPIC_MODEL) -> dict:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage
        or {"input_tokens": 120, "output_tokens": 30, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }


def anthropic_usage(input_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0) -> dict:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_write,
    }


def anthropic_stream(blocks: list[tuple[dict, list[dict]]], stop_reason: str, usage_start: dict, output_tokens: int):
    """SSE events: message_start, per block start/ping/deltas/stop, message_delta (usage), message_stop."""
    events = [("message_start", {"type": "message_start", "message": anthropic_message([], None, usage_start)})]
    for index, (start, deltas) in enumerate(blocks):
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
        events.append(("ping", {"type": "ping"}))
        for delta in deltas:
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def anthropic_error(status_type: str, message: str) -> dict:
    return {"type": "error", "error": {"type": status_type, "message": message}}


# -- OpenAI Chat Completions ----------------------------------------------------------------


def openai_usage(prompt: int, completion: int, cached: int = 0) -> dict:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def openai_completion(message: dict, finish: str = "stop", model: str = OPENAI_MODEL, tokens: dict | None = None) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
        "usage": tokens or openai_usage(120, 30),
    }


def openai_chunk(delta: dict | None, finish: str | None = None, tokens: dict | None = None) -> dict:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": OPENAI_MODEL,
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if tokens is not None:
        body["usage"] = tokens
    return body


# -- Gemini generateContent -----------------------------------------------------------------


def gemini_usage(prompt: int, candidates: int, cached: int | None = None, thoughts: int | None = None) -> dict:
    body = {"promptTokenCount": prompt, "candidatesTokenCount": candidates, "totalTokenCount": prompt + candidates}
    if cached is not None:
        body["cachedContentTokenCount"] = cached
    if thoughts is not None:
        body["thoughtsTokenCount"] = thoughts
    return body


def gemini_response(parts: list[dict], finish: str | None = "STOP", tokens: dict | None = None) -> dict:
    candidate: dict = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    body: dict = {"candidates": [candidate], "modelVersion": GEMINI_MODEL}
    if tokens is not None:
        body["usageMetadata"] = tokens
    return body


def gemini_error(code: int, status: str, message: str, details: list | None = None) -> dict:
    return {"error": {"code": code, "status": status, "message": message, "details": details or []}}
