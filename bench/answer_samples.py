"""The answer ranker's samples (``bench.answer_training``'s step 1): questions with their evidence pools, collected
from the production retrieval over docqa, docqa2 and SQuAD 2.0, and featurised.

Each sample is a question's evidence pool, its units (``units``) with their features (``unit_features``) and
labels (``bench.answer_data``); pools, library chunks and features are cached under ``CACHE``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import pathlib
import pickle
from collections.abc import Sequence

import numpy as np

from bench.answer_data import CACHE, QuestionSample, label_units, parse_cached, unit_holds
from bench.docqa_score import Item
from bench.shared import SHARED
from services.rag.answers.unit_features import feature_matrix
from services.rag.answers.units import units

ROOT = pathlib.Path(__file__).resolve().parents[1]
SETS = {"docqa": (SHARED / "data" / "docqa" / "dev.json", SHARED / "fixtures" / "docs"),
        "docqa2": (SHARED / "data" / "docqa2" / "dev.json", SHARED / "data" / "docqa2" / "docs")}
POOL = 20
"""Chunks of the fused pool the engine reads units from (``answering.pool_size``)."""
REAL = frozenset({"docqa", "docqa2"})
"""Questions in users' words over each set's whole library (no document filter): trained on, cross-validated by
document and scored (the headline figures)."""
ONE_DOCUMENT = frozenset({"docqa:one-document", "docqa2:one-document"})
"""The same questions over their own document alone (a one-document library, or a question filtered to its
document): scored out of fold as their own slice. Training on them (``--with one-document``) and on the questions
generated from document structure (``--with synthetic``) gave no out-of-fold gain (top-1 0.589 and 0.593 against
0.602 without), so neither trains the shipped model."""


def _pools_key(name: str, questions: Sequence[str], files: Sequence[pathlib.Path]) -> pathlib.Path:
    digest = hashlib.sha256(json.dumps([name, list(questions), [p.name for p in files], POOL]).encode()).hexdigest()
    return CACHE / f"pools-{name}-{digest[:16]}.pkl"


DOCUMENTS: dict[str, list] = {}
"""Every chunk of every document of the libraries, by document id (summaries and table computations read them)."""


def document_chunks(tenant: str, document_id: str) -> list:
    return DOCUMENTS.get(document_id, [])


def collect_docqa(name: str) -> tuple[list[QuestionSample], list[QuestionSample]]:
    """The set's questions with their evidence pools over the set's own library, the questions generated from the
    structure of its documents (``answer_synthetic``, grouped with their document) with theirs, and the library's
    chunks into ``DOCUMENTS`` (all cached)."""
    from bench.docqa_bench import library, load_items

    questions_path, docs = SETS[name]
    items = load_items(questions_path)
    files = library(items, docs)
    key = _pools_key(name, [i.question for i in items], files)
    chunks_key = key.with_name(key.name.replace("pools-", "chunks-"))
    synthetic_key = key.with_name(key.name.replace("pools-", "synthetic-"))
    if key.exists() and chunks_key.exists() and synthetic_key.exists():
        DOCUMENTS.update(pickle.loads(chunks_key.read_bytes()))
        return pickle.loads(key.read_bytes()), pickle.loads(synthetic_key.read_bytes())
    import bench.docqa_corpus as docqa_corpus
    from bench.answer_synthetic import generate
    from bench.corpus import DiskCachedEncoder
    from services.rag.answers.settings import AnswerSettings
    from services.rag.retrieval import HybridRetriever, RetrievedChunk

    original = docqa_corpus.parse
    docqa_corpus.parse = lambda data, *args: parse_cached(original, data, *args)
    encoder = DiskCachedEncoder(name)
    corpus = docqa_corpus.DocumentCorpus(encoder)
    try:
        corpus.add_files(files)
        library_chunks = {doc_id: corpus.index.document_chunks(corpus.TENANT, doc_id) for doc_id in corpus.by_document_id}
        DOCUMENTS.update(library_chunks)
        retriever = HybridRetriever(corpus.index, encoder, AnswerSettings().retrieval_config())

        def pooled(sample: QuestionSample) -> QuestionSample:
            sample.pool = asyncio.run(retriever.search(corpus.TENANT, sample.question, POOL, None))
            return sample

        samples = (pickle.loads(key.read_bytes()) if key.exists() else
                   [pooled(QuestionSample(item.id, name, f"{name}/{item.file}", item.question, item.answers, item.kind,
                                          item.tags, item=item)) for item in items])
        samples = [x for x in samples if x.source == name]
        ids = {corpus.documents[f.name].document_id: f.name for f in files if f.name in corpus.documents}
        by_file = {filename: doc_id for doc_id, filename in ids.items()}
        for item in items:
            if item.file not in by_file:
                continue
            one = QuestionSample(item.id, f"{name}:one-document", f"{name}/{item.file}", item.question, item.answers,
                                 item.kind, item.tags, item=item)
            one.pool = asyncio.run(retriever.search(corpus.TENANT, item.question, POOL, [by_file[item.file]]))
            samples.append(one)
        # Only the documents the set asks about: their questions' folds decide which generated questions train.
        asked = {i.file for i in items}
        synthetic = []
        for doc_id in corpus.by_document_id:
            filename = library_chunks[doc_id][0].provenance.filename if library_chunks.get(doc_id) else ""
            if filename in asked:
                hits = [RetrievedChunk(c, 1.0) for c in library_chunks[doc_id]]
                synthetic += [pooled(x) for x in generate(filename, hits, f"{name}/{filename}")]
    finally:
        docqa_corpus.parse = original
        corpus.close()
    CACHE.mkdir(parents=True, exist_ok=True)
    key.write_bytes(pickle.dumps(samples))
    chunks_key.write_bytes(pickle.dumps(library_chunks))
    synthetic_key.write_bytes(pickle.dumps(synthetic))
    return samples, synthetic


def collect_squad() -> list[QuestionSample]:
    from bench import squad
    from bench.corpus import DiskCachedEncoder
    from services.rag.answers.settings import AnswerSettings
    from services.rag.retrieval import HybridRetriever

    articles, questions = squad.load()
    key = _pools_key("squad", [q.text for q in questions], [])
    if key.exists():
        return pickle.loads(key.read_bytes())
    encoder = DiskCachedEncoder("squad")
    corpus = squad.BenchCorpus(encoder)
    try:
        corpus.add(articles.items())
        retriever = HybridRetriever(corpus.index, encoder, AnswerSettings().retrieval_config())
        samples = []
        for q in questions:
            pool = asyncio.run(retriever.search(corpus.TENANT, q.text, POOL, None))
            golds = tuple(dict.fromkeys(text for text, _ in q.answers))
            item = Item(q.id, f"{q.article[:80]}.txt", q.text, golds, "squad", ())
            samples.append(QuestionSample(q.id, "squad", f"squad/{q.article}", q.text, golds, "squad", (), pool=pool,
                                          item=item))
    finally:
        corpus.close()
    key.write_bytes(pickle.dumps(samples))
    return samples


FEATURE_CODE = ("unit_features.py", "units.py", "tables.py", "sentences.py", "typed_spans.py", "answer_types.py",
                "lexical.py")


SMALL_POOL = 2
"""Chunks of the small pools trained on beside the full ones: a short document or a small library gives a pool of
a few units, whose features (pool-relative similarity, local idf) the 20-chunk pools never show."""
SMALL_SQUAD_EVERY = 4


def small_pools(samples: Sequence[QuestionSample]) -> list[QuestionSample]:
    """Each sample again over the first ``SMALL_POOL`` chunks of its pool (same question, group and gold;
    features and labels recomputed). Out of fold they lifted the utility on such pools from 0.344 to 0.391 per
    question with the full pools' top-1 unchanged (0.589 / 0.593)."""
    return [dataclasses.replace(s, source=f"{s.source}:small-pool", pool=list(s.pool[:SMALL_POOL]), features=None,
                                labels=None) for s in samples]


def featurise(samples: Sequence[QuestionSample], similarity) -> None:
    """Units, features and labels of every sample (in place); cached by the samples and the feature code."""
    code = b"".join((ROOT / "services" / "rag" / "answers" / name).read_bytes() for name in FEATURE_CODE)
    digest = hashlib.sha256(code + json.dumps([[s.id, s.source, s.question] for s in samples]).encode()).hexdigest()
    key = CACHE / f"features-{digest[:16]}.pkl"
    if key.exists():
        for sample, (features, labels) in zip(samples, pickle.loads(key.read_bytes()), strict=True):
            sample.features, sample.labels = features, labels
        return
    for sample in samples:
        found = units(sample.pool)
        sample.features = feature_matrix(sample.question, found, similarity)
        sample.labels = label_units(found, lambda u, s=sample: bool(s.answers) and unit_holds(u, s.item))
    key.write_bytes(pickle.dumps([(s.features, s.labels) for s in samples]))


def similarity_of(encoder):
    def similarity(question: str, texts: Sequence[str]) -> np.ndarray:
        vectors = encoder.encode([question, *texts])
        return np.asarray(vectors[1:] @ vectors[0], dtype=float)
    return similarity

