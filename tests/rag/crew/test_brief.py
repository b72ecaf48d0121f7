"""Broad requests and the cited brief: the real retriever and extractive ranker (MiniLM) over
an in-memory index (a fake at the index port)."""

from __future__ import annotations

import pytest

from services.models.embedder import get_embedder
from services.rag.analysis.answers import RagAnswers, is_broad
from services.rag.answers.answering import AnswerService
from services.rag.answers.extractive import ExtractiveAnswerer
from services.rag.answers.model import REFUSAL, SupportStatus
from services.rag.retrieval import HybridRetriever

from ..answers.fakes import FakeIndex, make_chunk

pytestmark = pytest.mark.models  # the real embedder / local model

PAGE = (
    "Acme Wind Operations Report. The Lyon warehouse stores spare turbine blades for the northern wind farms. "
    "Inspections found corrosion on 14 blades in 2024, up from 6 in 2023. "
    "The main risk is the shortage of certified technicians, three of whom retire in 2025."
)
OTHER = "Globex was founded by Hank Scorpio in 1989. The Globex reactor is cooled by liquid sodium."


@pytest.fixture(scope="module")
def answers() -> RagAnswers:
    encoder = get_embedder()
    index = FakeIndex([make_chunk("acme", "report", PAGE, filename="report.txt"),
                       make_chunk("acme", "globex", OTHER, filename="globex.txt")], encoder)
    return RagAnswers(AnswerService(HybridRetriever(index, encoder), ExtractiveAnswerer(encoder)))


@pytest.mark.parametrize("question, broad", [
    ("Provide a comprehensive intelligence brief for this document.", True),
    ("Summarize the document", True),
    ("What is this document about?", True),
    ("Give me the key points.", True),
    ("Summarise the section on corrosion", False),
    ("When was the warehouse opened?", False),
    ("Who retires in 2025?", False),
])
def test_broad_requests_are_told_from_questions(question, broad):
    assert is_broad(question) is broad


async def test_the_brief_quotes_and_cites_the_summary_sentences_in_the_document(answers):
    summary = ("Inspections found corrosion on 14 blades in 2024, up from 6 in 2023.",
               "The main risk is the shortage of certified technicians, three of whom retire in 2025.")
    question = "Provide a comprehensive intelligence brief for this document."
    answer = await answers.brief("acme", question, "report", summary)

    assert answer.support_status is SupportStatus.SUPPORTED and answer.answer != REFUSAL
    assert answer.answer == ("Inspections found corrosion on 14 blades in 2024, up from 6 in 2023 [1]. The main risk "
                             "is the shortage of certified technicians, three of whom retire in 2025 [2].")
    for citation, sentence in zip(answer.citations, summary, strict=True):
        assert citation.chunk.document_id == "report"
        assert PAGE[citation.char_start:citation.char_end] == citation.excerpt == sentence


async def test_a_paraphrased_summary_cites_the_supporting_sentence(answers):
    answer = await answers.brief("acme", "Summarize the document", "report",
                                 ["Corrosion was found on 14 blades during the 2024 inspections."])
    expected = "Inspections found corrosion on 14 blades in 2024, up from 6 in 2023."
    assert [c.excerpt for c in answer.citations] == [expected]


async def test_an_unplaceable_summary_falls_back_to_the_answer_engine(answers):
    answer = await answers.brief("acme", "Summarize the document", "report", ["Bananas are yellow."])
    # Nothing of the summary is in the document: the answer engine decides, and abstains.
    assert answer.answer == REFUSAL and answer.support_status is SupportStatus.INSUFFICIENT
    assert answer.citations == ()
