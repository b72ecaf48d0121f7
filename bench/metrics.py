"""Evaluation metrics, written out so they can be checked by hand against the definitions.

- nDCG@k with graded gains and the standard log2 discount (trec_eval / pytrec_eval ``ndcg_cut``):
  DCG = sum_i (2^rel_i - 1) / log2(i + 1), normalised by the ideal ordering of the judged docs;
  SciFact qrels are binary, so 2^rel - 1 = rel.
- Recall@k: relevant documents in the top k / all relevant documents.
- SQuAD exact match and token F1 with the official answer normalisation (lower case, strip
  punctuation, articles and extra whitespace), maximised over the gold answers.
"""

from __future__ import annotations

import collections
import math
import re
import string
from collections.abc import Mapping, Sequence


def ndcg_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    dcg = sum((2 ** relevance.get(doc, 0) - 1) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted((r for r in relevance.values() if r > 0), reverse=True)[:k]
    idcg = sum((2**r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    relevant = {d for d, r in relevance.items() if r > 0}
    if not relevant:
        return 0.0
    return len(relevant & set(ranked[:k])) / len(relevant)


def normalize_answer(text: str) -> str:
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    return max((float(normalize_answer(prediction) == normalize_answer(g)) for g in golds), default=0.0)


def token_f1(prediction: str, golds: Sequence[str]) -> float:
    def f1(pred: str, gold: str) -> float:
        p, g = normalize_answer(pred).split(), normalize_answer(gold).split()
        common = collections.Counter(p) & collections.Counter(g)
        same = sum(common.values())
        if same == 0:
            return 0.0
        precision, recall = same / len(p), same / len(g)
        return 2 * precision * recall / (precision + recall)

    return max((f1(prediction, g) for g in golds), default=0.0)


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
