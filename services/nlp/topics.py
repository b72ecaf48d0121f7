"""Weighted topics (keyphrases), KeyBERT-style, deterministic and offline.

Candidates are noun phrases of up to three words (runs of adjectives and nouns ending in
a noun, found by spaCy's tagger; plural nouns merge with their singular, so "clubs"
counts as "club"). Each is
scored by its embedding's cosine similarity to the document centroid (is it what the text
is about?) and by its frequency; MMR keeps the list diverse. The weight is that score,
0..1: comparable across documents, which matters because it becomes the graph's
Document->Topic COVERS weight.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from services.clients.results import Engine
from services.nlp import windows
from services.nlp.prepared import PreparedText
from services.nlp.salience import mmr
from services.nlp.spacy_pipeline import TAGGING, SpacyPipeline
from services.runtime.errors import FieldViolation, InvalidArgument
from services.vocabulary.text import STOPWORDS

DEFAULT_TOPICS = 10
MAX_TOPICS = 50
MAX_PHRASE_WORDS = 3
MAX_CANDIDATES = 200
RELEVANCE_WEIGHT = 0.7
"""Share of the weight from similarity to the document; the rest from (log) frequency."""
DIVERSITY_TRADE_OFF = 0.7
_PHRASE_TAGS = {"JJ", "JJR", "JJS", "NN", "NNS", "NNP", "NNPS"}
_HEAD_TAGS = {"NN", "NNS", "NNP", "NNPS"}
_PLURAL_TAGS = {"NNS", "NNPS"}
_PROPER_TAGS = {"NNP", "NNPS"}


@dataclass(frozen=True)
class Topic:
    name: str
    weight: float


@dataclass(frozen=True)
class TopicsResult:
    topics: tuple[Topic, ...]
    engine: Engine


@dataclass
class _Candidate:
    key: str
    first: int
    surfaces: Counter

    @property
    def count(self) -> int:
        return sum(self.surfaces.values())

    @property
    def name(self) -> str:
        return min(self.surfaces.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def count_of(requested: int) -> int:
    if requested < 0 or requested > MAX_TOPICS:
        raise InvalidArgument(
            f"max_topics must be between 1 and {MAX_TOPICS} (or 0 for {DEFAULT_TOPICS})",
            violations=[FieldViolation("max_topics", f"must be 0..{MAX_TOPICS}")],
        )
    return requested or DEFAULT_TOPICS


def engine_for(pipeline: SpacyPipeline) -> Engine:
    return Engine("local", f"all-MiniLM-L6-v2-keyphrases+{pipeline.engine.model}")


def extract(prepared: PreparedText, pipeline: SpacyPipeline, window_chars: int, count: int) -> TopicsResult:
    candidates = _candidates(_tagged_text(prepared, window_chars), pipeline, window_chars)
    engine = engine_for(pipeline)
    if not candidates:
        return TopicsResult((), engine)
    names = [c.name for c in candidates]
    vectors = prepared.encode(names)
    centroid = prepared.centroid
    relevance = np.clip(vectors @ centroid, 0.0, 1.0) if centroid.any() else np.zeros(len(names))
    top = max(c.count for c in candidates)
    frequency = np.array([math.log1p(c.count) / math.log1p(top) for c in candidates])
    scores = RELEVANCE_WEIGHT * relevance + (1.0 - RELEVANCE_WEIGHT) * frequency
    picked: list[set[str]] = []

    def distinct(row: int) -> bool:
        # "Roberts" and "Iwan Roberts" name one topic: keep whichever scores first.
        words = set(candidates[row].key.split())
        if any(words <= other or other <= words for other in picked):
            return False
        picked.append(words)
        return True

    rows = mmr(vectors, scores.astype(np.float32), count, DIVERSITY_TRADE_OFF, distinct)
    topics = [Topic(names[r], round(float(scores[r]), 4)) for r in rows]
    topics.sort(key=lambda t: (-t.weight, t.name))
    return TopicsResult(tuple(topics), engine)


def _tagged_text(prepared: PreparedText, window_chars: int) -> str:
    """The text whose phrases become candidates: all of it when it fits one spaCy window;
    else the embedded sentences, which sample the whole document, end included. Tagging a
    2 MB text would take minutes on two cores; frequencies over the sample rank the same."""
    if len(prepared.text) <= window_chars:
        return prepared.text
    return "\n\n".join(prepared.sentence(i) for i in prepared.candidates)


def _candidates(text: str, pipeline: SpacyPipeline, window_chars: int) -> list[_Candidate]:
    found: dict[str, _Candidate] = {}
    spans = windows.split(text, window_chars)
    for window, doc in zip(spans, pipeline.run([w.of(text) for w in spans], TAGGING), strict=True):
        run: list = []
        for token in [*doc, None]:
            if token is not None and token.tag_ in _PHRASE_TAGS and _usable(token):
                run.append(token)
                continue
            _phrases(run, window.start, found)
            run = []
    ranked = sorted(found.values(), key=lambda c: (-c.count, c.first))
    return ranked[:MAX_CANDIDATES]


def _usable(token) -> bool:
    word = token.text.lower()
    return token.is_alpha and len(word) > 1 and not token.is_stop and word not in STOPWORDS


def _phrases(run: list, offset: int, found: dict[str, _Candidate]) -> None:
    """The phrases of up to three words that end at the head (last noun) of ``run``.

    "new European data centre" gives "centre", "data centre" and "European data centre",
    never "European data", which is no phrase of the text.
    """
    heads = [i for i, token in enumerate(run) if token.tag_ in _HEAD_TAGS]
    if not heads:
        return
    end = heads[-1]
    for start in range(max(0, end - MAX_PHRASE_WORDS + 1), end + 1):
        tokens = run[start : end + 1]
        key = " ".join(_singular(t) for t in tokens)
        # Proper nouns keep their case ("European Union"); common words are lowercased.
        surface = " ".join(t.text if t.tag_ in _PROPER_TAGS else t.text.lower() for t in tokens)
        candidate = found.get(key)
        if candidate is None:
            candidate = found[key] = _Candidate(key, offset + tokens[0].idx, Counter())
        candidate.surfaces[surface] += 1


def _singular(token) -> str:
    """A plural noun's singular, by the regular English rules (enough to merge a key)."""
    word = token.text.lower()
    if token.tag_ not in _PLURAL_TAGS or len(word) < 4 or word.endswith("ss"):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") else word
