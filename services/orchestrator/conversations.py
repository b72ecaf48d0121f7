"""Conversations keyed by tenant, user and document, persisted in SQLite.

Beyond ``max_messages`` messages, the older ones are folded into a rolling summary and only
the last ``keep_last`` stay verbatim (the seed's 20/10). At most ``max_conversations`` are
kept per tenant; beyond that the tenant's own least recently used one is evicted, so one tenant's
traffic never evicts another tenant's conversations. Clients write ``user`` and ``assistant``
turns only (``CLIENT_ROLES``): ``system`` turns steer the model, so only the mesh writes them. When the summariser fails, a plain digest of
the older turns stands in, so no turn is ever dropped without a trace.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from services.orchestrator.database import SqlDatabase
from services.runtime.errors import FieldViolation, InvalidArgument, NotFound

log = logging.getLogger("docuthinker.orchestrator.conversations")

GENERAL = "general"
ROLES = ("user", "assistant", "system")
CLIENT_ROLES = ("user", "assistant")
MAX_CONTENT_CHARS = 100_000

Summarize = Callable[[str], Awaitable[str]]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    tenant TEXT NOT NULL,
    user_id TEXT NOT NULL,
    document_id TEXT NOT NULL,
    summary TEXT NOT NULL DEFAULT '',
    used_at REAL NOT NULL,
    PRIMARY KEY (tenant, user_id, document_id)
);
CREATE INDEX IF NOT EXISTS conversations_lru ON conversations (used_at);
CREATE TABLE IF NOT EXISTS conversation_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL,
    user_id TEXT NOT NULL,
    document_id TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS conversation_messages_key ON conversation_messages (tenant, user_id, document_id, id);
"""


@dataclass(frozen=True)
class ChatMessage:
    role: str
    content: str
    created_at: float


@dataclass(frozen=True)
class Conversation:
    user_id: str
    document_id: str
    messages: tuple[ChatMessage, ...]
    summary: str

    @property
    def has_summary(self) -> bool:
        return bool(self.summary)


def digest(transcript: str, width: int = 100) -> str:
    """A summariser of last resort: each turn cut to ``width`` characters."""
    lines = [line.strip() for line in transcript.splitlines() if line.strip()]
    return "\n".join(f"- {line[:width]}" for line in lines)


class ConversationStore:
    def __init__(
        self,
        db: SqlDatabase,
        summarize: Summarize,
        *,
        max_messages: int = 20,
        keep_last: int = 10,
        max_conversations: int = 10_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if keep_last >= max_messages:
            raise ValueError("keep_last must be smaller than max_messages")
        self._db = db
        self._summarize = summarize
        self.max_messages = max_messages
        self.keep_last = keep_last
        self.max_conversations = max_conversations
        self._clock = clock
        self._locks: dict[tuple[str, str, str], asyncio.Lock] = {}
        db.script(_SCHEMA)

    async def add_from_client(
        self, tenant: str, user_id: str, document_id: str, role: str, content: str
    ) -> Conversation:
        """A turn a client wrote (AddConversationMessage): ``user`` or ``assistant`` only."""
        _validate_message(role, content, CLIENT_ROLES)
        return await self.add(tenant, user_id, document_id, role, content)

    async def add(self, tenant: str, user_id: str, document_id: str, role: str, content: str) -> Conversation:
        key = _key(tenant, user_id, document_id)
        _validate_message(role, content)
        # One lock per conversation: two appends must not both fold the same older turns.
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            now = self._clock()
            with self._db.transaction() as conn:
                conn.execute(
                    "INSERT INTO conversations (tenant, user_id, document_id, used_at) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT (tenant, user_id, document_id) DO UPDATE SET used_at = excluded.used_at",
                    (*key, now),
                )
                conn.execute(
                    "INSERT INTO conversation_messages (tenant, user_id, document_id, role, content, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (*key, role, content, now),
                )
            self._evict_beyond_cap(tenant)
            conversation = self._load(key)
            if len(conversation.messages) > self.max_messages:
                conversation = await self._fold(key, conversation)
            return conversation

    def get(self, tenant: str, user_id: str, document_id: str) -> Conversation:
        key = _key(tenant, user_id, document_id)
        if self._db.execute("UPDATE conversations SET used_at = ? WHERE tenant = ? AND user_id = ? AND document_id = ?",
                            (self._clock(), *key)) == 0:
            raise NotFound(
                f"no conversation for user {user_id!r} and document {document_id!r}", reason="CONVERSATION_NOT_FOUND"
            )
        return self._load(key)

    def find(self, tenant: str, user_id: str, document_id: str) -> Conversation | None:
        try:
            return self.get(tenant, user_id, document_id)
        except NotFound:
            return None

    def clear(self, tenant: str, user_id: str, document_id: str) -> bool:
        key = _key(tenant, user_id, document_id)
        with self._db.transaction() as conn:
            conn.execute(
                "DELETE FROM conversation_messages WHERE tenant = ? AND user_id = ? AND document_id = ?", key
            )
            removed = conn.execute(
                "DELETE FROM conversations WHERE tenant = ? AND user_id = ? AND document_id = ?", key
            ).rowcount
        self._locks.pop(key, None)
        return removed > 0

    def count(self, tenant: str | None = None) -> int:
        """Conversations kept, of one tenant or of all."""
        if tenant is None:
            row = self._db.one("SELECT COUNT(*) AS n FROM conversations")
        else:
            row = self._db.one("SELECT COUNT(*) AS n FROM conversations WHERE tenant = ?", (tenant,))
        return int(row["n"]) if row else 0

    async def _fold(self, key: tuple[str, str, str], conversation: Conversation) -> Conversation:
        older = conversation.messages[: len(conversation.messages) - self.keep_last]
        transcript = "\n".join(f"{m.role}: {m.content}" for m in older)
        if conversation.summary:
            transcript = f"Summary of the conversation so far:\n{conversation.summary}\n\nNew turns:\n{transcript}"
        try:
            summary = (await self._summarize(transcript)).strip() or digest(transcript)
        except Exception as exc:  # noqa: BLE001 - a failed summariser must not lose the turns
            log.warning("conversation summariser failed, using a digest", extra={"fields": {"error": str(exc)}})
            summary = digest(transcript)
        last_folded = self._db.query(
            "SELECT id FROM conversation_messages WHERE tenant = ? AND user_id = ? AND document_id = ?"
            " ORDER BY id LIMIT 1 OFFSET ?",
            (*key, len(older) - 1),
        )[0]["id"]
        with self._db.transaction() as conn:
            conn.execute(
                "DELETE FROM conversation_messages WHERE tenant = ? AND user_id = ? AND document_id = ? AND id <= ?",
                (*key, last_folded),
            )
            conn.execute(
                "UPDATE conversations SET summary = ? WHERE tenant = ? AND user_id = ? AND document_id = ?",
                (summary, *key),
            )
        return self._load(key)

    def _evict_beyond_cap(self, tenant: str) -> None:
        excess = self.count(tenant) - self.max_conversations
        if excess <= 0:
            return
        victims = self._db.query(
            "SELECT tenant, user_id, document_id FROM conversations WHERE tenant = ? ORDER BY used_at LIMIT ?",
            (tenant, excess),
        )
        for victim in victims:
            self.clear(victim["tenant"], victim["user_id"], victim["document_id"])

    def _load(self, key: tuple[str, str, str]) -> Conversation:
        head = self._db.one(
            "SELECT summary FROM conversations WHERE tenant = ? AND user_id = ? AND document_id = ?", key
        )
        rows = self._db.query(
            "SELECT role, content, created_at FROM conversation_messages"
            " WHERE tenant = ? AND user_id = ? AND document_id = ? ORDER BY id",
            key,
        )
        return Conversation(
            user_id=key[1],
            document_id=key[2],
            messages=tuple(ChatMessage(r["role"], r["content"], r["created_at"]) for r in rows),
            summary=head["summary"] if head else "",
        )


def _key(tenant: str, user_id: str, document_id: str) -> tuple[str, str, str]:
    violations = []
    if not user_id.strip():
        violations.append(FieldViolation("user_id", "required"))
    if violations:
        raise InvalidArgument("user_id is required", reason="MISSING_USER", violations=violations)
    return tenant, user_id.strip(), (document_id or GENERAL).strip() or GENERAL


def _validate_message(role: str, content: str, roles: tuple[str, ...] = ROLES) -> None:
    violations = []
    if role not in roles:
        violations.append(FieldViolation("role", f"one of {', '.join(roles)}"))
    if not content.strip():
        violations.append(FieldViolation("content", "must not be blank"))
    elif len(content) > MAX_CONTENT_CHARS:
        violations.append(FieldViolation("content", f"at most {MAX_CONTENT_CHARS} characters"))
    if violations:
        raise InvalidArgument("invalid conversation message", reason="INVALID_MESSAGE", violations=violations)
