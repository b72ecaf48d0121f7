"""General features of evidence units for a question: what the answer ranker reads.

Every feature is a property of the question, the unit, its context and the other units, never of
particular words: semantic similarity from the embedder (question against the unit, the unit in its
context, a row's label, the best-matching column header, a field's label, the chunk's heading path),
lexical overlap weighted by a local idf, the question's names and numbers found or missing around the
unit, the answer type the question asks for and the typed spans the unit holds (a feature, not a gate),
the unit's shape and its chunk's retrieval rank, and how far the unit stands above the others.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from services.rag.answers import lexical
from services.rag.answers.answer_types import AnswerType, classify
from services.rag.answers.typed_spans import typed_spans
from services.rag.answers.units import Unit, UnitKind

Similarity = Callable[[str, Sequence[str]], np.ndarray]
"""Cosines of a question to texts (the embedder, through the answer engine's vector cache)."""

TYPES = (AnswerType.NUMBER, AnswerType.MONEY, AnswerType.PERCENT, AnswerType.DATE, AnswerType.PHONE, AnswerType.CODE)
"""Span types found by their shape (``typed_spans``' patterns); names are capitalised runs (``proper_names``)."""
NAMED = (AnswerType.PERSON, AnswerType.ORGANISATION, AnswerType.PLACE)
QUESTION_TYPES = tuple(AnswerType)

FEATURE_NAMES: tuple[str, ...] = (
    # semantic
    "cos_unit", "cos_context", "cos_label", "cos_header_best", "cos_heading", "cos_unit_lead", "cos_unit_rank",
    "cos_unit_z",
    # the units before and after in the same chunk (a heading or label that matches, a value that follows)
    "cos_prev", "cos_next", "idf_cover_prev", "idf_cover_next", "idf_cover_window",
    # lexical
    "novel_share", "idf_cover_unit", "idf_cover_context", "idf_cover_chunk", "idf_cover_document_pool", "cover_unit",
    "bigrams", "longest_run", "idf_cover_lead",
    # how much of the unit's own labels the question names (a row's label, a header, a field's label, the title)
    "label_in_q", "header_in_q", "context_in_q", "label_lead",
    # names and numbers of the question
    "names_missing_unit", "names_missing_context", "names_missing_pool", "numbers_in_question",
    "years_missing_context", "q_terms",
    # answer type
    *(f"q_type_{t.value}" for t in QUESTION_TYPES),
    "unit_has_q_type", "unit_q_type_new", "unit_typed_count", "unit_numbers", "numeric_share", "cell_fits",
    # shape and position
    "kind_sentence", "kind_row", "kind_field", "kind_item", "log_tokens", "row_cells", "header_present",
    "position_in_chunk", "chunk_rank", "chunk_score_rel", "dense_score", "keyword_score", "unit_in_question",
    "document_rank", "units_in_pool",
)

_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_PROPER = re.compile(r"(?<![\w'’])[A-Z][\w'’.-]*(?:\s+(?:(?:of|the|de|du|van|von|der|la|le|and|&)\s+)?[A-Z][\w'’.-]*)*")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’-]*")


@dataclass(frozen=True)
class QuestionView:
    text: str
    kind: AnswerType
    terms: frozenset[str]
    names: frozenset[str]
    numbers: frozenset[str]
    years: frozenset[str]
    words: tuple[str, ...]
    bigrams: frozenset[tuple[str, str]]


def question_view(question: str) -> QuestionView:
    stop = lexical.stop_words()
    raw = [m.group(0) for m in _WORD.finditer(question)]
    names = {w.lower() for i, w in enumerate(raw) if (i > 0 and w[:1].isupper()) or any(c.isdigit() for c in w)}
    words = tuple(w for w in lexical.tokens(question) if w not in lexical.QUESTION_WORDS)
    content = [w for w in words if w not in stop]
    return QuestionView(
        question, classify(question), lexical.content_terms(question),
        frozenset(n for n in names if n not in stop), frozenset(n.replace(",", "") for n in _NUMBER.findall(question)),
        frozenset(_YEAR.findall(question)), words, frozenset(zip(content, content[1:])),
    )


def proper_names(text: str) -> list[str]:
    """Runs of capitalised words ("Emily Rodriguez", "Bank of England"): names without a tagger, in any
    document; a lone capitalised word that opens the text is a sentence's first word, not a name."""
    found = []
    for m in _PROPER.finditer(text):
        if m.start() == len(text) - len(text.lstrip()) and " " not in m.group(0):
            continue
        found.append(m.group(0))
    return found


def _spans(text: str) -> dict[AnswerType, list[str]]:
    out = {t: [s.text for s in typed_spans(text, t, frozenset())] for t in TYPES}
    names = proper_names(text)
    for t in NAMED:
        out[t] = names
    return out


def _idf(units: Sequence[Unit]) -> dict[str, float]:
    df: Counter[str] = Counter()
    for u in units:
        df.update(lexical.content_terms(u.text))
    n = len(units)
    return {t: math.log((n + 1) / (f + 0.5)) for t, f in df.items()} | {"": math.log((n + 1) / 0.5)}


def _weighted(terms: frozenset[str], have: frozenset[str], idf: dict[str, float]) -> float:
    if not terms:
        return 1.0
    unseen = idf[""]
    total = sum(idf.get(t, unseen) for t in terms)
    return sum(idf.get(t, unseen) for t in terms & have) / total


def _longest_run(question: Sequence[str], unit: Sequence[str]) -> int:
    best, previous = 0, [0] * (len(unit) + 1)
    for q in question:
        current = [0] * (len(unit) + 1)
        for j, w in enumerate(unit, 1):
            if w == q:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


def _missing(names: frozenset[str], words: set[str]) -> float:
    return len([n for n in names if n not in words]) / len(names) if names else 0.0


def texts_to_embed(units: Sequence[Unit]) -> list[str]:
    """Every text the features compare the question with (the warm-up embeds these ahead of questions)."""
    # A unit's own text is the one long text per unit; its context (heading path, a table's title and header
    # line), labels and header cells are short or shared by many units, so comparing them costs little more.
    texts: list[str] = []
    for u in units:
        texts.append(u.text)
        if u.context:
            texts.append(u.context)
        if u.label:
            texts.append(u.label)
        texts += [c.text for c in u.header_cells if c.text]
    return list(dict.fromkeys(texts))


def _neighbours(units: Sequence[Unit]) -> list[tuple[int, int]]:
    """(index of the unit before, index of the unit after) in the same chunk, -1 where there is none."""
    by_chunk: dict[str, list[int]] = {}
    for i, u in enumerate(units):
        by_chunk.setdefault(u.hit.chunk.chunk_id, []).append(i)
    out = [(-1, -1)] * len(units)
    for members in by_chunk.values():
        members.sort(key=lambda i: units[i].position)
        for k, i in enumerate(members):
            out[i] = (members[k - 1] if k > 0 else -1, members[k + 1] if k + 1 < len(members) else -1)
    return out


def _named_by(text: str, q: QuestionView) -> float:
    """Share of a label's content terms the question holds (1.0: the question names it outright)."""
    terms = lexical.content_terms(text) if text else frozenset()
    return len(terms & q.terms) / len(terms) if terms else 0.0


def _label_lead(units: Sequence[Unit], cos: dict[str, float]) -> list[float]:
    """How far a row's label is nearer the question than the best other label of its chunk (0 for other units)."""
    by_chunk: dict[str, list[int]] = {}
    for i, u in enumerate(units):
        if u.label:
            by_chunk.setdefault(u.hit.chunk.chunk_id, []).append(i)
    out = [0.0] * len(units)
    for members in by_chunk.values():
        values = [cos[units[i].label] for i in members]
        for k, i in enumerate(members):
            others = values[:k] + values[k + 1:]
            out[i] = values[k] - max(others) if others else 0.0
    return out


def _shape_fits(text: str, kind: AnswerType) -> bool:
    if kind in TYPES:
        return bool(typed_spans(text, kind, frozenset()))
    if kind in NAMED:
        return bool(proper_names(text)) or (any(c.isalpha() for c in text) and not any(c.isdigit() for c in text))
    return bool(text.strip())


def _cell_fits(unit: Unit, q: QuestionView, cos: dict[str, float]) -> float:
    """A row: does the cell under the header nearest the question have the asked-for shape? A field: its value?
    (-1 for other units.)"""
    if unit.kind is UnitKind.FIELD and unit.value is not None:
        return float(_shape_fits(unit.value.text, q.kind))
    if unit.kind is not UnitKind.ROW or unit.row is None or not unit.header_cells:
        return -1.0
    cells = unit.row.cells
    pairs = [(cos.get(h.text, 0.0), c) for h, c in zip(unit.header_cells, cells, strict=False)
             if h.text and c.text != unit.label]
    if not pairs:
        return -1.0
    _, cell = max(pairs, key=lambda t: t[0])
    return float(_shape_fits(cell.text, q.kind))


def feature_matrix(question: str, units: Sequence[Unit], similarity: Similarity) -> np.ndarray:
    """One ``FEATURE_NAMES`` row per unit."""
    if not units:
        return np.zeros((0, len(FEATURE_NAMES)))
    q = question_view(question)
    texts = texts_to_embed(units)
    cos = dict(zip(texts, similarity(question, texts), strict=True))
    idf = _idf(units)
    pool_words: set[str] = set()
    document_terms: dict[str, frozenset[str]] = {}
    for u in units:
        pool_words |= set(lexical.tokens(u.hit.chunk.text))
        document_terms[u.document_id] = document_terms.get(u.document_id, frozenset()) | lexical.content_terms(
            f"{u.hit.chunk.text} {u.context}")
    missing_pool = _missing(q.names, pool_words)
    document_order = list(dict.fromkeys(u.document_id for u in units))
    neighbours = _neighbours(units)
    label_lead = _label_lead(units, cos)
    unit_cover = [_weighted(q.terms, lexical.content_terms(u.text), idf) for u in units]
    top_score = max(max(u.hit.score for u in units), 1e-9)
    q_lower = " ".join(question.lower().split())
    rows = []
    for index, u in enumerate(units):
        before, after = neighbours[index]
        unit_terms = lexical.content_terms(u.text)
        context_text = f"{u.context} {u.label} {u.text}"
        context_terms = lexical.content_terms(context_text)
        unit_words = set(lexical.tokens(u.text))
        context_words = set(lexical.tokens(context_text))
        spans = _spans(u.text)
        typed = {t: [s for s in found if s.lower() not in q_lower] for t, found in spans.items()}
        spans_all = {s for t in (*TYPES, AnswerType.PERSON) for s in spans[t]}
        want = q.kind if q.kind in spans else None
        tokens = lexical.tokens(u.text)
        numeric = sum(any(c.isdigit() for c in t) for t in tokens)
        headers = [c.text for c in u.header_cells if c.text]
        rows.append([
            cos[u.text],
            max(cos[u.text], cos[u.context]) if u.context else cos[u.text],
            cos[u.label] if u.label else 0.0,
            max((cos[h] for h in headers), default=0.0),
            cos[u.context] if u.context else 0.0,
            0.0, 0.0, 0.0,
            cos[units[before].text] if before >= 0 else 0.0,
            cos[units[after].text] if after >= 0 else 0.0,
            unit_cover[before] if before >= 0 else 0.0,
            unit_cover[after] if after >= 0 else 0.0,
            _weighted(q.terms, unit_terms | (lexical.content_terms(units[before].text) if before >= 0 else frozenset())
                      | (lexical.content_terms(units[after].text) if after >= 0 else frozenset()), idf),
            len(unit_terms - q.terms) / max(len(unit_terms), 1),
            unit_cover[index],
            _weighted(q.terms, context_terms, idf),
            _weighted(q.terms, lexical.content_terms(f"{u.hit.chunk.text} {u.context}"), idf),
            _weighted(q.terms, document_terms[u.document_id], idf),
            lexical.coverage(q.terms, unit_terms),
            len(q.bigrams & set(zip(tokens, tokens[1:]))) / max(len(q.bigrams), 1),
            _longest_run(q.words, tokens) / max(len(q.words), 1),
            0.0,
            _named_by(u.label, q),
            max((_named_by(h, q) for h in headers), default=0.0),
            _named_by(u.context, q),
            label_lead[index],
            _missing(q.names, unit_words),
            _missing(q.names, context_words),
            missing_pool,
            float(len(q.numbers)),
            _missing(q.years, context_words | set(lexical.tokens(u.hit.chunk.text))),
            float(len(q.terms)),
            *(float(q.kind is t) for t in QUESTION_TYPES),
            float(bool(want and spans[want])),
            float(len(typed[want])) if want else 0.0,
            float(len(spans_all)),
            float(numeric),
            numeric / max(len(tokens), 1),
            _cell_fits(u, q, cos),
            float(u.kind is UnitKind.SENTENCE), float(u.kind is UnitKind.ROW), float(u.kind is UnitKind.FIELD),
            float(u.kind is UnitKind.ITEM),
            math.log1p(len(tokens)),
            float(len(u.row.cells)) if u.row else 0.0,
            float(bool(headers)),
            float(u.position),
            float(u.rank),
            max(u.hit.score, 0.0) / top_score,
            float(u.hit.dense_score),
            float(u.hit.keyword_score),
            float(" ".join(u.text.lower().split()) in q_lower),
            float(document_order.index(u.document_id)),
            float(len(units)),
        ])
    matrix = np.asarray(rows, dtype=float)
    assert matrix.shape[1] == len(FEATURE_NAMES), "a feature row does not match FEATURE_NAMES"
    names = FEATURE_NAMES
    cu, lead, rank, z = (names.index(n) for n in ("cos_unit", "cos_unit_lead", "cos_unit_rank", "cos_unit_z"))
    values = matrix[:, cu]
    order = np.argsort(-values)
    ranks = np.empty(len(values))
    ranks[order] = np.arange(len(values))
    matrix[:, rank] = ranks
    matrix[:, z] = (values - values.mean()) / (values.std() + 1e-6)
    if len(values) > 1:
        best, second = values[order[0]], values[order[1]]
        matrix[:, lead] = values - np.where(np.arange(len(values)) == order[0], second, best)
        idf_col, idf_lead = names.index("idf_cover_context"), names.index("idf_cover_lead")
        v = matrix[:, idf_col]
        o = np.argsort(-v)
        matrix[:, idf_lead] = v - np.where(np.arange(len(v)) == o[0], v[o[1]], v[o[0]])
    return matrix
