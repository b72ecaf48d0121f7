"""Fakes at the ports of the graph feed: the extractor and writer ports (worker tests; the service tests serve
``FakeExtractor`` through the shared fake NLP service, ``tests/support/fake_services``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from services.runtime import current_tenant
from services.runtime.errors import Unavailable


def capitalised_words(text: str) -> list[str]:
    """A stand-in for NER: capitalised words after the first of a sentence, by frequency."""
    words = re.findall(r"(?<=[a-z,;] )[A-Z][a-z]+", text)
    return sorted(set(words), key=lambda w: (-words.count(w), w))


@dataclass
class FakeExtractor:
    """Derives facts from the text itself, so a test sees its document's words come back."""

    calls: list[tuple[str, str]] = field(default_factory=list)
    tenants: list[str] = field(default_factory=list)
    failure: Exception | None = None

    async def topics(self, text: str, limit: int) -> list[tuple[str, float]]:
        self._record("topics", text)
        words = [w for w in re.findall(r"[a-z]{6,}", text.lower())]
        ranked = sorted(set(words), key=lambda w: (-words.count(w), w))[:limit]
        return [(w, round(1.0 - i * 0.05, 2)) for i, w in enumerate(ranked)]

    async def entities(self, text: str, labels: Sequence[str]) -> list[tuple[str, str, int]]:
        self._record("entities", text)
        return [(w, "PERSON", text.count(w)) for w in capitalised_words(text)]

    def _record(self, kind: str, text: str) -> None:
        self.calls.append((kind, text))
        self.tenants.append(current_tenant(default="<none>"))
        if self.failure is not None:
            raise self.failure


@dataclass
class FakeWriter:
    upserts: list[dict] = field(default_factory=list)
    deletes: list[tuple[str, str]] = field(default_factory=list)
    failure: Exception | None = None

    async def upsert_document(self, document_id, title="", file_type="", topics=(), entities=()):
        if self.failure is not None:
            raise self.failure
        self.upserts.append({"tenant": current_tenant(default="<none>"), "document_id": document_id,
                             "title": title, "file_type": file_type, "topics": list(topics),
                             "entities": list(entities)})

    async def delete_document(self, document_id):
        if self.failure is not None:
            raise self.failure
        self.deletes.append((current_tenant(default="<none>"), document_id))


GRAPH_DOWN = Unavailable("graph: connection refused", reason="UNAVAILABLE")
