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
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

WH = frozenset("what who whom whose when where which why how".split())
AUX = frozenset(
    """is are was were be been being am do does did has have had can could will would shall should may might must
    isn't aren't wasn't weren't don't doesn't didn't hasn't haven't won't can't""".split()
)
PREPOSITIONS = frozenset(
    """of in on at for from to by with about into over under after before during since per between among through
    without within across against toward towards near""".split()
)
DETERMINERS = frozenset("the a an this that these those our your my its their his her".split())
CONJUNCTIONS = frozenset("and or but nor so yet".split())
PERSON_PRONOUNS = {"he": "subject", "she": "subject", "him": "object", "his": "possessive", "hers": "object"}
THING_PRONOUNS = {"it": "subject", "its": "possessive"}
PLURAL_PRONOUNS = {"they": "subject", "them": "object", "their": "possessive", "theirs": "object"}
DEMONSTRATIVES = frozenset("this that".split())
FILLERS = frozenset("please also then again too".split())
# Nouns naming a person (a "he" or "she" in a follow-up can be "the lighthouse keeper").
PERSON_NOUNS = frozenset(
    """keeper manager owner author writer director officer chair chairman chairwoman chairperson ceo cfo cto coo
    president founder engineer teacher doctor nurse architect designer painter composer inventor tenant landlord
    landlady employee customer client applicant candidate student pilot captain mayor minister judge lawyer
    accountant auditor inspector supervisor contractor buyer seller patient user member winner player coach guard
    clerk secretary treasurer editor reporter researcher scientist professor lecturer translator head principal
    leader chief driver operator worker technician secretary-general governor senator spokesperson spokesman
    spokeswoman husband wife mother father son daughter brother sister man woman boy girl child""".split()
)
# Nouns naming a group or organisation (a "they" more often than an "it").
GROUP_NOUNS = frozenset(
    """board committee team council company firm government ministry department agency staff crew family group
    union police authorities partners suppliers vendors customers members""".split()
)
# Last words of organisation, place and thing names ("Northwind Traders" is no person).
NAME_HEADS = frozenset(
    """inc ltd llc plc corp corporation company co group bank university college hospital clinic office council
    committee ministry department agency logistics freight metals plastics motors airlines systems solutions services
    holdings partners foundation institute trust association club school arena bridge hall centre center park street
    road river lake station airport port harbour harbor traders industries labs laboratories press media studios
    museum library church cathedral tower building branch plant warehouse factory mill market summit treaty act
    report manual handbook agreement plan project programme program fund festival cup league""".split()
)
PLACE_NOUNS = frozenset(
    """office branch plant warehouse factory site city town village country region building campus hospital clinic
    school station airport port harbour harbor depot store shop headquarters hq facility centre center mill lab
    laboratory library museum park hall arena""".split()
)
TITLES = frozenset("mr mrs ms miss dr prof sir dame lord lady".split())
MONTHS = frozenset(
    """january february march april may june july august september october november december jan feb mar apr jun
    jul aug sep sept oct nov dec""".split()
)
DAYS = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays fridays
    saturdays sundays weekdays weekends""".split()
)
# Frequent verbs in questions, so that "the lease say" ends its noun phrase at "say".
VERBS = frozenset(
    """say says said write writes wrote written sign signs signed own owns owned run runs ran make makes made take
    takes took give gives gave get gets got go goes went come comes came see sees saw know knows knew cost costs
    pay pays paid open opens opened close closes closed start starts started begin begins began end ends ended
    found founded lead leads led manage manages managed build builds built buy buys bought sell sells sold use
    uses used mean means meant require requires required include includes included cover covers covered allow
    allows allowed need needs needed want wants wanted inspect inspects inspected clean cleans cleaned service
    services serviced deliver delivers delivered supply supplies supplied decide decides decided approve approves
    approved publish publishes published design designs designed invent invents invented win wins won beat beats
    host hosts hosted happen happens happened work works worked live lives lived study studies studied teach
    teaches taught charge charges charged weigh weighs weighed earn earns earned employ employs employed hold
    holds held mention mentions mentioned describe describes described contain contains contained show shows
    showed shown list lists listed state states stated explain explains explained recommend recommends
    recommended change changes changed fix fixes fixed cause causes caused leave leaves left paint paints painted
    compose composes composed translate translates translated""".split()
)
_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[.'\u2019&-][A-Za-z0-9]+)*\.?|[^\sA-Za-z0-9]")
_YEAR = re.compile(r"^(1[5-9]\d\d|20\d\d)$")
_QUARTER = re.compile(r"^(q[1-4]|h[12]|fy\d{2,4})$", re.I)
_NUMBER = re.compile(r"^\d[\d,.]*$")


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


@dataclass(frozen=True)
class _Token:
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
class _Phrase:
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


def tokens(text: str) -> list[_Token]:
    return [_Token(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _is_stop(tok: _Token) -> bool:
    low = tok.low
    return (low in WH or low in AUX or low in PREPOSITIONS or low in CONJUNCTIONS or low in PERSON_PRONOUNS
            or low in THING_PRONOUNS or low in PLURAL_PRONOUNS or low in FILLERS or low in {"i", "you", "we", "there"})


def _proper_runs(toks: Sequence[_Token]) -> list[tuple[int, int]]:
    """Runs of capitalised words (with "of", "and", "&", "de" between two of them, and numbers after one)."""
    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(toks):
        tok = toks[i]
        starts = tok.word and tok.capitalised and not (i == 0 and (_is_stop(tok) or tok.low in DETERMINERS))
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


def _is_name_list_break(toks: Sequence[_Token], start: int, at: int) -> bool:
    """"Acme Logistics and Borealis Freight" is a list of two names, "Bank of America" one name."""
    return at - start >= 2


def _kind(words: Sequence[str], proper: bool, after_determiner: bool) -> str:
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


def phrases(text: str) -> list[_Phrase]:
    """The noun phrases of a question: determiner-led ones and proper-noun runs, left to right."""
    toks = tokens(text)
    out: list[_Phrase] = []
    proper = _proper_runs(toks)
    covered: set[int] = set()

    def add(start: int, end: int, is_proper: bool, after_det: bool) -> None:
        words = [t.text for t in toks[start:end] if t.word]
        content = [t.text for t in toks[start:end] if t.word and t.low not in DETERMINERS]
        if not content:
            return
        following = toks[end].low if end < len(toks) else ""
        before = toks[start - 1].low if start > 0 else ""
        out.append(_Phrase(text[toks[start].start:toks[end - 1].end], start, end, is_proper,
                           _kind(content, is_proper, after_det), following,
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
            while j < len(toks) and toks[j].word and not _is_stop(toks[j]) and toks[j].low not in DETERMINERS:
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


def _verb_like(tok: _Token) -> bool:
    low = tok.low
    return low.endswith(("ed", "ing")) and len(low) > 4 and not tok.capitalised


def _named_in_answer(turn: PastTurn) -> str:
    """The name a "who" question was answered with, when no short answer came with it (a chat client sends
    back only the answer's text): the first name in the answer that the question does not hold."""
    first = tokens(turn.question)[:1]
    if not first or first[0].low not in {"who", "whom"}:
        return ""
    asked = turn.question.lower()
    toks = tokens(re.sub(r"\[\d+\]", "", turn.answer))
    for start, end in _proper_runs(toks):
        words = [t.text for t in toks[start:end] if t.word]
        name = " ".join(words)
        if name.lower() not in asked and 1 <= len(words) <= 4 and all(w.rstrip(".").isalpha() for w in words):
            return name
    return ""


def _short_answer_phrase(turn: PastTurn) -> _Phrase | None:
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
        return _Phrase(answer, 0, 0, True, "plural")
    if not capitalised:
        return None
    words = [t.text for t in toks]
    kind = _kind(words, True, answer.lower().startswith("the "))
    if first in {"who", "whom"} and kind in {"person", "name"}:
        kind = "person"
    elif kind == "name":
        kind = "group" if first in {"which", "what"} else "thing"
    return _Phrase(answer, 0, 0, True, kind)


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
    def _coreference(self, question: str, toks: list[_Token], recent: Sequence[PastTurn]) -> Resolution:
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
                role = "possessive" if nxt is not None and nxt.word and not _is_stop(nxt) else "object"
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
    def _dummy_it(toks: Sequence[_Token], index: int) -> bool:
        """"Is it true that ...", "it is possible to ...": an "it" that stands for nothing."""
        window = [t.low for t in toks[index + 1:index + 5]]
        if any(w in {"that", "whether"} for w in window[1:3]):
            return True
        return bool(window) and window[0] in AUX and any(w in {"that", "to", "whether"} for w in window[2:])

    @staticmethod
    def _pronoun_demonstrative(toks: Sequence[_Token], index: int) -> bool:
        nxt = toks[index + 1] if index + 1 < len(toks) else None
        prev = toks[index - 1] if index > 0 else None
        if nxt is None or not nxt.word:
            return prev is not None and (prev.low in VERBS or prev.low in PREPOSITIONS)
        return nxt.low in AUX or nxt.low in VERBS

    @staticmethod
    def _locative_there(toks: Sequence[_Token], index: int) -> bool:
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
    def _candidates(turn: PastTurn) -> list[_Phrase]:
        found = phrases(turn.question)
        answer = _short_answer_phrase(turn)
        return ([answer] if answer is not None else []) + found

    @staticmethod
    def _ranked(candidates: Sequence[_Phrase], want: tuple[str, ...]) -> list[_Phrase]:
        """Candidates of the wanted kinds, best first: by kind, the short answer before the question's phrases,
        proper names before common nouns; the attribute X of "the X of Y" comes last of all (it is never what
        "it" stands for: "the horsepower of the Duster 360")."""
        attributes = {id(p) for i, p in enumerate(candidates)
                      if p.followed_by in {"of", "for", "on"} and i + 1 < len(candidates) and not p.proper}

        def rank(p: _Phrase) -> tuple[int, int, int, int]:
            return (id(p) in attributes, want.index(p.kind), p.end != 0, not p.proper)

        return sorted((p for p in candidates if p.kind in want), key=rank)

    # -- ellipsis -------------------------------------------------------------------------------
    def _ellipsis(self, question: str, toks: list[_Token], last: PastTurn) -> Resolution | None:
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
                    while end < len(prev_toks) and prev_toks[end].word and not _is_stop(prev_toks[end]):
                        end += 1
                    if end > i + 1:
                        return prev_toks[i + 1].start, prev_toks[end - 1].end
        # A year, a quarter, a month or a day for one of the same kind.
        for test in (lambda w: bool(_YEAR.match(w)), lambda w: bool(_QUARTER.match(w)), lambda w: w in MONTHS,
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
    def _span(prev_toks: Sequence[_Token], phrase: _Phrase) -> tuple[int, int]:
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
