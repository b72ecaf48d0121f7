"""Conversations of each user: questions and their cited answers, listed, renamed and deleted by their owner.

A conversation belongs to one user of one tenant: its key is (tenant, subject, conversation id), where the
subject is the bearer token's ``sub`` claim as the gateway passes it on (``request_context.current_subject``),
never a value from the request's path or body. Another user's conversation is NOT_FOUND, an admin's
included: admins read others' through the admin calls (``list_of`` / ``read_of``), which the servicer
guards. Each turn keeps the question as asked, as answered (a follow-up resolved against the earlier
turns, ``followups.py``), and the answer as the rag service's ``Answer`` JSON, without its retrieved chunks.

Bounds: ``max_turns`` per conversation (the oldest turns go first), ``max_per_user`` conversations per user
(the least recently used goes first). Stored in the orchestrator's database (SQLite, or PostgreSQL through
migration 0010).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from services.orchestrator.database import SqlDatabase
from services.runtime.errors import FieldViolation, InvalidArgument, NotFound, PermissionDenied
from services.vocabulary.limits import MAX_QUESTION_CHARS

MAX_TITLE_CHARS = 120
MAX_DOCUMENTS = 100
NEW = "-"
"""The conversation id that asks for a new conversation (``AskConversation``)."""
NO_SUBJECT = "-"
"""What the gateway sends for a token without a ``sub`` claim: nobody whose conversations could be kept."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS user_conversations (
    tenant TEXT NOT NULL,
    subject TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    title TEXT NOT NULL,
    document_ids TEXT NOT NULL DEFAULT '[]',
    turn_count INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (tenant, subject, conversation_id)
);
CREATE INDEX IF NOT EXISTS user_conversations_recent ON user_conversations (tenant, subject, updated_at);
CREATE TABLE IF NOT EXISTS user_conversation_turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL,
    subject TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    question TEXT NOT NULL,
    resolved_question TEXT NOT NULL,
    answer TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS user_conversation_turns_key
    ON user_conversation_turns (tenant, subject, conversation_id, id);
"""


@dataclass(frozen=True)
class ConversationInfo:
    conversation_id: str
    title: str
    document_ids: tuple[str, ...]
    turn_count: int
    created_at: float
    updated_at: float
    subject: str


@dataclass(frozen=True)
class Turn:
    turn_id: str
    question: str
    resolved_question: str
    answer: dict[str, Any] = field(default_factory=dict)
    """The rag service's ``Answer`` as JSON (proto field names), without ``retrieved_chunks``."""
    created_at: float = 0.0

    @property
    def answer_text(self) -> str:
        return str(self.answer.get("answer", ""))

    @property
    def short_answer(self) -> str:
        for citation in self.answer.get("citations", ()):
            if citation.get("short_answer"):
                return str(citation["short_answer"])
        return ""


def owner(subject: str) -> str:
    """The caller whose conversations these are; PERMISSION_DENIED for a token that names nobody."""
    if not subject or subject == NO_SUBJECT:
        raise PermissionDenied(
            "conversations are kept per user and this bearer token names no user: it needs a 'sub' claim"
            " (python -m services.launcher token --subject NAME)", reason="SUBJECT_REQUIRED")
    return subject


def _title_of(question: str) -> str:
    words = " ".join(question.split())
    return words if len(words) <= 60 else words[:57].rsplit(" ", 1)[0] + "…"


def _check_title(title: str) -> str:
    title = " ".join(title.split())
    if len(title) > MAX_TITLE_CHARS:
        raise InvalidArgument(f"a title has at most {MAX_TITLE_CHARS} characters", reason="TITLE_TOO_LONG",
                              violations=[FieldViolation("title", f"at most {MAX_TITLE_CHARS} characters")])
    return title


def check_question(question: str) -> str:
    question = question.strip()
    if not question:
        raise InvalidArgument("question is required", reason="MISSING_QUESTION",
                              violations=[FieldViolation("question", "what you want to know")])
    if len(question) > MAX_QUESTION_CHARS:
        raise InvalidArgument(f"a question has at most {MAX_QUESTION_CHARS} characters", reason="QUESTION_TOO_LONG",
                              violations=[FieldViolation("question", f"at most {MAX_QUESTION_CHARS} characters")])
    return question


def _check_documents(document_ids: Sequence[str]) -> tuple[str, ...]:
    ids = tuple(dict.fromkeys(d.strip() for d in document_ids if d.strip()))
    if len(ids) > MAX_DOCUMENTS:
        raise InvalidArgument(f"at most {MAX_DOCUMENTS} documents", reason="TOO_MANY_DOCUMENTS",
                              violations=[FieldViolation("document_ids", f"at most {MAX_DOCUMENTS}")])
    return ids


class UserConversations:
    def __init__(self, db: SqlDatabase, *, max_turns: int = 500, max_per_user: int = 1000,
                 clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self.max_turns = max_turns
        self.max_per_user = max_per_user
        self._clock = clock
        db.script(_SCHEMA)

    # -- conversations ----------------------------------------------------------------------
    def create(self, tenant: str, subject: str, title: str = "", document_ids: Sequence[str] = ()) -> ConversationInfo:
        subject = owner(subject)
        title = _check_title(title)
        ids = _check_documents(document_ids)
        now = self._clock()
        conversation_id = secrets.token_hex(8)
        self._db.execute(
            "INSERT INTO user_conversations (tenant, subject, conversation_id, title, document_ids, turn_count,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?)",
            (tenant, subject, conversation_id, title, json.dumps(list(ids)), now, now),
        )
        self._evict(tenant, subject)
        return ConversationInfo(conversation_id, title, ids, 0, now, now, subject)

    def recent(self, tenant: str, subject: str, limit: int = 50) -> list[ConversationInfo]:
        rows = self._db.query(
            "SELECT * FROM user_conversations WHERE tenant = ? AND subject = ? ORDER BY updated_at DESC LIMIT ?",
            (tenant, owner(subject), limit),
        )
        return [_info(r) for r in rows]

    def get(self, tenant: str, subject: str, conversation_id: str) -> ConversationInfo:
        row = self._db.one(
            "SELECT * FROM user_conversations WHERE tenant = ? AND subject = ? AND conversation_id = ?",
            (tenant, owner(subject), conversation_id),
        )
        if row is None:
            raise NotFound(f"no conversation {conversation_id!r} of yours", reason="CONVERSATION_NOT_FOUND",
                           metadata={"conversation_id": conversation_id})
        return _info(row)

    def turns(self, tenant: str, subject: str, conversation_id: str, last: int | None = None) -> list[Turn]:
        self.get(tenant, subject, conversation_id)
        if last is None:
            rows = self._db.query(
                "SELECT * FROM user_conversation_turns WHERE tenant = ? AND subject = ? AND conversation_id = ?"
                " ORDER BY id", (tenant, subject, conversation_id))
        else:
            rows = list(reversed(self._db.query(
                "SELECT * FROM user_conversation_turns WHERE tenant = ? AND subject = ? AND conversation_id = ?"
                " ORDER BY id DESC LIMIT ?", (tenant, subject, conversation_id, last))))
        return [Turn(str(r["id"]), r["question"], r["resolved_question"], json.loads(r["answer"]), r["created_at"])
                for r in rows]

    def rename(self, tenant: str, subject: str, conversation_id: str, title: str) -> ConversationInfo:
        title = _check_title(title)
        if not title:
            raise InvalidArgument("title is required", reason="MISSING_TITLE",
                                  violations=[FieldViolation("title", "the new name")])
        self.get(tenant, subject, conversation_id)
        self._db.execute(
            "UPDATE user_conversations SET title = ? WHERE tenant = ? AND subject = ? AND conversation_id = ?",
            (title, tenant, subject, conversation_id),
        )
        return self.get(tenant, subject, conversation_id)

    def delete(self, tenant: str, subject: str, conversation_id: str) -> bool:
        key = (tenant, owner(subject), conversation_id)
        with self._db.transaction() as conn:
            conn.execute(
                "DELETE FROM user_conversation_turns WHERE tenant = ? AND subject = ? AND conversation_id = ?", key)
            removed = conn.execute(
                "DELETE FROM user_conversations WHERE tenant = ? AND subject = ? AND conversation_id = ?", key
            ).rowcount
        return removed > 0

    # -- turns --------------------------------------------------------------------------------
    def add_turn(self, tenant: str, subject: str, conversation_id: str, question: str, resolved_question: str,
                 answer: dict[str, Any]) -> Turn:
        info = self.get(tenant, subject, conversation_id)
        now = self._clock()
        answer = {k: v for k, v in answer.items() if k != "retrieved_chunks"}
        key = (tenant, subject, conversation_id)
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO user_conversation_turns (tenant, subject, conversation_id, question, resolved_question,"
                " answer, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (*key, question, resolved_question if resolved_question != question else "", json.dumps(answer), now),
            )
            conn.execute(
                "UPDATE user_conversations SET turn_count = turn_count + 1, updated_at = ?,"
                " title = CASE WHEN title = '' THEN ? ELSE title END"
                " WHERE tenant = ? AND subject = ? AND conversation_id = ?",
                (now, _title_of(question), *key),
            )
        if info.turn_count + 1 > self.max_turns:
            self._trim(key)
        return self.turns(tenant, subject, conversation_id, last=1)[-1]

    def _trim(self, key: tuple[str, str, str]) -> None:
        keep_from = self._db.query(
            "SELECT id FROM user_conversation_turns WHERE tenant = ? AND subject = ? AND conversation_id = ?"
            " ORDER BY id DESC LIMIT 1 OFFSET ?", (*key, self.max_turns - 1))
        if keep_from:
            with self._db.transaction() as conn:
                removed = conn.execute(
                    "DELETE FROM user_conversation_turns WHERE tenant = ? AND subject = ? AND conversation_id = ?"
                    " AND id < ?", (*key, keep_from[0]["id"])).rowcount
                conn.execute(
                    "UPDATE user_conversations SET turn_count = turn_count - ?"
                    " WHERE tenant = ? AND subject = ? AND conversation_id = ?", (removed, *key))

    def _evict(self, tenant: str, subject: str) -> None:
        row = self._db.one("SELECT COUNT(*) AS n FROM user_conversations WHERE tenant = ? AND subject = ?",
                           (tenant, subject))
        excess = int(row["n"]) - self.max_per_user if row else 0
        if excess <= 0:
            return
        victims = self._db.query(
            "SELECT conversation_id FROM user_conversations WHERE tenant = ? AND subject = ?"
            " ORDER BY updated_at LIMIT ?", (tenant, subject, excess))
        for victim in victims:
            self.delete(tenant, subject, victim["conversation_id"])


def _info(row: Any) -> ConversationInfo:
    return ConversationInfo(row["conversation_id"], row["title"], tuple(json.loads(row["document_ids"] or "[]")),
                            int(row["turn_count"]), float(row["created_at"]), float(row["updated_at"]),
                            row["subject"])
