"""The answer engine on each failure class seen on documents nobody had seen (issue #36), through a real in-process
RAG server: the right short answer with the right citation, and a refusal for the near miss beside it.

The documents are generated here, in the shapes the classes were seen in (a table whose column says what the
question calls by another name, a form field, a title page, a letter, a slide deck, a workbook), and every
question is worded differently from its evidence. Nothing in the engine knows these words: the ranker
(``services/rag/answers/ranker.py``) was trained on other documents. Each document lives in its own tenant.
"""

from __future__ import annotations

import io

import pytest

from docuthinker.rag.v1 import answers_pb2
from tests.rag.factories import make_xlsx

SUPPORTED = answers_pb2.SUPPORT_STATUS_SUPPORTED
INSUFFICIENT = answers_pb2.SUPPORT_STATUS_INSUFFICIENT
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

DEPOTS = """Depot network, 2024

Depot | Headcount | Vans | Opened
Leeds | 57 | 19 | 2003
Bristol | 34 | 11 | 2011
Aberdeen | 12 | 4 | 2019
"""

LICENCE = """Software licence agreement

Licensee: Northwind Analytics Ltd
Licensed product: Orbis Forecasting Suite
Term: 36 months from the effective date
Total consideration: EUR 48,500.00
Governing law: the laws of Ireland
"""

TITLE_PAGE = """THE SALT ROADS

A history of coastal trade in the Baltic

by Marguerite Okafor

Harbor Press, 2019

Chapter 1. Herring and salt

Salt from Lüneburg reached the Baltic ports by river barge and cart. The trade made Lübeck rich.
"""

LETTER = """Hallworth Water Board
12 Mill Lane, Hallworth

Our ref: HWB/2207/KL
14 March 2023

Dear Ms Ortega,

Thank you for your letter about the pressure in your street. An engineer will visit on 21 March.

Yours sincerely,
Kofi Larbi
Customer Relations Manager
"""

ACCIDENT = """Incident summary

On the morning of 4 May the regional coach left the road near Tarsk, injuring 42 of those on board.
The driver had worked for the operator since 2009. The road was reopened at 16:00 the same day.
"""


def make_pptx(slides: list[tuple[str, list[str]]]) -> bytes:
    from pptx import Presentation

    deck = Presentation()
    for title, lines in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        body = slide.placeholders[1].text_frame
        body.text = lines[0]
        for line in lines[1:]:
            body.add_paragraph().text = line
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


async def ask(rag, tenant: str, question: str):
    return (await rag.query(tenant, question)).answer


async def test_a_table_cell_whose_column_the_question_calls_by_another_name(shipped):
    await shipped.upload("fc-depots", "depots.txt", DEPOTS)
    answer = await ask(shipped, "fc-depots", "How many staff work at the Bristol depot?")
    assert answer.support_status == SUPPORTED
    citation = answer.citations[0]
    assert (citation.row_label, citation.column_header, citation.short_answer) == ("Bristol", "Headcount", "34")
    page = await shipped.section_text("fc-depots", citation.document_id, citation.page)
    assert page[citation.answer_char_start : citation.answer_char_end] == "34"
    assert answer.answer.startswith("34")  # the short answer first, then the quote


@pytest.mark.xfail(strict=True, reason="known miss of the shipped ranker (issue #36 closing note): the row the question names is answered (p 0.84) with another column; no feature tells a column the table lacks")
async def test_a_column_the_table_does_not_have_is_refused(shipped):
    await shipped.upload("fc-depots-2", "depots.txt", DEPOTS)
    answer = await ask(shipped, "fc-depots-2", "How many electric chargers does the Bristol depot have?")
    assert answer.support_status == INSUFFICIENT and not answer.citations


@pytest.mark.xfail(strict=True, reason="known miss of the shipped ranker (issue #36 closing note): the document title outranks the field (p 0.11); fee and Total consideration are far apart for MiniLM")
async def test_a_form_field_whose_label_differs_from_the_question(shipped):
    await shipped.upload("fc-licence", "licence.txt", LICENCE)
    answer = await ask(shipped, "fc-licence", "What is the fee for the licence?")
    assert answer.support_status == SUPPORTED
    assert "48,500.00" in answer.citations[0].short_answer
    assert "Total consideration" in answer.citations[0].excerpt


async def test_a_field_the_form_does_not_have_is_refused(shipped):
    await shipped.upload("fc-licence-2", "licence.txt", LICENCE)
    answer = await ask(shipped, "fc-licence-2", "What is the late payment penalty?")
    assert answer.support_status == INSUFFICIENT


@pytest.mark.xfail(strict=True, reason="known miss of the shipped ranker (issue #36 closing note): the title line outranks the by-line (p 0.14)")
async def test_the_author_on_a_title_page(shipped):
    await shipped.upload("fc-book", "salt-roads.txt", TITLE_PAGE)
    answer = await ask(shipped, "fc-book", "Who wrote The Salt Roads?")
    assert answer.support_status == SUPPORTED
    assert answer.citations[0].short_answer == "Marguerite Okafor"


async def test_a_by_line_role_the_title_page_does_not_name_is_refused(shipped):
    await shipped.upload("fc-book-2", "salt-roads.txt", TITLE_PAGE)
    answer = await ask(shipped, "fc-book-2", "Who translated The Salt Roads into English?")
    assert answer.support_status == INSUFFICIENT


@pytest.mark.xfail(strict=True, reason="known miss of the shipped ranker (issue #36 closing note): the letterhead outranks the reference line (p 0.14)")
async def test_a_letters_reference_line(shipped):
    await shipped.upload("fc-letter", "letter.txt", LETTER)
    answer = await ask(shipped, "fc-letter", "What reference number does the water board's letter carry?")
    assert answer.support_status == SUPPORTED
    assert "HWB/2207/KL" in answer.citations[0].excerpt


@pytest.mark.xfail(strict=True, reason="known miss of the shipped ranker (issue #36 closing note): the sign-off is cited without the title line under it (p 0.26): units end at line ends")
async def test_the_title_under_a_signature(shipped):
    await shipped.upload("fc-letter-2", "letter.txt", LETTER)
    answer = await ask(shipped, "fc-letter-2", "What is Kofi Larbi's job title?")
    assert answer.support_status == SUPPORTED
    assert "Customer Relations Manager" in answer.answer


@pytest.mark.xfail(strict=True, reason="known miss of the shipped ranker (issue #36 closing note): the right sentence ranks first but under the threshold (p 0.05)")
async def test_a_number_named_by_what_it_counts(shipped):
    await shipped.upload("fc-accident", "incident.txt", ACCIDENT)
    answer = await ask(shipped, "fc-accident", "How many passengers were hurt?")
    assert answer.support_status == SUPPORTED
    assert answer.citations[0].short_answer == "42"


async def test_a_count_the_report_does_not_give_is_refused(shipped):
    await shipped.upload("fc-accident-2", "incident.txt", ACCIDENT)
    answer = await ask(shipped, "fc-accident-2", "How many ambulances were sent to the scene?")
    assert answer.support_status == INSUFFICIENT


@pytest.mark.xfail(strict=True, reason="known miss of the shipped ranker (issue #36 closing note): the slide line is not answered with the shipped threshold")
async def test_a_fact_on_a_slide(shipped):
    deck = make_pptx([("Quarterly review", ["Prepared for the board", "October 2024"]),
                      ("Q3 results", ["Revenue grew 14% to $3.2 million", "Churn fell to 2.1%"]),
                      ("Next steps", ["Open the Lisbon office", "Hire two account managers"])])
    await shipped.upload("fc-slides", "review.pptx", deck, PPTX)
    answer = await ask(shipped, "fc-slides", "What was the churn rate in the third quarter?")
    assert answer.support_status == SUPPORTED
    assert "2.1%" in answer.answer


async def test_a_figure_the_deck_does_not_give_is_refused(shipped):
    deck = make_pptx([("Q3 results", ["Revenue grew 14% to $3.2 million", "Churn fell to 2.1%"])])
    await shipped.upload("fc-slides-2", "review.pptx", deck, PPTX)
    answer = await ask(shipped, "fc-slides-2", "How many employees left the company in the third quarter?")
    assert answer.support_status == INSUFFICIENT


async def test_a_cell_on_the_second_sheet_of_a_workbook(shipped):
    workbook = make_xlsx({
        "Budget": [["Line", "2023", "2024"], ["Salaries", 410000, 432000], ["Rent", 96000, 99000]],
        "Sites": [["Site", "Manager", "Phone"], ["Harrow", "Priya Nair", "020 7946 0018"],
                  ["Slough", "Tom Reeve", "01753 555 120"]],
    })
    await shipped.upload("fc-workbook", "operations.xlsx", workbook, XLSX)
    answer = await ask(shipped, "fc-workbook", "Who runs the Slough site?")
    assert answer.support_status == SUPPORTED
    citation = answer.citations[0]
    assert citation.short_answer == "Tom Reeve" and citation.row_label == "Slough"


async def test_summarise_goes_to_the_summariser_with_citations(shipped):
    memo = ("Warehouse memo\n\nThe quarterly inventory count was completed on March 3 by the logistics team. "
            "Three pallets of water pumps were missing from the count and are being traced. "
            "The depot will close for a day in April to repair the loading bay. "
            "Please direct questions about the count to the depot manager, Ruth Alvarez.\n")
    await shipped.upload("fc-summary", "memo.txt", memo)
    answer = await ask(shipped, "fc-summary", "Summarize the memo.")
    assert answer.support_status == SUPPORTED
    assert answer.answer.startswith("Summary of memo.txt")
    assert len(answer.citations) >= 2
    for citation in answer.citations:
        page = await shipped.section_text("fc-summary", citation.document_id, citation.page)
        assert page[citation.char_start : citation.char_end] == citation.excerpt


@pytest.mark.parametrize(("question", "short", "label"), [
    ("Which depot has the most vans?", "19", "Leeds"),
    ("Which depot has the lowest headcount?", "12", "Aberdeen"),
])
async def test_highest_and_lowest_are_computed_over_the_table(shipped, question, short, label):
    tenant = f"fc-aggregate-{label.lower()}"
    await shipped.upload(tenant, "depots.txt", DEPOTS)
    answer = await ask(shipped, tenant, question)
    assert answer.support_status == SUPPORTED
    citation = answer.citations[0]
    assert (citation.row_label, citation.short_answer) == (label, short)
    assert citation.answer_type.startswith("aggregate_")


async def test_how_many_rows_is_counted(shipped):
    await shipped.upload("fc-count", "depots.txt", DEPOTS)
    answer = await ask(shipped, "fc-count", "How many depots are listed in the table?")
    assert answer.support_status == SUPPORTED
    assert answer.citations[0].short_answer == "3"
