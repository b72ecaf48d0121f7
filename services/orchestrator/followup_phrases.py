"""Words and noun phrases of a question, as the follow-up resolver sees them: tokens with their offsets, runs of
capitalised words, determiner-led noun phrases, and the kind of thing each phrase names (person, group, place,
thing, plural).

Separate from the rewrite rules (``followups``) because it knows nothing of turns or pronouns: it only reads one
text, and both coreference and ellipsis take their candidates from it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from services.orchestrator.followup_words import (
    AUX,
    CONJUNCTIONS,
    DEMONSTRATIVES,
    DETERMINERS,
    FILLERS,
    GROUP_NOUNS,
    NAME_HEADS,
    PERSON_NOUNS,
    PERSON_PRONOUNS,
    PLACE_NOUNS,
    PLURAL_PRONOUNS,
    PREPOSITIONS,
    THING_PRONOUNS,
    TITLES,
    VERBS,
    WH,
)

_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[.'\u2019&-][A-Za-z0-9]+)*\.?|[^\sA-Za-z0-9]")
_NUMBER = re.compile(r"^\d[\d,.]*$")


@dataclass(frozen=True)
class Token:
    text: str
    start: int
    end: int

    @property
    def low(self) -> str:
        return self.text.lower().rstrip(".")

    @property
    def capitalised(self) -> bool:
        return self.text[:1].isupper() or (any(c.isdigit() for c in self.text) and any(c.isalpha() for c in self.text))

    @property
    def word(self) -> bool:
        return self.text[:1].isalnum()


@dataclass(frozen=True)
class Phrase:
    text: str
    start: int
    end: int
    """Token indexes, end exclusive."""
    proper: bool
    kind: str
    """person, group, place, thing or plural."""
    followed_by: str = ""
    """The word right after the phrase (a preposition of "the X of Y", a verb ...)."""
    preposition: str = ""
    """The preposition right before it ("in" of "in March")."""
    head: str = ""


def tokens(text: str) -> list[Token]:
    return [Token(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def is_stop(tok: Token) -> bool:
    low = tok.low
    return (low in WH or low in AUX or low in PREPOSITIONS or low in CONJUNCTIONS or low in PERSON_PRONOUNS
            or low in THING_PRONOUNS or low in PLURAL_PRONOUNS or low in FILLERS or low in {"i", "you", "we", "there"})


def proper_runs(toks: Sequence[Token]) -> list[tuple[int, int]]:
    """Runs of capitalised words (with "of", "and", "&", "de" between two of them, and numbers after one)."""
    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(toks):
        tok = toks[i]
        starts = tok.word and tok.capitalised and not (i == 0 and (is_stop(tok) or tok.low in DETERMINERS))
        if not starts or (tok.low in WH or tok.low in AUX) or tok.low in {"i"}:
            i += 1
            continue
        j = i + 1
        while j < len(toks):
            nxt = toks[j]
            if nxt.word and (nxt.capitalised or (_NUMBER.match(nxt.text) and j > i)) and nxt.low not in AUX:
                j += 1
            elif (nxt.low in {"of", "and", "&", "de", "von", "van", "du", "la"} and j + 1 < len(toks)
                  and toks[j - 1].low not in PERSON_NOUNS
                  and toks[j + 1].word and toks[j + 1].capitalised and toks[j + 1].low not in AUX
                  and not (nxt.low == "and" and _is_name_list_break(toks, i, j))):
                j += 2
            else:
                break
        runs.append((i, j))
        i = j
    return runs


def _is_name_list_break(toks: Sequence[Token], start: int, at: int) -> bool:
    """"Acme Logistics and Borealis Freight" is a list of two names, "Bank of America" one name."""
    return at - start >= 2


def kind_of(words: Sequence[str], proper: bool, after_determiner: bool) -> str:
    low = [w.lower().rstrip(".") for w in words]
    head = low[-1] if low else ""
    if any(w in TITLES for w in low[:1]):
        return "person"
    if head in PERSON_NOUNS:
        return "person"
    if head in GROUP_NOUNS:
        return "group"
    if head in PLACE_NOUNS:
        return "place"
    if proper:
        if head in NAME_HEADS or after_determiner or any(any(c.isdigit() for c in w) for w in low):
            return "thing"
        if 2 <= len(low) <= 3 and all(w.isalpha() for w in low):
            return "person"
        return "name"
    if head.endswith("s") and not head.endswith("ss") and len(head) > 3:
        return "plural"
    return "thing"


def phrases(text: str) -> list[Phrase]:
    """The noun phrases of a question: determiner-led ones and proper-noun runs, left to right."""
    toks = tokens(text)
    out: list[Phrase] = []
    proper = proper_runs(toks)
    covered: set[int] = set()

    def add(start: int, end: int, is_proper: bool, after_det: bool) -> None:
        words = [t.text for t in toks[start:end] if t.word]
        content = [t.text for t in toks[start:end] if t.word and t.low not in DETERMINERS]
        if not content:
            return
        following = toks[end].low if end < len(toks) else ""
        before = toks[start - 1].low if start > 0 else ""
        out.append(Phrase(text[toks[start].start:toks[end - 1].end], start, end, is_proper,
                           kind_of(content, is_proper, after_det), following,
                           before if before in PREPOSITIONS else "", content[-1].lower()))
        covered.update(range(start, end))
        del words

    i = 0
    while i < len(toks):
        tok = toks[i]
        if tok.low in {"the", "a", "an", "this", "that", "these", "those", "our", "your", "my"} and i + 1 < len(toks):
            if tok.low in DEMONSTRATIVES and (i + 1 >= len(toks) or not toks[i + 1].word
                                             or toks[i + 1].low in AUX or toks[i + 1].low in PREPOSITIONS):
                i += 1
                continue
            j = i + 1
            while j < len(toks) and toks[j].word and not is_stop(toks[j]) and toks[j].low not in DETERMINERS:
                j += 1
            # "does the lighthouse keeper inspect the lamp": the verb after the subject is no part of it.
            if j - i > 2 and (toks[j - 1].low in VERBS or _verb_like(toks[j - 1])):
                j -= 1
            # "the Handbook of Cats": a name with "of" inside stays whole.
            for run_start, run_end in proper:
                if i < run_start < j < run_end:
                    j = run_end
            if j > i + 1:
                has_proper = any(toks[k].capitalised for k in range(i + 1, j))
                add(i, j, has_proper, True)
                i = j
                continue
        i += 1
    for start, end in proper:
        if start in covered:
            continue
        before = toks[start - 1].low if start > 0 else ""
        add(start, end, True, before in DETERMINERS)
    out.sort(key=lambda p: p.start)
    return out


def _verb_like(tok: Token) -> bool:
    low = tok.low
    return low.endswith(("ed", "ing")) and len(low) > 4 and not tok.capitalised

