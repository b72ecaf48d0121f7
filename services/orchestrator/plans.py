"""Decomposition: which task DAG each intent becomes.

- upload: upload (RAG ingest) -> extract (the parsed text) -> {summarize, key_ideas} -> store
  (the summary and ideas kept for later chats); a stored document starts at extract.
- a document operation on a stored document: extract -> operation; on inline text: the operation.
- chat on a stored document: extract -> chat, falling back to a grounded RAG answer when no
  LLM provider can answer.
- batch: N parallel extract -> operation chains.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from services.orchestrator.dag import Task
from services.runtime.errors import FieldViolation, InvalidArgument


@dataclass(frozen=True)
class SupervisorRequest:
    intent: str = ""
    route: str = ""
    text: str = ""
    document_id: str = ""
    message: str = ""
    document_ids: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    user_id: str = ""
    audio: bytes = b""
    """chat.voice: the recording of a spoken question."""


# Intents that are one NLP operation over a text.
DOCUMENT_OPERATIONS = {
    "document.summarize": "nlp.summarize",
    "document.keyIdeas": "nlp.key_ideas",
    "document.discussionPoints": "nlp.discussion_points",
    "document.sentiment": "nlp.sentiment",
    "document.bulletSummary": "nlp.bullet_summary",
    "document.rewrite": "nlp.rewrite",
    "document.recommendations": "nlp.recommendations",
    "document.categorize": "nlp.topics",
    "document.analytics": "nlp.analytics",
    "document.translate": "nlp.translate",
}

# Batch operations (supervisor batch intent and ProcessBatch) -> operation.
BATCH_OPERATIONS = {
    "summarize": "nlp.summarize",
    "key_ideas": "nlp.key_ideas",
    "sentiment": "nlp.sentiment",
    "entities": "nlp.entities",
    "analytics": "nlp.analytics",
    "topics": "nlp.topics",
    "bullet_summary": "nlp.bullet_summary",
}

UNSERVED = {
    "user.register": "accounts are managed by the identity provider in front of the gateway, not by the mesh",
    "user.login": "sign-in is handled by the identity provider in front of the gateway, not by the mesh",
    "user.profile": "profiles are managed by the identity provider in front of the gateway, not by the mesh",
}


def _missing(field_name: str, description: str) -> InvalidArgument:
    return InvalidArgument(
        f"{field_name} is required for this intent: {description}",
        reason=f"MISSING_{field_name.upper()}",
        violations=[FieldViolation(field_name, description)],
    )


def _option(request: SupervisorRequest, *names: str, default: str = "") -> str:
    for name in names:
        value = request.options.get(name)
        if value:
            return str(value)
    return default


def _on_text(request: SupervisorRequest, task_id: str, operation: str, params: dict[str, Any]) -> list[Task]:
    """``operation`` on the request's inline text, or on a stored document's extracted text."""
    if request.text:
        return [Task(task_id, operation, {**params, "text": request.text})]
    if request.document_id:
        return [
            Task("extract", "rag.extract", {"document_id": request.document_id}),
            Task(task_id, operation, params, ("extract",), {"text": ("extract", "text")}),
        ]
    raise _missing("text", "send text, or the document_id of a stored document")


def decompose(intent: str, request: SupervisorRequest, max_documents: int = 1000) -> list[Task]:
    if intent in UNSERVED:
        return [Task("respond", "unsupported", {"intent": intent, "why": UNSERVED[intent]})]
    if intent == "document.upload":
        return _upload(request)
    if intent in DOCUMENT_OPERATIONS:
        params: dict[str, Any] = {}
        if intent == "document.rewrite":
            params["style"] = _option(request, "style", default="clear and concise")
        if intent == "document.translate":
            language = _option(request, "language", "target_language")
            if not language:
                raise _missing("options.language", "target language, e.g. 'fr' or 'French'")
            params["language"] = language
        return _on_text(request, intent.split(".", 1)[1], DOCUMENT_OPERATIONS[intent], params)
    if intent in ("chat.document", "chat.general"):
        return _chat(intent, request)
    if intent == "chat.voice":
        return _voice(request)
    if intent == "batch.multiDocument":
        return _batch(request, max_documents)
    if intent == "rag.query":
        question = request.message or _option(request, "question") or request.text
        if not question:
            raise _missing("message", "the question to answer from the stored documents")
        ids = list(request.document_ids) or ([request.document_id] if request.document_id else [])
        return [Task("answer", "rag.query", {"question": question, "document_ids": ids,
                                             "top_k": int(request.options.get("top_k") or 0)})]
    if intent == "graph.query":
        query = _option(request, "cypher") or request.message or request.text
        if not query:
            raise _missing("message", "a Cypher query or a question about topics and entities")
        return [Task("graph", "graph.query", {"query": query, "params": dict(request.options.get("params") or {})})]
    if intent == "system.health":
        return [Task("health", "system.health")]
    if intent == "system.costs":
        return [Task("costs", "system.costs", {"period": _option(request, "period", default="today")})]
    raise InvalidArgument(f"intent {intent!r} has no plan", reason="UNKNOWN_INTENT")


def _voice(request: SupervisorRequest) -> list[Task]:
    """A spoken question: the RAG service transcribes it and answers from the stored documents."""
    if not request.audio:
        raise _missing("audio", "the recording of the spoken question (any audio or video container)")
    ids = list(request.document_ids) or ([request.document_id] if request.document_id else [])
    return [Task("answer", "rag.spoken_query", {"audio": request.audio, "document_ids": ids,
                                                "top_k": int(request.options.get("top_k") or 0)})]


def _upload(request: SupervisorRequest) -> list[Task]:
    tasks: list[Task] = []
    if request.text:
        filename = _option(request, "filename", default="document.txt")
        tasks.append(Task("upload", "rag.ingest", {"text": request.text, "filename": filename}))
        tasks.append(Task("extract", "rag.extract", {}, ("upload",), {"document_id": ("upload", "document_id")}))
    elif request.document_id:
        tasks.append(Task("extract", "rag.extract", {"document_id": request.document_id}))
    else:
        raise _missing("text", "the document text to upload, or the document_id of a stored document")
    tasks += [
        Task("summarize", "nlp.summarize", {}, ("extract",), {"text": ("extract", "text")}),
        Task("key_ideas", "nlp.key_ideas", {}, ("extract",), {"text": ("extract", "text")}),
        Task(
            "store",
            "insights.store",
            {},
            ("extract", "summarize", "key_ideas"),
            {
                "document_id": ("extract", "document_id"),
                "summary": ("summarize", "summary"),
                "ideas": ("key_ideas", "ideas"),
            },
        ),
    ]
    return tasks


def _chat(intent: str, request: SupervisorRequest) -> list[Task]:
    message = request.message or (request.text if intent == "chat.general" else "")
    if not message:
        raise _missing("message", "what to ask or say")
    params: dict[str, Any] = {"message": message, "user_id": request.user_id,
                              "provider": _option(request, "provider")}
    if intent == "chat.general":
        return [Task("chat", "chat", params)]
    if request.document_id:
        params |= {"document_id": request.document_id, "question": message, "document_ids": [request.document_id]}
        return [
            Task("extract", "rag.extract", {"document_id": request.document_id}),
            Task("chat", "chat", params, ("extract",), {"text": ("extract", "text")}, fallbacks=("rag.query",)),
        ]
    if request.text:
        return [Task("chat", "chat", {**params, "text": request.text})]
    return [Task("chat", "chat", params)]


def _batch(request: SupervisorRequest, max_documents: int) -> list[Task]:
    operation_name = _option(request, "operation", default="summarize")
    operation = BATCH_OPERATIONS.get(operation_name)
    if operation is None:
        raise InvalidArgument(
            f"unknown batch operation {operation_name!r}",
            reason="UNKNOWN_OPERATION",
            violations=[FieldViolation("options.operation", "one of " + ", ".join(BATCH_OPERATIONS))],
        )
    ids = list(dict.fromkeys(request.document_ids))
    if not ids:
        raise _missing("document_ids", "the stored documents to process")
    if len(ids) > max_documents:
        raise InvalidArgument(f"{len(ids)} documents; at most {max_documents} per request", reason="BATCH_TOO_LARGE")
    tasks: list[Task] = []
    for n, document_id in enumerate(ids):
        tasks.append(Task(f"extract-{n}", "rag.extract", {"document_id": document_id}))
        tasks.append(Task(f"{operation_name}-{n}", operation, {"document_id": document_id}, (f"extract-{n}",),
                          {"text": (f"extract-{n}", "text")}))
    return tasks
