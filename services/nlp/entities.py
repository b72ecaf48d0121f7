"""Named entities with exact character offsets, merged over their repeated mentions.

Mentions are trimmed of a leading "the", a possessive ("Acme's" -> "Acme") and stray
punctuation, so their offsets still index the input exactly (``text[start:end] == mention``).
Mentions merge when they normalise alike (case, whitespace, punctuation, company suffixes
such as "Inc."), and a lone surname joins the one full name of a person ending with it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from services.clients.results import Engine
from services.nlp import windows
from services.nlp.spacy_pipeline import NER_ONLY, SpacyPipeline
from services.runtime.errors import FieldViolation, InvalidArgument

_POSSESSIVE = re.compile(r"(?:['’]s|(?<=s)['’])$", re.IGNORECASE)
_LEADING_THE = re.compile(r"^the\s+", re.IGNORECASE)
_EDGE_PUNCT = ",;:!?\"'“”‘’()[]{}"
_NON_WORD = re.compile(r"[^\w$€£¥%]+")
_COMPANY_SUFFIXES = {"inc", "incorporated", "ltd", "limited", "llc", "corp", "corporation", "co", "plc", "gmbh", "ag"}


@dataclass(frozen=True)
class Mention:
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Entity:
    text: str
    """Canonical surface form: the first mention (of the full name, for people)."""
    label: str
    mentions: tuple[Mention, ...]

    @property
    def count(self) -> int:
        return len(self.mentions)


@dataclass(frozen=True)
class EntitiesResult:
    entities: tuple[Entity, ...]
    engine: Engine


def extract(text: str, pipeline: SpacyPipeline, window_chars: int, labels: Sequence[str] = ()) -> EntitiesResult:
    wanted = _validate_labels(labels, pipeline.entity_labels)
    spans = windows.split(text, window_chars)
    found: list[tuple[str, Mention]] = []
    for window, doc in zip(spans, pipeline.run([w.of(text) for w in spans], NER_ONLY), strict=True):
        for ent in doc.ents:
            mention = _trim(text, window.start + ent.start_char, window.start + ent.end_char)
            if mention is not None:
                found.append((ent.label_, mention))
    merged = [e for e in _merge(found) if not wanted or e.label in wanted]
    merged.sort(key=lambda e: (-e.count, e.mentions[0].start))
    return EntitiesResult(tuple(merged), pipeline.engine)


def _validate_labels(labels: Sequence[str], known: Sequence[str]) -> set[str]:
    wanted = {label.strip().upper() for label in labels if label.strip()}
    unknown = sorted(wanted - set(known))
    if unknown:
        raise InvalidArgument(
            f"unknown entity label(s) {', '.join(unknown)}; this pipeline knows {', '.join(known)}",
            reason="UNKNOWN_ENTITY_LABEL",
            violations=[FieldViolation("labels", f"unknown label {label}") for label in unknown],
        )
    return wanted


def _trim(text: str, start: int, end: int) -> Mention | None:
    surface = text[start:end]
    lead = _LEADING_THE.match(surface)
    if lead and lead.end() < len(surface):
        start += lead.end()
    while end > start and text[end - 1] in _EDGE_PUNCT + " \t\n":
        end -= 1
    possessive = _POSSESSIVE.search(text, start, end)
    if possessive and possessive.start() > start:
        end = possessive.start()
    while start < end and text[start] in _EDGE_PUNCT + " \t\n":
        start += 1
    if start >= end:
        return None
    return Mention(text[start:end], start, end)


def normalise(surface: str, label: str) -> str:
    """The merge key of a mention: case, whitespace, punctuation and company suffixes ignored."""
    tokens = _NON_WORD.sub(" ", surface.lower().replace("’", "'")).split()
    if label == "ORG":
        while len(tokens) > 1 and tokens[-1] in _COMPANY_SUFFIXES:
            tokens.pop()
    return " ".join(tokens)


def _merge(found: list[tuple[str, Mention]]) -> list[Entity]:
    groups: dict[tuple[str, str], list[Mention]] = {}
    for label, mention in found:
        key = normalise(mention.text, label)
        if key:
            groups.setdefault((label, key), []).append(mention)
    canonical = {key: mentions[0].text for key, mentions in groups.items()}
    _merge_surnames(groups)
    return [
        Entity(canonical[key], key[0], tuple(sorted(mentions, key=lambda m: m.start)))
        for key, mentions in groups.items()
    ]


def _merge_surnames(groups: dict[tuple[str, str], list[Mention]]) -> None:
    """Folds a one-word PERSON ("Cook") into the only multi-word PERSON ending with it ("Tim Cook")."""
    people = [key for key in groups if key[0] == "PERSON"]
    for key in people:
        if " " in key[1]:
            continue
        full = [other for other in people if " " in other[1] and other[1].rsplit(" ", 1)[1] == key[1]]
        if len(full) == 1:  # none or several (two people share the surname): leave it alone
            groups[full[0]].extend(groups.pop(key))
