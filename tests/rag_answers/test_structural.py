"""Evidence a question's form points at: a letter's sign-off, an acronym's definition (no server)."""

from __future__ import annotations

from services.rag.answers.question_terms import source_reference
from services.rag.answers.structural import asks_signer, promote, sign_off
from services.rag.documents import Chunk, Provenance
from services.rag.retrieval import RetrievedChunk


def _hit(n: int, text: str) -> RetrievedChunk:
    return RetrievedChunk(Chunk(f"c{n}", "t", n, text, Provenance("d", "paper.pdf", 1, "", 0, 0, (), 0, len(text), 0)),
                          1.0 / (n + 1))


def test_the_signer_is_the_name_under_the_sign_off_or_on_the_from_line():
    memo = "May 5, 2023\nTo Whom it May Concern:\nThree trucks were used.\nBest Regards,\nMallori"
    assert sign_off(memo).text == "Mallori"
    assert memo[sign_off(memo).start : sign_off(memo).end] == "Mallori"
    assert sign_off("MEMO\nFrom: Jane Doe <jane@example.org>\nTo: All staff\n\nThe office closes at 5.").text == "Jane Doe"
    assert sign_off("Thanks\nfor coming to the event.") is None  # a sentence, not a name
    assert asks_signer("Who signed the memo?") and asks_signer("Who is the letter from?")
    assert not asks_signer("Who was the first guest to arrive?")


def test_the_chunk_defining_the_asked_acronym_comes_first_even_from_a_second_search():
    uses = _hit(0, "ICT pretraining is computationally intensive, the DPR authors note.")
    other = _hit(1, "DPR uses two BERT encoders.")
    defining = _hit(2, "ORQA proposes a sophisticated inverse cloze task (ICT) objective for pretraining.")
    promoted = promote("What does ICT stand for?", [uses, other], extra=[defining])
    assert [h.chunk.chunk_id for h in promoted] == ["c2", "c0", "c1"]
    assert promote("What does DPR do?", [uses, other], extra=[defining]) == [uses, other]  # not an acronym question


def test_a_phrase_naming_the_source_is_asked_of_the_document_not_the_passage():
    assert source_reference("What does ICT stand for in the DPR paper?") == ("What does ICT stand for?",
                                                                              frozenset({"dpr"}))
    assert source_reference("Why can't you ignore them, according to the piece?")[1] == frozenset()
    assert source_reference("Who wrote it?") == ("Who wrote it?", frozenset())
