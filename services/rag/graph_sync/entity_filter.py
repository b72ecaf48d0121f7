"""What NER finds that is no entity worth a node, and one entity written several ways in one document.

Dropped before the graph sees them: bare numbers and amounts (no letter, or a numeric label), sign-offs
("Best Regards", "Kind regards"), a common noun taken for a person ("Handbook": the document also writes it
in lower case) and a fragment of a word that PDF extraction split ("Infor" of "Infor mation", when the text
also has the joined "information"). Merged, within the document, the counts going to the longest name: a
surname alone into the one full name ending with it ("Smith" into "Jane Smith"), and an acronym into the
one name whose initials it is ("IBM" into "International Business Machines"). Across documents, names meet
through ``services.vocabulary.entity_resolution.entity_key`` (case, accents, punctuation, legal suffixes).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from services.vocabulary.entity_resolution import entity_key

Entity = tuple[str, str, int]
NUMERIC_LABELS = frozenset({"CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY"})
SIGN_OFFS = frozenset(
    """best regards|kind regards|warm regards|warmest regards|regards|with regards|best wishes|sincerely|yours sincerely|
    sincerely yours|yours truly|yours faithfully|faithfully|thanks|thank you|many thanks|cheers|dear|hi|hello|
    respectfully|cordially|take care""".replace("\n", "").split("|")
)
_LETTER = re.compile(r"[^\W\d_]")
_STOP_INITIALS = frozenset({"of", "and", "the", "for", "&", "de"})


def _normal(name: str) -> str:
    return " ".join(name.lower().split())


def _is_common_noun(word: str, text: str) -> bool:
    """"Handbook" is a noun when the text also writes it in lower case, away from a sentence start."""
    return re.search(rf"(?<![.!?]\s)(?<=\s){re.escape(word.lower())}\b", text) is not None


class _Words:
    """The text's words, lower-cased, read once per document: every entity's split-fragment check looks them up
    instead of scanning the text again for each time the name is followed by a word (a name written 2,500 times
    took 18 s that way, on rag's event loop)."""

    def __init__(self, text: str) -> None:
        self.lowered = text.lower()
        self.tokens = frozenset(re.findall(r"\w+", self.lowered))

    def has(self, word: str) -> bool:
        if re.fullmatch(r"\w+", word):
            return word in self.tokens
        return re.search(rf"\b{re.escape(word)}\b", self.lowered) is not None


def _is_split_fragment(word: str, text: str, words: _Words | None = None) -> bool:
    """"Infor" of "Infor mation": followed by a lower-case piece with which it makes a word the text has."""
    words = words or _Words(text)
    followers = {match.group(1) for match in re.finditer(rf"\b{re.escape(word)} ([a-z]{{2,}})\b", text)}
    return any(words.has((word + follower).lower()) for follower in followers)


def clean_entities(entities: Sequence[Entity], text: str) -> list[Entity]:
    """CPU work over the whole text: callers on an event loop run it in a worker thread."""
    words = _Words(text)
    kept: list[Entity] = []
    for name, label, count in entities:
        parts = name.split()
        if not _LETTER.search(name) or label in NUMERIC_LABELS:
            continue
        if _normal(name).strip(" ,.!") in SIGN_OFFS:
            continue
        if len(parts) == 1 and (_is_split_fragment(name, text, words)
                                or (label == "PERSON" and _is_common_noun(name, text))):
            continue
        kept.append((name, label, count))
    return _merge_aliases(kept)


def _initials(name: str) -> str:
    return "".join(w[0] for w in name.split() if w.lower() not in _STOP_INITIALS and w[:1].isalpha()).upper()


def _merge_aliases(entities: list[Entity]) -> list[Entity]:
    """Surnames and acronyms into the one longer name they stand for (its spelling, the counts summed)."""
    target: dict[int, int] = {}
    for i, (name, label, _) in enumerate(entities):
        words = name.split()
        if len(words) != 1:
            continue
        if label == "PERSON":
            fuller = [j for j, (other, other_label, _) in enumerate(entities)
                      if j != i and other_label == "PERSON" and len(other.split()) > 1
                      and entity_key(other.split()[-1]) == entity_key(name)]
        elif name.isupper() and 2 <= len(name) <= 6:
            fuller = [j for j, (other, _, _) in enumerate(entities)
                      if j != i and len(other.split()) >= len(name) and _initials(other) == name]
        else:
            continue
        if len(fuller) == 1:
            target[i] = fuller[0]
    merged: dict[int, list] = {}
    for i, (_, _, count) in enumerate(entities):
        into = target.get(i, i)
        if into not in merged:
            merged[into] = list(entities[into])
            merged[into][2] = 0
        merged[into][2] += count
    out = [(n, label, c) for n, label, c in (merged[k] for k in sorted(merged))]
    out.sort(key=lambda e: -e[2])
    return out
