"""Chunking: exact provenance, boundaries, overlap, row ranges, configuration checks."""

from __future__ import annotations

import random

import pytest
from pydantic import ValidationError

from services.rag.documents import Section
from services.rag.ingest.chunking import ChunkerConfig, chunk_section, chunk_sections
from services.rag.settings import RagSettings


def _prose(paragraphs: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    words = "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega river stone cloud".split()
    out = []
    for _ in range(paragraphs):
        sentences = []
        for _ in range(rng.randint(2, 7)):
            sentence = " ".join(rng.choice(words) for _ in range(rng.randint(5, 25)))
            sentences.append(sentence.capitalize() + ".")
        out.append(" ".join(sentences))
    return "\n\n".join(out)


def test_every_chunk_is_an_exact_slice_within_the_size() -> None:
    text = _prose(40)
    config = ChunkerConfig(size=500, overlap=80)
    spans = chunk_section(Section(text=text), 0, config)
    assert len(spans) > 5
    for span in spans:
        piece = text[span.start : span.end]
        assert 0 < len(piece) <= 500
        assert piece == piece.strip()
    # Together the chunks cover every non-space character of the section.
    covered = set()
    for span in spans:
        covered.update(range(span.start, span.end))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


def test_chunks_end_on_sentence_or_paragraph_boundaries() -> None:
    text = _prose(30)
    spans = chunk_section(Section(text=text), 0, ChunkerConfig(size=600, overlap=100))
    for span in spans[:-1]:
        assert text[span.end - 1] in ".!?", repr(text[span.end - 20 : span.end])


def test_a_clause_colon_is_a_sentence_break_but_a_label_or_a_list_intro_is_not() -> None:
    filler = "The committee reviewed every proposal in detail over the summer"
    clause = f"{filler} and asked one question: would the new mooring fees cover the harbour repairs in time"
    label = f"{filler}.\nFax: 202-493-2251, or write to the docket office by post"
    intro = f"{filler}, and comments on it may be sent to:\n- the docket office\n- the harbour master by mail"

    def first_chunk(text: str, size: int = 110) -> str:
        span = chunk_section(Section(text=text), 0, ChunkerConfig(size=size, overlap=0))[0]
        return text[span.start : span.end]

    assert first_chunk(clause).endswith("one question:")  # ends a clause, like a full stop
    assert first_chunk(label) == f"{filler}."  # "Fax:" stays with its number
    assert first_chunk(intro, size=130).endswith("sent to:\n- the docket office")  # the list stays with its intro


def test_overlap_restarts_at_a_sentence_or_word_inside_the_previous_chunk() -> None:
    text = _prose(30)
    spans = chunk_section(Section(text=text), 0, ChunkerConfig(size=600, overlap=150))
    overlapping = at_sentence = 0
    for previous, current in zip(spans, spans[1:], strict=False):
        assert current.start > previous.start
        if current.start < previous.end:
            overlapping += 1
            assert previous.end - current.start <= 150
            assert text[current.start - 1].isspace()  # never mid-word
            at_sentence += text[: current.start].rstrip().endswith((".", "!", "?"))
    assert overlapping >= len(spans) // 2
    assert at_sentence >= overlapping // 2  # sentences preferred; words when none fits the overlap


def test_no_overlap_means_disjoint_chunks() -> None:
    text = _prose(20)
    spans = chunk_section(Section(text=text), 0, ChunkerConfig(size=400, overlap=0))
    for previous, current in zip(spans, spans[1:], strict=False):
        assert current.start >= previous.end


def test_a_word_longer_than_the_size_is_cut_hard() -> None:
    text = "x" * 2500
    spans = chunk_section(Section(text=text), 0, ChunkerConfig(size=1000, overlap=100))
    assert all(span.end - span.start <= 1000 for span in spans)
    assert spans[0].start == 0 and spans[-1].end == 2500


def test_small_section_is_one_chunk_without_surrounding_space() -> None:
    spans = chunk_section(Section(text="\n\n  Hello there.  \n"), 3, ChunkerConfig())
    assert [(s.section_index, s.start, s.end) for s in spans] == [(3, 4, 16)]


def test_table_rows_are_not_split_and_row_ranges_are_exact() -> None:
    lines = ["id | name | note"] + [f"{i} | name {i} | a note about row {i}" for i in range(2, 80)]
    text = "\n".join(lines)
    row_starts, offset = [], 0
    for number, line in enumerate(lines, start=1):
        if number > 1:
            row_starts.append((offset, number))
        offset += len(line) + 1
    section = Section(text=text, sheet_name="S", row_starts=tuple(row_starts))
    spans = chunk_section(section, 0, ChunkerConfig(size=300, overlap=60))
    for span in spans:
        piece = text[span.start : span.end]
        for line in piece.split("\n"):
            assert line in lines, f"row split: {line!r}"
        numbers = [int(line.split(" | ")[0]) for line in piece.split("\n") if line[0].isdigit()]
        assert (span.row_start, span.row_end) == (min(numbers), max(numbers))


def test_prose_before_a_table_has_no_row_range() -> None:
    text = "Intro paragraph. " * 30 + "\n\nA | B\n1 | 2"
    table_at = text.index("A | B")
    section = Section(text=text, row_starts=((table_at, 1), (table_at + 6, 2)))
    spans = chunk_section(section, 0, ChunkerConfig(size=300, overlap=0))
    assert (spans[0].row_start, spans[0].row_end) == (0, 0)
    assert (spans[-1].row_start, spans[-1].row_end) == (1, 2)


def test_sections_are_chunked_in_order_with_their_index() -> None:
    spans = chunk_sections([Section(text="one."), Section(text="   "), Section(text="three.")], ChunkerConfig())
    assert [s.section_index for s in spans] == [0, 2]


@pytest.mark.parametrize(("size", "overlap"), [(500, 500), (500, 900), (100, -1)])
def test_overlap_not_below_size_is_rejected(size: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        ChunkerConfig(size=size, overlap=overlap)


def test_settings_reject_overlap_not_below_size(monkeypatch) -> None:
    monkeypatch.setenv("DOCUTHINKER_RAG_CHUNK_SIZE", "400")
    monkeypatch.setenv("DOCUTHINKER_RAG_CHUNK_OVERLAP", "400")
    with pytest.raises(ValidationError, match="must be smaller"):
        RagSettings()
    monkeypatch.setenv("DOCUTHINKER_RAG_CHUNK_OVERLAP", "50")
    assert (RagSettings().chunk_size, RagSettings().chunk_overlap) == (400, 50)


def test_defaults() -> None:
    settings = RagSettings()
    assert (settings.chunk_size, settings.chunk_overlap) == (900, 120)
