"""A text split into sentences, with sentence embeddings computed once and shared.

Summaries, key ideas, topics and the generative fallbacks all need the same sentence
vectors; one Analyze call builds one ``PreparedText`` so the model runs once (under a
lock, from whichever worker thread asks first).

Embedding is the costly step (~80 sentences/s on two cores), so a long document embeds at
most ``max_sentences`` of its sentences. They are pre-selected lexically, with a quota per
stretch of the document, so the end of a long text is represented as well as its start.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from services.vocabulary.text import STOPWORDS, bounded_spans, sentence_spans, words

MIN_CANDIDATE_WORDS = 4
"""Shorter "sentences" (headings, list stubs, table cells) are not summary material."""
MAX_CANDIDATE_WORDS = 80
"""Longer "sentences" are unsegmented blocks (tables, infoboxes, lists without full stops)."""
_URL = re.compile(r"https?://|www\.", re.IGNORECASE)
_MARKUP = re.compile(r"[<>{}`*#|\\=/_~^&@]")
MAX_MARKUP_SHARE = 0.03
"""Code, HTML and Markdown syntax lines are not prose."""
_STRETCHES = 20
T = TypeVar("T")


def _default_encoder(texts: list[str]) -> np.ndarray:
    from services.models.embedder import get_embedder

    return get_embedder().encode(texts)


@dataclass
class PreparedText:
    text: str
    max_sentences: int = 400
    encode: Callable[[list[str]], np.ndarray] = _default_encoder
    """Texts -> L2-normalised rows; the process-wide MiniLM embedder unless a test swaps it."""
    spans: list[tuple[int, int]] = field(init=False)
    """Sentences; an overlong one (no sentence punctuation: CSV, table rows) cut at row and word boundaries."""
    _cut: frozenset[int] = field(init=False, default=frozenset())
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _candidates: list[int] | None = field(init=False, default=None)
    _vectors: np.ndarray | None = field(init=False, default=None)
    _derived: dict[str, Any] = field(init=False, default_factory=dict)
    _derived_locks: dict[str, threading.Lock] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.spans, cut = [], set[int]()
        for pieces, was_cut in bounded_spans(self.text, sentence_spans(self.text), MAX_CANDIDATE_WORDS):
            if was_cut:
                cut.update(range(len(self.spans), len(self.spans) + len(pieces)))
            self.spans.extend(pieces)
        self._cut = frozenset(cut)

    def sentence(self, index: int) -> str:
        start, end = self.spans[index]
        return self.text[start:end]

    def derived(self, name: str, compute: Callable[[PreparedText], T]) -> T:
        """``compute(self)``, run once per name however many threads ask (e.g. the grounding
        shared by discussion points and recommendations in one Analyze call)."""
        with self._lock:
            lock = self._derived_locks.setdefault(name, threading.Lock())
        with lock:
            if name not in self._derived:
                self._derived[name] = compute(self)
            return self._derived[name]

    @property
    def candidates(self) -> list[int]:
        """Indices (into ``spans``, ascending) of the sentences that get embeddings."""
        with self._lock:
            if self._candidates is None:
                self._candidates = self._select()
            return self._candidates

    @property
    def vectors(self) -> np.ndarray:
        """Embeddings of ``candidates``, row for row."""
        candidates = self.candidates
        with self._lock:
            if self._vectors is None:
                self._vectors = self.encode([self.sentence(i) for i in candidates])
            return self._vectors

    @property
    def centroid(self) -> np.ndarray:
        """Unit vector of the word-weighted mean sentence embedding: what the document is about."""
        vectors = self.vectors
        if len(vectors) == 0:
            return np.zeros(vectors.shape[1] if vectors.ndim == 2 else 0, dtype=np.float32)
        weights = np.array([math.log1p(len(words(self.sentence(i)))) for i in self.candidates], dtype=np.float32)
        mean = (vectors * weights[:, None]).sum(axis=0)
        norm = float(np.linalg.norm(mean))
        return mean / norm if norm else mean

    def _select(self) -> list[int]:
        # Pieces of a cut block compete only when the text has no prose sentence at all (CSV, a bare table).
        eligible = [i for i in range(len(self.spans)) if i not in self._cut and prose_like(self.sentence(i))]
        if not eligible:
            eligible = list(range(len(self.spans)))
        if len(eligible) <= self.max_sentences:
            return eligible
        return self._preselect(eligible)

    def _preselect(self, eligible: list[int]) -> list[int]:
        """SumBasic-style lexical salience, with a quota for each of ``_STRETCHES`` stretches of text."""
        tokens = {i: [w.lower() for w in words(self.sentence(i))] for i in eligible}
        frequency = Counter(w for ws in tokens.values() for w in ws if w not in STOPWORDS)
        total = sum(frequency.values()) or 1

        def score(i: int) -> float:
            content = [w for w in tokens[i] if w in frequency]
            return sum(frequency[w] for w in content) / total / (len(content) or 1)

        stretches = np.array_split(np.array(eligible), min(_STRETCHES, self.max_sentences))
        chosen: list[int] = []
        for stretch in stretches:
            quota = max(1, self.max_sentences * len(stretch) // len(eligible))
            ranked = sorted(stretch.tolist(), key=lambda i: (-score(i), i))
            chosen.extend(ranked[:quota])
        return sorted(chosen)


def prose_like(sentence: str) -> bool:
    """A sentence of running prose, not a reference, URL, table row or heading."""
    tokens = words(sentence)
    if not MIN_CANDIDATE_WORDS <= len(tokens) <= MAX_CANDIDATE_WORDS or _URL.search(sentence):
        return False
    if len(_MARKUP.findall(sentence)) > MAX_MARKUP_SHARE * len(sentence):
        return False
    alphabetic = [t for t in tokens if t.isalpha()]
    lowercase = sum(t.islower() for t in alphabetic)
    return len(alphabetic) >= 0.5 * len(tokens) and lowercase >= 3
