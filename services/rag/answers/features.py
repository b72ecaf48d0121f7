"""Generic evidence features of candidate sentences for a question, for the learned answer scorer.

Every feature is question-agnostic in form (no vocabulary of its own) and computed from the
question, the sentence, its chunk and the other candidates only, so the same code serves a
benchmark and any user's documents:

- MiniLM cosine of question and sentence;
- coverage of the question's content terms by the sentence, plain and weighted by a local idf
  (terms frequent among the candidates, such as the document's topic, count less), by the
  sentence with its neighbours (pronouns point back), and by its whole chunk;
- question bigrams, and the longest run of question words, found verbatim in the sentence;
- comparatives and superlatives of the question ("largest", "first", "only") missing around the
  sentence: another favourite twist of unanswerable questions;
- the question's names and numbers (capitalised words, digits) missing from the sentence and
  from everything retrieved: SQuAD 2.0-style unanswerable questions often swap in one;
- whether the sentence holds an entity of the type the question asks for (who → a person,
  when → a date ...) that the question does not already name;
- negation in the question only (a classic unanswerable twist) or in the sentence only;
- the chunk's retrieval rank and relative score; the sentence's lead over the best other candidate.

Question words naming the source (its file name, the chunk's headings) and reporting verbs
("what do the cafeteria notes say about lunch") are not asked of the sentence.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from services.rag.answers import lexical
from services.rag.answers.spans import degree_words, entities, expected_types

FEATURE_NAMES: tuple[str, ...] = (
    "cosine",
    "coverage",
    "idf_coverage",
    "idf_coverage_window",
    "idf_coverage_chunk",
    "bigrams",
    "longest_match",
    "idf_coverage_pool",
    "degree_missing",
    "missing_names",
    "missing_names_window",
    "missing_names_pool",
    "typed_entity",
    "untyped_question",
    "question_only_negated",
    "sentence_only_negated",
    "chunk_reciprocal_rank",
    "chunk_relative_score",
    "log_length",
    "cosine_lead",
    "idf_lead",
)

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’-]*")


@dataclass(frozen=True)
class Candidate:
    """One candidate sentence: its text, its neighbours' text, its chunk's text and retrieval rank."""

    text: str
    window: str
    chunk_text: str
    chunk_rank: int
    chunk_score: float
    source: str = ""
    """The document's name and the chunk's heading path: question words naming the source
    ("what do the cafeteria notes say ...") are satisfied by it, not by the sentence."""


def question_names(question: str) -> frozenset[str]:
    """Capitalised words past the first word, and numbers, lower-cased."""
    stop = lexical.stop_words()
    words = [m.group(0) for m in _WORD.finditer(question)]
    names = {w.lower() for i, w in enumerate(words) if (i > 0 and w[0].isupper()) or any(ch.isdigit() for ch in w)}
    return frozenset(n for n in names if n not in stop)


_REPORTING = "say says said mention mentions mentioned describe describes described tell tells told according"


def question_terms(question: str) -> frozenset[str]:
    """Content terms an answer sentence should cover: reporting verbs ("what does it say") left out."""
    return lexical.content_terms(question) - lexical.content_terms(_REPORTING)


def _idf(candidates: Sequence[Candidate]) -> dict[str, float]:
    df: Counter[str] = Counter()
    for c in candidates:
        df.update(lexical.content_terms(c.text))
    n = len(candidates)
    return {t: math.log((n + 1) / (f + 0.5)) for t, f in df.items()} | {"": math.log((n + 1) / 0.5)}


def _weighted(terms: frozenset[str], have: frozenset[str], idf: dict[str, float]) -> float:
    if not terms:
        return 1.0
    unseen = idf[""]
    total = sum(idf.get(t, unseen) for t in terms)
    return sum(idf.get(t, unseen) for t in terms & have) / total


def _bigrams(text: str) -> set[tuple[str, str]]:
    words = [w for w in lexical.tokens(text) if w not in lexical.QUESTION_WORDS]
    return set(zip(words, words[1:]))


def _longest_run(question: list[str], sentence: list[str]) -> int:
    """Longest run of consecutive question words found verbatim in the sentence."""
    best, previous = 0, [0] * (len(sentence) + 1)
    for q in question:
        current = [0] * (len(sentence) + 1)
        for j, w in enumerate(sentence, 1):
            if w == q:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


def feature_matrix(question: str, candidates: Sequence[Candidate], cosines: np.ndarray) -> np.ndarray:
    """One row of ``FEATURE_NAMES`` per candidate."""
    if not candidates:
        return np.zeros((0, len(FEATURE_NAMES)))
    all_terms = question_terms(question)
    idf = _idf(candidates)
    names = question_names(question)
    pool_words = set().union(*(lexical.tokens(c.chunk_text) for c in candidates))
    missing_pool = len([n for n in names if n not in pool_words]) / max(len(names), 1)
    wanted = expected_types(question)
    q_bigrams = _bigrams(question)
    q_words = [w for w in lexical.tokens(question) if w not in lexical.QUESTION_WORDS]
    pool_terms = frozenset().union(*(lexical.content_terms(c.chunk_text) for c in candidates))
    pool_coverage = _weighted(all_terms, pool_terms, idf)
    degrees = degree_words(question)
    q_negated = lexical.negated(question)
    q_lower = question.lower()
    top_score = max(max(c.chunk_score for c in candidates), 1e-9)
    rows = []
    for c, cosine in zip(candidates, cosines, strict=True):
        terms = all_terms - lexical.content_terms(c.source)
        have = lexical.content_terms(c.text)
        words = set(lexical.tokens(c.text))
        window_words = set(lexical.tokens(c.window))
        negated = lexical.negated(c.text)
        typed = bool(wanted) and any(label in wanted and text.lower() not in q_lower
                                     for label, text in entities(c.text))
        rows.append([
            max(float(cosine), 0.0),
            lexical.coverage(terms, have),
            _weighted(terms, have, idf),
            _weighted(terms, lexical.content_terms(c.window), idf),
            _weighted(terms, lexical.content_terms(c.chunk_text), idf),
            len(q_bigrams & _bigrams(c.text)) / max(len(q_bigrams), 1),
            _longest_run(q_words, lexical.tokens(c.text)) / max(len(q_words), 1),
            pool_coverage,
            float(bool(degrees - window_words)),
            len([n for n in names if n not in words]) / max(len(names), 1),
            len([n for n in names if n not in window_words]) / max(len(names), 1),
            missing_pool,
            float(typed),
            float(not wanted),
            float(q_negated and not negated),
            float(negated and not q_negated),
            1.0 / (1 + c.chunk_rank),
            max(c.chunk_score, 0.0) / top_score,
            math.log1p(len(words)),
            0.0,
            0.0,
        ])
    matrix = np.asarray(rows, dtype=float)
    # Leads: how far each candidate stands above the best other one (cosine, idf coverage).
    for column, lead in ((0, len(FEATURE_NAMES) - 2), (2, len(FEATURE_NAMES) - 1)):
        values = matrix[:, column]
        if len(values) > 1:
            order = np.argsort(-values)
            best, second = values[order[0]], values[order[1]]
            matrix[:, lead] = values - np.where(np.arange(len(values)) == order[0], second, best)
    return matrix
