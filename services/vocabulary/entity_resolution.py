"""Canonical keys for topics and entities, so repeated mentions of one thing become one node.

Two spellings share a key when they differ only in case, accents, whitespace, punctuation,
a possessive ending, or (entities only) a corporate suffix such as "Inc." or "Corporation":
"Apple Inc.", "apple, inc", "APPLE" and "Apple's" all resolve to ``apple``. The display name of
a node is the first spelling seen; the key is what MERGE matches on.
"""

from __future__ import annotations

import re
import unicodedata

MAX_ID_CHARS = 512
"""The longest document id the graph takes."""
MAX_NAME_CHARS = 512
"""The longest topic, entity or title name the graph keeps (longer ones are cut: rag cuts them before sending)."""

# Trailing legal-form words dropped from entity names (repeatedly: "Acme Co., Ltd." -> "acme").
CORPORATE_SUFFIXES = frozenset(
    """inc incorporated corp corporation co company ltd limited llc llp lp plc gmbh ag sa sarl bv nv
    pty pte oy ab as spa srl kk""".split()
)
_APOSTROPHES = "'\u2019\u02bc\u2018`\u00b4"
_POSSESSIVE = re.compile(rf"(?<=\w)[{_APOSTROPHES}]s?$")
_POSSESSIVE_WORD = re.compile(rf"(?<=\w)[{_APOSTROPHES}]s?(?=\s)")
# A period after a single letter is an abbreviation ("U.S."); between digits, a decimal point.
_ABBREVIATION_DOT = re.compile(r"(?<=\b\w)\.")
_DECIMAL_DOT = re.compile(r"(?<=\d)\.(?=\d)")
_SPACES = re.compile(r"\s+")


def display_name(name: str) -> str:
    """The name as shown: whitespace collapsed, otherwise as written."""
    return _SPACES.sub(" ", name).strip()


def _strip_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _words(name: str) -> list[str]:
    text = _strip_accents(unicodedata.normalize("NFKC", name)).casefold()
    text = _SPACES.sub(" ", text).strip()
    text = _POSSESSIVE.sub("", text)
    text = _POSSESSIVE_WORD.sub("", text)
    text = text.replace("&", " and ")
    text = _DECIMAL_DOT.sub("\0", text)  # protect decimal points from the punctuation pass
    text = _ABBREVIATION_DOT.sub("", text)
    for apostrophe in _APOSTROPHES:
        text = text.replace(apostrophe, "")
    cleaned = []
    for ch in text:
        if ch == "\0":
            cleaned.append(".")
        elif unicodedata.category(ch)[0] in "PSZC":
            cleaned.append(" ")
        else:
            cleaned.append(ch)
    return "".join(cleaned).split()


def topic_key(name: str) -> str:
    """Canonical key of a topic ("Machine-Learning" and "machine learning" -> "machine learning")."""
    return " ".join(_words(name))


def entity_key(name: str) -> str:
    """Canonical key of an entity: as for topics, minus a leading "the" and trailing corporate suffixes."""
    words = _words(name)
    while len(words) > 1 and words[-1] in CORPORATE_SUFFIXES:
        words.pop()
    if len(words) > 1 and words[0] == "the":
        words.pop(0)
    return " ".join(words)
