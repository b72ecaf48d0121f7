"""The short answer inside a cited unit: a row's cell, a field's value, a span of the asked-for type.

It never decides whether to answer (the ranker does) and never leaves the unit: it picks what a reader
would highlight in the unit already cited, by general properties only. A row's cell is the one under
the column header nearest the question (embedder similarity and shared terms), of the asked-for shape
when the question asks for one, and not a cell the question already names; a field's answer is its
value; a sentence's is the span of the asked-for type that the question does not already hold, nearest
the question's terms. Otherwise the unit itself is the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.rag.answers import lexical
from services.rag.answers.answer_types import AnswerType, classify
from services.rag.answers.tables import is_numeric
from services.rag.answers.typed_spans import typed_spans
from services.rag.answers.unit_features import NAMED, TYPES, Similarity, proper_names
from services.rag.answers.units import Unit, UnitKind

NUMERIC = frozenset({AnswerType.NUMBER, AnswerType.MONEY, AnswerType.PERCENT})


@dataclass(frozen=True)
class ShortAnswer:
    text: str
    start: int
    """Offsets inside the chunk's text (-1 when the short answer is the whole unit)."""
    end: int
    row_label: str = ""
    column_header: str = ""


def _in_question(text: str, question: str) -> bool:
    return " ".join(text.lower().split()) in " ".join(question.lower().split())


def for_row(question: str, unit: Unit, similarity: Similarity) -> ShortAnswer | None:
    if unit.row is None:
        return None
    kind = classify(question)
    headers = [c.text for c in unit.header_cells]
    cells = list(unit.row.cells)
    if len(headers) != len(cells):
        headers = (headers + [""] * len(cells))[: len(cells)]
    label = unit.label
    candidates = [(i, c) for i, c in enumerate(cells) if c.text and c.text != label and not _in_question(c.text, question)]
    if not candidates:
        return None
    # The row is already found: the rest of the question names the column ("how many staff work at [Bristol]").
    asked = re.sub(re.escape(label), " ", question, flags=re.I) if label else question
    q_terms = lexical.content_terms(asked)
    named = [h for h in headers if h]
    cos = dict(zip(named, similarity(asked, named), strict=True)) if named else {}
    best = None
    for i, cell in candidates:
        header = headers[i]
        score = cos.get(header, 0.0) + 0.5 * (len(lexical.content_terms(header) & q_terms) > 0)
        if kind in NUMERIC or kind is AnswerType.DATE:
            score += 0.3 if is_numeric(cell.text) or any(ch.isdigit() for ch in cell.text) else -0.3
        elif kind in NAMED:
            score += 0.2 if any(ch.isalpha() for ch in cell.text) and not is_numeric(cell.text) else -0.2
        if best is None or score > best[0]:
            best = (score, i, cell)
    assert best is not None
    _, i, cell = best
    return ShortAnswer(cell.text, cell.start, cell.end, row_label=label, column_header=headers[i])


def for_unit(question: str, unit: Unit, similarity: Similarity) -> ShortAnswer | None:
    """The short answer of ``question`` inside ``unit``, offsets inside its chunk; None: the unit itself."""
    if unit.kind is UnitKind.ROW:
        return for_row(question, unit, similarity)
    kind = classify(question)
    base = unit.span.start
    text = unit.text
    if unit.kind is UnitKind.FIELD and unit.value is not None:
        typed = _typed(text, kind, question)
        inside = [t for t in typed if unit.value.start - base <= t[0]]
        if inside:
            start, end, value = inside[0]
            return ShortAnswer(value, base + start, base + end)
        return ShortAnswer(unit.value.text, unit.value.start, unit.value.end)
    typed = _typed(text, kind, question)
    if not typed:
        return None
    words = lexical.content_terms(question)
    lower = text.lower()
    anchors = [lower.find(w) for w in words if lower.find(w) >= 0]
    start, end, value = min(typed, key=lambda t: min((abs(a - t[0]) for a in anchors), default=t[0]))
    return ShortAnswer(value, base + start, base + end)


def _typed(text: str, kind: AnswerType, question: str) -> list[tuple[int, int, str]]:
    if kind in TYPES:
        found = [(s.start, s.end, s.text) for s in typed_spans(text, kind, frozenset())]
    elif kind in NAMED:
        # A capitalised month inside a date ("14 March 2027") is no one's name.
        dates = [(s.start, s.end) for s in typed_spans(text, AnswerType.DATE, frozenset())]
        found = []
        for name in (n.rstrip(".,;:!?") for n in proper_names(text)):
            at = text.find(name)
            if not any(start <= at < end for start, end in dates):
                found.append((at, at + len(name), name))
    else:
        return []
    return [t for t in found if not _in_question(t[2], question)]
