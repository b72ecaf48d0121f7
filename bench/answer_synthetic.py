"""Questions generated from document structure, for training the answer ranker (never for scoring it).

From a training document's chunks: every table cell under a header asked for by its row and column
("What is the Headcount of Depot 4?"), every ``Label: value`` field by its label ("What is the Cashier?"),
in a few fixed phrasings. The gold answer is the cell or value itself. Only documents of a fold's training
side are used, so the generated questions never describe a document a fold is scored on.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

from bench.answer_data import QuestionSample
from bench.docqa_score import Item
from services.rag.answers.tables import is_numeric, tables_in
from services.rag.answers.units import row_label, units_of
from services.rag.retrieval import RetrievedChunk

CELL_TEMPLATES = ("What is the {column} of {row}?", "What {column} does {row} have?", "{row}: what is the {column}?",
                  "Tell me the {column} for {row}.")
FIELD_TEMPLATES = ("What is the {label}?", "What does the document give as {label}?", "Which {label} is stated?")
PER_DOCUMENT = 12
"""Questions generated per document at most (long tables would otherwise drown the real questions)."""


def _usable(text: str) -> bool:
    return 1 <= len(text) <= 60 and any(ch.isalnum() for ch in text)


def generate(document: str, chunks: Sequence[RetrievedChunk], group: str, seed: int = 7) -> list[QuestionSample]:
    """Up to ``PER_DOCUMENT`` (question, gold) samples from one document's chunks (their pools are filled later)."""
    rng = random.Random(int(hashlib.sha256(f"{seed}{group}".encode()).hexdigest()[:8], 16))
    found: list[tuple[str, str]] = []
    for hit in chunks:
        for table in tables_in(hit.chunk.text):
            if table.header is None:
                continue
            headers = table.header.texts()
            for row in table.rows:
                label = row_label(row)
                if not _usable(label) or len(row.cells) != len(headers):
                    continue
                for header, cell in zip(headers, row.cells, strict=True):
                    if cell.text == label or not _usable(header) or not _usable(cell.text) or is_numeric(header):
                        continue
                    found.append((rng.choice(CELL_TEMPLATES).format(column=header, row=label), cell.text))
        for unit in units_of(hit, 0):
            if unit.value is not None and _usable(unit.label) and _usable(unit.value.text):
                found.append((rng.choice(FIELD_TEMPLATES).format(label=unit.label), unit.value.text.strip()))
    rng.shuffle(found)
    samples = []
    for n, (question, gold) in enumerate(dict.fromkeys(found).keys()):
        if n >= PER_DOCUMENT:
            break
        item = Item(f"syn-{group}-{n}", document, question, (gold,), "synthetic", ("synthetic",))
        samples.append(QuestionSample(item.id, "synthetic", group, question, (gold,), "synthetic", ("synthetic",),
                                      item=item))
    return samples
