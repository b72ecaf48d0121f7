"""Training and evaluation samples of the answer ranker: questions, their evidence pools, units, features, labels.

Three sources, each turned into the same ``QuestionSample`` by the production code (parsers, chunker,
stores, hybrid retrieval, ``units``, ``unit_features``):
- docqa and docqa2 (../shared/data): questions over real documents, grouped by document for
  cross-validation; a unit is labelled positive when it is in the question's gold file and holds a gold
  string under the sets' matching rule;
- SQuAD 2.0 (../shared/data/squad): 8 articles' questions over an index with 20 distractor articles;
  positive when the unit covers a gold answer span;
- questions generated from the structure of the training documents (``answer_synthetic``): a table
  cell asked for by its row and column, a form field by its label (collected; not in the shipped
  model's training, see ``answer_training``).

Pools and parsed documents are cached under data/answer-lab/ (keyed by file hash and the code that made
them is not: delete the folder after changing parsing, chunking or retrieval).
"""

from __future__ import annotations

import asyncio
import hashlib
import pathlib
import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from bench.docqa_score import Item, contains

CACHE = pathlib.Path("data/answer-lab")


@dataclass
class QuestionSample:
    id: str
    source: str
    """docqa, docqa2, squad or synthetic."""
    group: str
    """Cross-validation group: the gold document (``<set>/<file>``), or the SQuAD article."""
    question: str
    answers: tuple[str, ...]
    kind: str
    tags: tuple[str, ...]
    pool: list = field(default_factory=list)
    """The retrieved chunks the engine answers from (``RetrievedChunk``), in order."""
    labels: np.ndarray | None = None
    """Per unit of ``units(pool)``: 1 when the unit holds the answer."""
    features: np.ndarray | None = None
    item: Item | None = None

    @property
    def answerable(self) -> bool:
        return bool(self.answers)


def unit_holds(unit, item: Item) -> bool:
    """The docqa rule for one unit: in the gold file (page/sheet not required) and containing a gold string."""
    if unit.hit.chunk.provenance.filename != item.file:
        return False
    return any(contains(unit.text, g) for g in item.answers)


def label_units(units: Sequence, holds: Callable[[object], bool]) -> np.ndarray:
    return np.asarray([1.0 if holds(u) else 0.0 for u in units])


def parse_cached(parse: Callable, data: bytes, *args):
    """``parse(data, *args)``, cached by the file's hash (OCR of scans takes minutes)."""
    (CACHE / "parsed").mkdir(parents=True, exist_ok=True)
    key = CACHE / "parsed" / f"{hashlib.sha256(data).hexdigest()}.pkl"
    if key.exists():
        return pickle.loads(key.read_bytes())
    parsed = parse(data, *args)
    key.write_bytes(pickle.dumps(parsed))
    return parsed


def run(coroutine):
    return asyncio.run(coroutine)
