"""The reader: from ranked evidence to a short answer of the asked-for type, with its source.

Given the question's answer type (``answer_types``) and the engine's ranked candidate
sentences, the reader:
- answers from a table cell when a retrieved table has a row the question names and a column
  it asks for (``tables.lookup``), citing the row and saying which row and column;
- answers a list question with the items of a list (bullet lines, or an enumeration "A, B and
  C" in a sentence) near the question's terms;
- otherwise reads the best few sentences for a span of the asked-for type (``typed_spans``)
  that the question does not already contain, nearest the question's terms, and cites its
  sentence; an acronym question is answered by its expansion;
- checks (``question_terms``) that the evidence (the source, its neighbours, its headings and file name) covers the
  question's key terms: every name and number of the question, and most of its nouns; type
  words ("what fax number") only name the answer's shape and are not required.

Headings, captions and fragments ending in ":" are never answers on their own. A typed
question without a span of its type in the evidence is not answered (the fax number of a
document without one is INSUFFICIENT, never a nearby sentence). Who/where questions are softer:
named-entity recognition misses lowercase names ("the harbour office", "the blue crane"), so a
sentence that covers the question without an entity of the type is read as an untyped answer,
below any sentence that has one, and needs the learned answerability vote.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from services.rag.answers import lexical
from services.rag.answers.list_items import WHO_LIST, bullets_after, enumeration, people_in, with_next
from services.rag.answers.attributes import attribute_of, label_strength
from services.rag.answers.answer_types import NAMED, TYPED, AnswerType, classify
from services.rag.answers.sentences import Span, split_sentences
from services.rag.answers.question_terms import (
    category_terms,
    coverage,
    key_terms,
    made_by,
    matched_count,
    plural_category,
    possessed_terms,
    source_reference,
)
from services.rag.answers.spans import short_answer
from services.rag.answers.structural import asks_signer, sign_off
from services.rag.answers.tables import WIDE_COLUMNS, Table, lookup, tables_in
from services.rag.answers.typed_spans import SETTLEMENTS, TypedSpan, acronym_expansion, acronyms_in, typed_spans
from services.rag.retrieval import RetrievedChunk

READ_SENTENCES = 6
"""Best-ranked sentences the reader looks into for a typed span."""
MIN_NOUN_COVERAGE = 0.5
"""Share of the question's key nouns the evidence must hold."""
_SETTLEMENT_WORDS = lexical.content_terms("city cities town country countries state province county village capital")
"""Words of a "what city/country" question: its answer is a settlement (a GPE entity), not a street."""
STRONG_LABEL_LEAD = 10.0
"""Score lead of a strongly labelled value over any unlabelled one (it always wins)."""
STRONG_LABEL_COVERAGE = 0.4
"""The same for a value its counted noun or toll-free form labels (``attributes.label_strength`` 2)."""
_CAPTION = re.compile(r"^\s*(?:table|figure|fig\.|chart|exhibit|appendix|section|chapter)\s*[\dA-Z]+[.:]", re.I)


@dataclass(frozen=True)
class Reading:
    kind: AnswerType
    hit: RetrievedChunk
    source: Span
    """The sentence, row or list the answer comes from (offsets inside the chunk text)."""
    short: str
    short_start: int = -1
    """Offsets of the short answer inside the chunk text (-1 when it is the whole source)."""
    short_end: int = -1
    row_label: str = ""
    column_header: str = ""
    items: tuple[str, ...] = ()
    coverage: float = 0.0
    names_covered: bool = True
    typed: bool = True
    """The short answer has the asked-for shape (always true for untyped questions)."""
    soft: bool = False
    """A who/where question read as an untyped one: no entity of the asked-for type in its sentence."""
    from_table: bool = False
    unseen_terms: int = 0
    """Key terms of the question found in none of the retrieved passages (nor their sources)."""
    key_term_count: int = 0
    possessed_covered: bool = True
    """What a possessive of the question names ("Prince Vasili's daughter") is in the answer's sentence or its neighbours."""
    labelled: int | None = None
    """How strongly the document ties the value to the attribute asked about (``attributes``): None when the
    question names none, 0 when nothing near the value names it."""

    @property
    def supported(self) -> bool:
        # One key term the documents never use is tolerated only in a long question whose other
        # terms the evidence holds (a user's own word for the thing, "rule" for "approval").
        # A value labelled by the very attribute asked about ("21 million passages") carries that evidence
        # itself: its other terms may be the user's own words.
        strong = self.labelled == 2
        unseen_ok = self.unseen_terms == 0 or (self.unseen_terms == 1 and (
            (self.key_term_count >= 4 and self.coverage >= 0.75) or (strong and self.key_term_count >= 3)))
        least = STRONG_LABEL_COVERAGE if strong else MIN_NOUN_COVERAGE
        return (self.typed and self.names_covered and self.coverage >= least and self.labelled != 0
                and self.possessed_covered and (self.from_table or unseen_ok))


_SECTION_HEADING = re.compile(r"^\s*(?:\d+(?:\.\d+)*\.?|[IVX]+\.|[A-Z]\.)\s+[A-Z][^.!?]*$")


def is_fragment(text: str, heading_path: Sequence[str] = ()) -> bool:
    """Headings, captions and fragments ending in ":" (never an answer on their own)."""
    body = " ".join(text.split())
    if body.endswith(":") or _CAPTION.match(body):
        return True
    if any(body == " ".join(h.split()) for h in heading_path):
        return True
    words = lexical.tokens(body)
    if len(words) <= 8 and _SECTION_HEADING.match(body):
        return True
    return len(words) <= 6 and body.isupper() and not any(ch.isdigit() for ch in body)


def _context(hit: RetrievedChunk) -> str:
    p = hit.chunk.provenance
    return " ".join((p.filename.rsplit(".", 1)[0].replace("_", " ").replace("-", " "), p.sheet_name, *p.heading_path))


def _window(text: str, spans: Sequence[Span], index: int) -> str:
    return text[spans[max(index - 1, 0)].start : spans[min(index + 1, len(spans) - 1)].end]


class Reader:
    def __init__(self, similarity: Callable[[str, list[str]], np.ndarray] | None = None) -> None:
        self._similarity = similarity

    def read(self, question: str, ranked: Sequence, retrieved: Sequence[RetrievedChunk]) -> Reading | None:
        """The best reading of the evidence, or None when nothing of the asked-for kind is there."""
        readings = []
        asked, reference = source_reference(question)
        if reference:
            # "In the DPR paper": the document must be that paper; the passage need not say so.
            reading = self._read(asked, ranked, retrieved)
            if reading is not None:
                same = [h for h in retrieved if h.chunk.document_id == reading.hit.chunk.document_id]
                document = frozenset().union(*(lexical.content_terms(f"{h.chunk.text} {_context(h)}") for h in same))
                if matched_count(reference, document) == len(reference):
                    readings.append(self._checked(asked, reading, retrieved))
        if not any(r.supported for r in readings):
            # Read as asked as well: the passage itself may name its source.
            reading = self._read(question, ranked, retrieved)
            if reading is not None:
                readings.append(self._checked(question, reading, retrieved))
        return next((r for r in readings if r.supported), readings[0] if readings else None)

    def _checked(self, question: str, reading: Reading, retrieved: Sequence[RetrievedChunk]) -> Reading:
        """The reading with what the question asks that it lacks: possessed nouns, terms no passage holds."""
        names, nouns = key_terms(question, reading.kind)
        # The class asked about ("which warehouse") need not be in the answer's sentence, but documents
        # that never use the word anywhere do not hold the answer.
        asked = names | nouns
        if reading.items or reading.kind is AnswerType.LIST or plural_category(question):
            # "Which broadcasters", "which elements": the members are named, not the class.
            asked -= category_terms(question)
        everywhere = frozenset().union(*(lexical.content_terms(f"{h.chunk.text} {_context(h)}") for h in retrieved))
        attribute = attribute_of(question, reading.kind)
        if reading.labelled and attribute is not None:
            everywhere |= attribute.terms
        possessed = possessed_terms(question) & (names | nouns)
        if possessed and not reading.from_table and not reading.labelled:
            # The relation asked about must be where the answer is: "she greeted Prince Vasili" is not his daughter.
            text = reading.hit.chunk.text
            spans = split_sentences(text)
            index = next((i for i, sp in enumerate(spans) if sp.start <= reading.source.start < sp.end), None)
            window = _window(text, spans, index) if index is not None else reading.source.text
            near = lexical.content_terms(f"{window} {reading.source.text} {_context(reading.hit)}")
            reading = replace(reading, possessed_covered=matched_count(possessed, near) == len(possessed))
        return replace(reading, unseen_terms=len(asked) - matched_count(asked, everywhere),
                       key_term_count=len(asked - category_terms(question)))

    def _read(self, question: str, ranked: Sequence, retrieved: Sequence[RetrievedChunk]) -> Reading | None:
        kind = classify(question)
        if kind not in (AnswerType.DEFINITION, AnswerType.YES_NO):
            cell = self.table_cell(question, kind, retrieved)
            if cell is not None:
                return cell
        if asks_signer(question):
            signed = self.signer(question, kind, retrieved)
            if signed is not None:
                return signed
        if kind is AnswerType.LIST:
            listed = self.list_items(question, ranked)
            if listed is not None:
                return listed
        return self.sentence(question, kind, ranked)

    # -- tables ----------------------------------------------------------------------------------
    def table_cell(self, question: str, kind: AnswerType, retrieved: Sequence[RetrievedChunk]) -> Reading | None:
        found: list[tuple[int, Table, str]] = []
        by_document: dict[str, list[Table]] = {}
        for index, hit in enumerate(retrieved):
            for table in tables_in(hit.chunk.text):
                found.append((index, table, _context(hit)))
                by_document.setdefault(hit.chunk.document_id, []).append(table)
        if not found:
            return None
        # A block of rows without a header borrows one of the same width from its document.
        patched = []
        for index, table, context in found:
            if table.header is None:
                donors = [t.header for t in by_document[retrieved[index].chunk.document_id] if t.header is not None]
                donor = next((h for h in donors if len(h.cells) == table.width), None) or next(
                    (h for h in donors if min(len(h.cells), table.width) >= WIDE_COLUMNS), None)
                table = Table(donor, table.rows, table.title, table.width, borrowed=donor is not None)
            patched.append((index, table, context))
        similar = self._similarity
        similarity = (lambda texts: similar(question, texts)) if similar else None
        answer = lookup(question, patched, similarity)
        if answer is None or not _fits(kind, answer.cell.text):
            return None
        index = next(i for i, t, _ in patched if t is answer.table)
        hit = retrieved[index]
        text = hit.chunk.text
        row = Span(answer.row.start, answer.row.end, text[answer.row.start : answer.row.end])
        header = " ".join(answer.table.header.texts()) if answer.table.header else ""
        # A borrowed header is part of the evidence: the names it holds count as found.
        cover, names = coverage(question, kind, f"{row.text} {answer.column_header} {answer.table.title} {header}",
                                _context(hit), f"{text} {header}")
        return Reading(kind, hit, row, answer.cell.text, answer.cell.start, answer.cell.end, answer.row_label,
                       answer.column_header, coverage=cover, names_covered=names, from_table=True)

    # -- sign-offs -------------------------------------------------------------------------------
    def signer(self, question: str, kind: AnswerType, retrieved: Sequence[RetrievedChunk]) -> Reading | None:
        """"Who signed the memo": the name under the first retrieved letter's sign-off (or its From: line)."""
        for hit in retrieved[:READ_SENTENCES]:
            text = hit.chunk.text
            name = sign_off(text)
            if name is None:
                continue
            # The sign-off and the name, as one cited unit ("Best Regards, / Mallori").
            start = text.rfind("\n", 0, max(text.rfind("\n", 0, name.start), 0)) + 1
            source = Span(start, name.end, text[start:name.end])
            cover, names = coverage(question, kind, source.text, _context(hit), text)
            return Reading(kind, hit, source, name.text, name.start, name.end, coverage=cover, names_covered=names)
        return None

    # -- lists -----------------------------------------------------------------------------------
    def list_items(self, question: str, ranked: Sequence) -> Reading | None:
        best: tuple[float, Reading] | None = None
        # "Who are the authors": a by-line of names ("Vladimir Karpukhin∗, Barlas Oguz, ...") has no "and".
        people = bool(WHO_LIST.search(question))
        for position, scored in enumerate(ranked[: READ_SENTENCES * (2 if people else 1)]):
            hit, span = scored.retrieved, scored.span
            text = hit.chunk.text
            named = people_in(with_next(text, span)) if people else []
            items = named or bullets_after(text, span) or enumeration(span)
            if len(items) < 2:
                continue
            start, end = min(s for s, _, _ in items), max(e for _, e, _ in items)
            start, end = min(start, span.start), max(end, span.end)
            source = Span(start, end, text[start:end])
            spans = split_sentences(text)
            index = next((i for i, s in enumerate(spans) if s.start == span.start), 0)
            window = f"{_window(text, spans, index)} {source.text}" if spans else source.text
            cover, names = coverage(question, AnswerType.LIST, window, _context(hit), text)
            own, _ = coverage(question, AnswerType.LIST, source.text, "", source.text)
            reading = Reading(AnswerType.LIST, hit, source, "; ".join(t for _, _, t in items),
                              items=tuple(t for _, _, t in items), coverage=cover, names_covered=names)
            score = cover + own - 0.3 * position + (1.0 if named else 0.0)
            if best is None or score > best[0]:
                best = (score, reading)
        return best[1] if best else None

    # -- sentences -------------------------------------------------------------------------------
    def sentence(self, question: str, kind: AnswerType, ranked: Sequence) -> Reading | None:
        attribute = attribute_of(question, kind) if kind in TYPED else None
        acronyms = acronyms_in(question) if kind is AnswerType.DEFINITION else []
        labels = SETTLEMENTS if kind is AnswerType.PLACE and category_terms(question) & _SETTLEMENT_WORDS else None
        # A sentence leading into a list or code ("... with only four lines of code in Python:") may still
        # hold a value its own words label; it is read for that value only.
        candidates = [s for s in ranked if (not is_fragment(s.span.text, s.retrieved.chunk.provenance.heading_path)
                                            or (attribute is not None and _lead_in(s.span.text)))
                      and (kind in TYPED or bool(acronyms) or not _is_row(s.span.text))]  # glossaries are rows
        if not candidates:
            return None
        q_lower = " ".join(question.lower().split())
        terms = lexical.content_terms(question)
        best: tuple[float, Reading] | None = None
        top = candidates[0].rank_score
        pool = candidates[:READ_SENTENCES]
        if acronyms:
            naming = [c for c in candidates if any(re.search(rf"(?<!\w){re.escape(a)}(?!\w)", c.span.text) for a in acronyms)]
            pool = naming[:READ_SENTENCES] or pool
        for position, scored in enumerate(pool):
            hit, span = scored.retrieved, scored.span
            text = hit.chunk.text
            spans = split_sentences(text)
            index = next((i for i, s in enumerate(spans) if s.start == span.start), 0)
            window = _window(text, spans, index) if spans else span.text
            cover, names = coverage(question, kind, window, _context(hit), text)
            prior = scored.rank_score - top - 0.3 * position
            short: TypedSpan | None = None
            labelled: int | None = None
            if acronyms:
                for acronym in acronyms:
                    short = acronym_expansion(span.text, acronym)
                    if short is not None:
                        short = TypedSpan(span.start + short.start, span.start + short.end, short.text, kind)
                        break
            elif kind in TYPED:
                typed = [t for t in typed_spans(span.text, kind, labels) if not _repeats(t.text, q_lower, terms)]
                if typed:
                    anchors = [m.start() for m in re.finditer(r"\w+", span.text)
                               if lexical.content_terms(m.group(0)) & terms]
                    strengths = {id(t): label_strength(attribute, text, span.start + t.start, span.start + t.end)
                                 if attribute else 0 for t in typed}
                    t = min(typed, key=lambda t: (-strengths[id(t)], not made_by(question, text, span.start + t.start),
                                                  min((abs(a - t.start) for a in anchors), default=0)))
                    short = TypedSpan(span.start + t.start, span.start + t.end, t.text, kind)
                    labelled = strengths[id(t)] if attribute else None
                elif kind not in NAMED and position < READ_SENTENCES:
                    continue  # no span of the asked-for shape here
            if short is None and ((kind in TYPED and kind not in NAMED) or acronyms):
                continue
            if labelled == 0 and _lead_in(span.text):
                continue
            if labelled and attribute is not None:
                # The label stands for the attribute's words ("toll-free" for a 1-800 number).
                cover, names = coverage(question, kind, f"{window} {' '.join(attribute.terms)}", _context(hit), text)
            # A who/where question whose sentence holds no entity of that type is read as an
            # untyped one (NER misses lowercase names: "the harbour office paid"), ranked below
            # sentences that do hold one, and left to the learned vote.
            soft = kind in NAMED and short is None
            if short is None:
                found = short_answer(question, span.text)
                short_text = found.text if found else span.text
                if soft and _repeats(short_text, q_lower, terms):
                    continue  # "Galaxy Gaming, Inc." for "who is Galaxy Gaming's CEO": the question's own name
                start, end = (span.start + found.start, span.start + found.end) if found else (-1, -1)
            else:
                short_text, start, end = short.text, short.start, short.end
            reading = Reading(kind, hit, span, short_text, start, end, coverage=cover, names_covered=names,
                              soft=soft, labelled=labelled)
            own, _ = coverage(question, kind, span.text, "", span.text)
            score = (prior + 1.5 * cover + own + (1.0 if names else 0.0) - (1.0 if soft else 0.0)
                     + 1.5 * (labelled or 0) - (1.5 if labelled == 0 else 0.0)
                     # A value its counted noun or toll-free form labels outranks any unlabelled one.
                     + (STRONG_LABEL_LEAD if labelled == 2 else 0.0)
                     + (2.5 if short is not None and made_by(question, text, short.start) else 0.0))
            if best is None or score > best[0]:
                best = (score, reading)
        if best is None:
            if kind in TYPED or acronyms:
                first = candidates[0]
                return Reading(kind, first.retrieved, first.span, first.span.text, typed=False)
            return None
        return best[1]


def _repeats(text: str, q_lower: str, terms: frozenset[str]) -> bool:
    """A span the question already says (or mostly says) is not its answer."""
    if " ".join(text.lower().split()) in q_lower:
        return True
    own = lexical.content_terms(text)
    return bool(own) and lexical.coverage(own, terms) >= 0.5


def _lead_in(text: str) -> bool:
    """A sentence ending in ":" with words of its own (not a bare label or heading)."""
    body = text.strip()
    return body.endswith(":") and len(lexical.tokens(body)) > 6


def _is_row(text: str) -> bool:
    return " | " in text or text.lstrip().startswith("|")


def _fits(kind: AnswerType, cell: str) -> bool:
    if kind in (AnswerType.NUMBER, AnswerType.MONEY, AnswerType.PERCENT):
        return bool(re.search(r"\d", cell)) or cell.lower() in {"none", "zero", "no"}
    if kind is AnswerType.DATE:
        return bool(re.search(r"\d", cell))
    return bool(cell.strip())
