"""Follow-up questions read against the earlier turns of a conversation, without a language model.

"When did she write it?" after "Who wrote the Handbook of Cats?" (answered "Jane Smith") is asked as
"When did Jane Smith write the Handbook of Cats?"; "And the Camaro Z28?" after "What is the
horsepower of the Duster 360?" as "What is the horsepower of the Camaro Z28?". The retriever and the
extractive reader see one self-contained question, so the mesh stays offline by default.

Two rewrites, both from the earlier questions (as resolved) and their short answers:

- coreference: a pronoun (he, she, it, they, his, its, their, them, there, this, that) is replaced by
  the phrase it most likely stands for. Candidates are proper-noun phrases ("the Harbour Arena",
  "Duster 360"), determiner-led noun phrases ("the tenancy agreement") and the previous short answer;
  a person pronoun takes a person (the answer to a "who" question, a two-to-three word name, a noun
  such as "keeper" or "manager"), "they" a list of names, an organisation or a plural, "it" a thing
  (in "the X of Y", Y: "the horsepower of the Duster 360" -> the Duster 360), "there" a place.
- ellipsis: a fragment ("And the south crane?", "What about 2022?", "And in April?") takes the
  previous question and replaces the slot of the same kind: the phrase after the same preposition,
  a year, a phrase with the same head noun, a proper name, or in "the X of Y" the X for a common noun.

Anything else is left as asked. The rules are word-class heuristics (a few closed word lists, case,
suffixes), judged on held-apart examples in ``tests/orchestrator/data/`` (see the orchestrator README);
they know no question's wording.

The word lists are in ``followup_words`` and the phrase finder in ``followup_phrases``; this module holds the
turns, the two rewrites and the choice of an antecedent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from services.orchestrator.followup_phrases import Phrase, Token, is_stop, kind_of, phrases, proper_runs, tokens
from services.orchestrator.followup_words import (
    AUX,
    DAYS,
    DEMONSTRATIVES,
    MONTHS,
    PERSON_PRONOUNS,
    PLURAL_PRONOUNS,
    PREPOSITIONS,
    QUARTER,
    THING_PRONOUNS,
    VERBS,
    WH,
    YEAR,
)


@dataclass(frozen=True)
class PastTurn:
    """An earlier turn as the resolver reads it: the question as answered, and the answer."""

    question: str
    answer: str = ""
    short_answer: str = ""


@dataclass(frozen=True)
class Resolution:
    question: str
    resolved: str
    replacements: tuple[tuple[str, str], ...] = ()
    """(what was asked, what it was read as), in order."""

    @property
    def rewritten(self) -> bool:
        return self.resolved != self.question

    @property
    def explanation(self) -> str:
        return "; ".join(f"{a} -> {b}" for a, b in self.replacements)



def _named_in_answer(turn: PastTurn) -> str:
    """The name a "who" question was answered with, when no short answer came with it (a chat client sends
    back only the answer's text): the first name in the answer that the question does not hold."""
    first = tokens(turn.question)[:1]
    if not first or first[0].low not in {"who", "whom"}:
        return ""
    asked = turn.question.lower()
    toks = tokens(re.sub(r"\[\d+\]", "", turn.answer))
    for start, end in proper_runs(toks):
        words = [t.text for t in toks[start:end] if t.word]
        name = " ".join(words)
        if name.lower() not in asked and 1 <= len(words) <= 4 and all(w.rstrip(".").isalpha() for w in words):
            return name
    return ""


def _short_answer_phrase(turn: PastTurn) -> Phrase | None:
    answer = (turn.short_answer.strip() or _named_in_answer(turn)).rstrip(".")
    if not answer or len(answer) > 80:
        return None
    toks = [t for t in tokens(answer) if t.word]
    if not toks:
        return None
    first = tokens(turn.question)[0].low if tokens(turn.question) else ""
    capitalised = all(t.capitalised or t.low in {"and", "of", "&", "de"} for t in toks)
    names = [p for p in re.split(r"\s*(?:,|\band\b|&)\s*", answer) if p.strip()]
    if capitalised and len(names) >= 2:
        return Phrase(answer, 0, 0, True, "plural")
    if not capitalised:
        return None
    words = [t.text for t in toks]
    kind = kind_of(words, True, answer.lower().startswith("the "))
    if first in {"who", "whom"} and kind in {"person", "name"}:
        kind = "person"
    elif kind == "name":
        kind = "group" if first in {"which", "what"} else "thing"
    return Phrase(answer, 0, 0, True, kind)


def _possessive(text: str) -> str:
    return f"{text}'" if text.endswith("s") and not text.endswith("ss") else f"{text}'s"


class FollowUpResolver:
    """Reads a question against earlier turns (most recent last); see the module doc."""

    def __init__(self, max_turns: int = 3) -> None:
        self.max_turns = max_turns

    def resolve(self, question: str, history: Sequence[PastTurn]) -> Resolution:
        question = question.strip()
        recent = [t for t in history if t.question.strip()][-self.max_turns:]
        if not recent or not question:
            return Resolution(question, question)
        toks = tokens(question)
        elided = self._ellipsis(question, toks, recent[-1])
        if elided is not None:
            return elided
        return self._coreference(question, toks, recent)

    # -- coreference ------------------------------------------------------------------------
    def _coreference(self, question: str, toks: list[Token], recent: Sequence[PastTurn]) -> Resolution:
        edits: list[tuple[int, int, str, str]] = []
        used: set[str] = set()
        for index, tok in enumerate(toks):
            low = tok.low
            role = None
            want: tuple[str, ...] = ()
            if low in PERSON_PRONOUNS:
                role = PERSON_PRONOUNS[low]
                if low == "her":
                    role = "possessive"
                want = ("person",)
            elif low == "her":
                nxt = toks[index + 1] if index + 1 < len(toks) else None
                role = "possessive" if nxt is not None and nxt.word and not is_stop(nxt) else "object"
                want = ("person",)
            elif low in THING_PRONOUNS:
                if low == "it" and self._dummy_it(toks, index):
                    continue
                role = THING_PRONOUNS[low]
                want = ("thing", "name", "place", "group")
            elif low in PLURAL_PRONOUNS:
                role = PLURAL_PRONOUNS[low]
                want = ("plural", "group", "name", "thing")
            elif low in DEMONSTRATIVES and self._pronoun_demonstrative(toks, index):
                role = "subject"
                want = ("thing", "name", "group")
            elif low == "there" and self._locative_there(toks, index):
                role = "place"
                want = ("place",)
            if role is None:
                continue
            found = self._antecedent(want, recent, used, low)
            if found is None:
                continue
            used.add(found.lower())
            replacement = found
            if role == "possessive":
                replacement = _possessive(found)
            elif role == "place":
                replacement = f"at {found}" if not found.lower().startswith(("at ", "in ")) else found
            if index == 0:
                replacement = replacement[:1].upper() + replacement[1:]
            edits.append((tok.start, tok.end, tok.text, replacement))
        return self._apply(question, edits)

    @staticmethod
    def _dummy_it(toks: Sequence[Token], index: int) -> bool:
        """"Is it true that ...", "it is possible to ...": an "it" that stands for nothing."""
        window = [t.low for t in toks[index + 1:index + 5]]
        if any(w in {"that", "whether"} for w in window[1:3]):
            return True
        return bool(window) and window[0] in AUX and any(w in {"that", "to", "whether"} for w in window[2:])

    @staticmethod
    def _pronoun_demonstrative(toks: Sequence[Token], index: int) -> bool:
        nxt = toks[index + 1] if index + 1 < len(toks) else None
        prev = toks[index - 1] if index > 0 else None
        if nxt is None or not nxt.word:
            return prev is not None and (prev.low in VERBS or prev.low in PREPOSITIONS)
        return nxt.low in AUX or nxt.low in VERBS

    @staticmethod
    def _locative_there(toks: Sequence[Token], index: int) -> bool:
        prev = toks[index - 1] if index > 0 else None
        nxt = toks[index + 1] if index + 1 < len(toks) else None
        if prev is not None and prev.low in AUX:
            return False  # "is there a fee"
        return nxt is None or not nxt.word or nxt.low in PREPOSITIONS

    def _antecedent(self, want: tuple[str, ...], recent: Sequence[PastTurn], used: set[str], pronoun: str) -> str | None:
        for turn in reversed(recent):
            for phrase in self._ranked(self._candidates(turn), want):
                if phrase.text.lower() not in used:
                    return phrase.text
        return None

    @staticmethod
    def _candidates(turn: PastTurn) -> list[Phrase]:
        found = phrases(turn.question)
        answer = _short_answer_phrase(turn)
        return ([answer] if answer is not None else []) + found

    @staticmethod
    def _ranked(candidates: Sequence[Phrase], want: tuple[str, ...]) -> list[Phrase]:
        """Candidates of the wanted kinds, best first: by kind, the short answer before the question's phrases,
        proper names before common nouns; the attribute X of "the X of Y" comes last of all (it is never what
        "it" stands for: "the horsepower of the Duster 360")."""
        attributes = {id(p) for i, p in enumerate(candidates)
                      if p.followed_by in {"of", "for", "on"} and i + 1 < len(candidates) and not p.proper}

        def rank(p: Phrase) -> tuple[int, int, int, int]:
            return (id(p) in attributes, want.index(p.kind), p.end != 0, not p.proper)

        return sorted((p for p in candidates if p.kind in want), key=rank)

    # -- ellipsis -------------------------------------------------------------------------------
    def _ellipsis(self, question: str, toks: list[Token], last: PastTurn) -> Resolution | None:
        words = [t for t in toks if t.word]
        if not words:
            return None
        lows = [t.low for t in words]
        start = 0
        if lows[:2] in (["what", "about"], ["how", "about"], ["what", "of"]):
            start = 2
        elif lows[:1] in (["and"], ["or"]) or lows[:2] == ["same", "for"]:
            start = 1 if lows[0] != "same" else 2
        elif len(words) > 5 or any(w in WH or w in AUX or w in VERBS for w in lows):
            return None
        rest = words[start:]
        if not rest or any(w.low in AUX or w.low in VERBS for w in rest) or any(
                w.low in PERSON_PRONOUNS or w.low in THING_PRONOUNS or w.low in PLURAL_PRONOUNS for w in rest):
            return None
        if start and rest[0].low in WH:
            return None
        if rest[0].low == "for" and len(rest) > 1 and start:
            rest = rest[1:]
            preposition = ""
        else:
            preposition = rest[0].low if rest[0].low in PREPOSITIONS else ""
            if preposition:
                rest = rest[1:]
        if not rest:
            return None
        fragment = question[rest[0].start:rest[-1].end]
        previous = last.question.strip()
        slot = self._slot(previous, fragment, preposition)
        if slot is None:
            return None
        a, b = slot
        resolved = previous[:a] + fragment + previous[b:]
        return Resolution(question, resolved, ((previous[a:b], fragment),))

    def _slot(self, previous: str, fragment: str, preposition: str) -> tuple[int, int] | None:
        """Character span of ``previous`` that ``fragment`` takes the place of."""
        prev_toks = tokens(previous)
        frag_toks = [t for t in tokens(fragment) if t.word]
        frag_low = [t.low for t in frag_toks]
        if preposition:
            for i, tok in enumerate(prev_toks):
                if tok.low == preposition and i + 1 < len(prev_toks):
                    end = i + 1
                    while end < len(prev_toks) and prev_toks[end].word and not is_stop(prev_toks[end]):
                        end += 1
                    if end > i + 1:
                        return prev_toks[i + 1].start, prev_toks[end - 1].end
        # A year, a quarter, a month or a day for one of the same kind.
        for test in (lambda w: bool(YEAR.match(w)), lambda w: bool(QUARTER.match(w)), lambda w: w in MONTHS,
                     lambda w: w in DAYS):
            if len(frag_low) == 1 and test(frag_low[0]):
                for tok in prev_toks:
                    if test(tok.low):
                        return tok.start, tok.end
        candidates = phrases(previous)
        if not candidates:
            return None
        frag_phrases = phrases(fragment)
        frag = frag_phrases[0] if frag_phrases else None
        frag_head = frag_low[-1] if frag_low else ""
        # The phrase with the same head noun: "the north crane" for "the south crane".
        for p in candidates:
            if p.head == frag_head:
                return self._span(prev_toks, p)
        is_proper = frag.proper if frag is not None else any(t.capitalised for t in frag_toks)
        if is_proper:
            proper = [p for p in candidates if p.proper and p.kind != "person"] or [p for p in candidates if p.proper]
            if proper:
                return self._span(prev_toks, proper[-1])
        # A common noun in "the X of Y" takes X's place ("the weight" for "the horsepower").
        for i, p in enumerate(candidates):
            if p.followed_by in {"of", "for", "on", "in"} and i + 1 < len(candidates):
                return self._span(prev_toks, p)
        return self._span(prev_toks, candidates[-1])

    @staticmethod
    def _span(prev_toks: Sequence[Token], phrase: Phrase) -> tuple[int, int]:
        start = phrase.start
        return prev_toks[start].start, prev_toks[phrase.end - 1].end

    @staticmethod
    def _apply(question: str, edits: Sequence[tuple[int, int, str, str]]) -> Resolution:
        if not edits:
            return Resolution(question, question)
        out, at = [], 0
        for start, end, _, replacement in edits:
            out.append(question[at:start])
            out.append(replacement)
            at = end
        out.append(question[at:])
        return Resolution(question, "".join(out), tuple((asked, read) for _, _, asked, read in edits))
