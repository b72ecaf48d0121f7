"""The learned answer scorer: its features, the shipped models, evidence reordering and the fitting helpers."""

from __future__ import annotations

import numpy as np
import pytest

from bench.calibrate_abstention import fit_linear, out_of_fold, threshold_for
from rag_answers.fakes import FakeIndex, HashingEncoder, make_chunk
from services.models.embedder import get_embedder
from services.rag.answers import answer_model
from services.rag.answers.answering import AnswerService
from services.rag.answers.evidence import CHUNK_FEATURE_NAMES, POOL_SIZE, EvidenceRanker, pool_size
from services.rag.answers.extractive import ExtractiveAnswerer
from services.rag.answers.features import FEATURE_NAMES, Candidate, feature_matrix, question_names
from services.rag.answers.scoring import ANSWERABILITY_NAMES, AnswerScorer, LinearModel, answerability_features
from services.rag.retrieval import HybridRetriever, RetrievedChunk

pytestmark = pytest.mark.models  # the real embedder / local model

COL = {name: i for i, name in enumerate(FEATURE_NAMES)}


def candidates(*texts: str) -> list[Candidate]:
    return [Candidate(t, t, t, rank, 1.0 / (rank + 1)) for rank, t in enumerate(texts)]


def features(question: str, *texts: str) -> np.ndarray:
    return feature_matrix(question, candidates(*texts), np.full(len(texts), 0.5))


def test_question_names_are_capitalised_words_after_the_first_and_numbers():
    assert question_names("When did Kublai move the capital to Dadu in 1272?") == {"kublai", "dadu", "1272"}
    assert question_names("What is the boiling point?") == frozenset()


def test_a_name_the_sentence_lacks_is_counted_missing():
    rows = features("When did Kublai found the Yuan dynasty?",
                    "Kublai founded the Yuan dynasty in 1271.", "Ogedei founded the Yuan dynasty in 1271.")
    assert rows[0, COL["missing_names"]] == 0.0
    assert rows[1, COL["missing_names"]] == pytest.approx(0.5)


def test_negation_on_one_side_is_told_apart():
    rows = features("Which city did not join the league?", "Lyon joined the league in 1990.",
                    "Lyon did not join the league.")
    assert rows[0, COL["question_only_negated"]] == 1.0 and rows[1, COL["question_only_negated"]] == 0.0
    rows = features("Which city joined the league?", "Lyon did not join the league.")
    assert rows[0, COL["sentence_only_negated"]] == 1.0


def test_topic_words_shared_by_every_candidate_weigh_less_than_distinctive_ones():
    # "huguenots" is in every sentence; "edict" only in the first: covering "edict" is worth more.
    rows = features("Which edict protected the Huguenots?", "The edict of Nantes protected the Huguenots.",
                    "Huguenots settled in Kent.", "Huguenots fled to Prussia.", "The Huguenots prospered.")
    assert rows[0, COL["idf_coverage"]] > rows[0, COL["coverage"]] * 0.99
    assert rows[1, COL["idf_coverage"]] < rows[1, COL["coverage"]]


def test_verbatim_runs_and_missing_superlatives():
    rows = features("What is the largest city of the region?", "The largest city of the region is Lyon.",
                    "A city of the region is Lyon.")
    assert rows[0, COL["longest_match"]] > rows[1, COL["longest_match"]]
    assert rows[0, COL["degree_missing"]] == 0.0 and rows[1, COL["degree_missing"]] == 1.0


def test_lead_features_measure_distance_to_the_best_other_candidate():
    rows = feature_matrix("q?", candidates("alpha beta gamma.", "delta epsilon zeta."), np.array([0.9, 0.6]))
    lead = COL["cosine_lead"]
    assert rows[0, lead] == pytest.approx(0.3) and rows[1, lead] == pytest.approx(-0.3)


def test_the_shipped_models_match_the_feature_sets():
    assert tuple(answer_model.SENTENCE_FEATURES) == FEATURE_NAMES
    assert tuple(answer_model.ANSWERABILITY_FEATURES) == ANSWERABILITY_NAMES
    assert tuple(answer_model.CHUNK_FEATURES) == CHUNK_FEATURE_NAMES
    assert 0.0 < answer_model.THRESHOLD < 1.0
    AnswerScorer.shipped()  # raises when the lengths disagree


def test_answerability_reads_the_best_candidate_and_the_margin():
    matrix = np.arange(2 * len(FEATURE_NAMES), dtype=float).reshape(2, -1)
    row = answerability_features(matrix, np.array([0.5, 2.0]))
    assert len(row) == len(ANSWERABILITY_NAMES)
    assert row[0] == 2.0 and row[1] == pytest.approx(1.5)
    assert list(row[-len(FEATURE_NAMES):]) == list(matrix[1])
    scorer = AnswerScorer(LinearModel((0.0,) * len(FEATURE_NAMES), 0.0),
                          LinearModel((0.0,) * len(ANSWERABILITY_NAMES), 0.0))
    assert scorer.answerable(np.zeros((0, len(FEATURE_NAMES))), np.zeros(0)) == 0.0
    assert scorer.answerable(matrix, np.array([0.5, 2.0])) == pytest.approx(0.5)


def retrieved(tenant: str, doc: str, text: str, ordinal: int, score: float) -> RetrievedChunk:
    return RetrievedChunk(make_chunk(tenant, doc, text, ordinal), score, score, score)


def test_evidence_ranker_lifts_the_chunk_whose_sentence_answers():
    engine = ExtractiveAnswerer(get_embedder())
    pool = [
        retrieved("t", "a", "The Lyon warehouse is large. It stores turbine blades and parts for wind farms.", 0, 3.0),
        retrieved("t", "b", "The cafeteria menu changes every Monday. Lunch is served at noon.", 1, 2.0),
        retrieved("t", "c", "Claire Dubois opened the Lyon warehouse in 1998 after a long search.", 2, 1.0),
    ]
    ranked = EvidenceRanker(engine).rerank("When was the Lyon warehouse opened?", pool)
    assert ranked[0].chunk.document_id == "c"
    assert sorted(h.chunk.chunk_id for h in ranked) == sorted(h.chunk.chunk_id for h in pool)


async def test_the_answer_path_reorders_a_wider_pool_and_cuts_it_to_top_k():
    chunks = [make_chunk("t", f"d{i}", f"Filler sentence number {i} about turbines and blades.", i)
              for i in range(30)]
    chunks.append(make_chunk("t", "key", "The Lyon warehouse was opened in 1998 by Claire Dubois.", 99))
    index = FakeIndex(chunks)
    retriever = HybridRetriever(index, index.encoder)
    service = AnswerService(retriever, ExtractiveAnswerer(HashingEncoder()))
    hits = await service.evidence_for("t", "When was the Lyon warehouse opened?", 3)
    assert len(hits) == 3 and hits[0].chunk.document_id == "key"
    assert {k for _, _, k, _ in index.calls} == {pool_size(3) * retriever.config.candidate_factor}
    assert pool_size(3) == POOL_SIZE and pool_size(40) == 40


def test_fitting_helpers():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 2)) * [1.0, 10.0] + [0.0, 5.0]
    y = x[:, 0] + (x[:, 1] - 5.0) / 10.0 > 0
    model = fit_linear(x, y)
    assert ((model.decision(x) > 0) == y).mean() > 0.95  # coefficients come back in raw-feature units
    p = np.array([0.9, 0.8, 0.7, 0.6, 0.1])
    answerable = np.array([True, True, True, True, False])
    assert threshold_for(p, answerable, 0.75) == 0.7 and threshold_for(p, answerable, 1.0) == 0.6


def test_out_of_fold_never_fits_on_the_held_out_article():
    from types import SimpleNamespace

    samples = [SimpleNamespace(question=SimpleNamespace(article=a)) for a in ("x", "y", "x", "z")]
    fitted = out_of_fold(samples, lambda chosen: frozenset(samples[i].question.article for i in chosen))
    assert [sorted(f) for f in fitted] == [["y", "z"], ["x", "z"], ["y", "z"], ["x", "y"]]


def test_words_naming_the_source_and_reporting_verbs_need_no_cover_from_the_sentence():
    sentence = "The cafeteria serves lunch from noon until two o'clock."
    named = [Candidate(sentence, sentence, sentence, 0, 1.0, source="cafeteria notes")]
    unnamed = [Candidate(sentence, sentence, sentence, 0, 1.0, source="handbook")]
    question = "What do the cafeteria notes say about lunch?"
    assert feature_matrix(question, named, np.array([0.5]))[0, COL["coverage"]] == 1.0
    assert feature_matrix(question, unnamed, np.array([0.5]))[0, COL["coverage"]] == pytest.approx(2 / 3)
