"""HTML previews of DOCX, spreadsheet and delimited originals: their content, escaped, rows numbered."""

from __future__ import annotations

import io

import docx
import openpyxl
import pytest

from services.rag.viewing.previews import MAX_ROWS, preview
from services.runtime.errors import FailedPrecondition


def make_docx() -> bytes:
    document = docx.Document()
    document.add_heading("Safety <rules>", level=1)
    document.add_paragraph("Helmets are worn on the quay at all times.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def make_xlsx(rows) -> bytes:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Cars"
    for row in rows:
        sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def test_a_docx_is_html_with_its_headings_and_its_text_escaped():
    page = preview(make_docx(), "docx", "rules.docx")
    assert "<h1>Safety &lt;rules&gt;</h1>" in page
    assert "<p>Helmets are worn on the quay at all times.</p>" in page
    assert "<script" not in page


def test_a_sheet_is_a_table_whose_rows_carry_their_numbers():
    page = preview(make_xlsx([("model", "hp"), ("Duster 360", 245), ("<b>x</b>", 1.5)]), "xlsx", "cars.xlsx")
    assert '<section data-sheet="Cars">' in page
    assert '<tr data-row="2"><th class="row" scope="row">2</th><td>Duster 360</td><td>245</td></tr>' in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page


def test_csv_is_sniffed_and_long_tables_are_cut_with_a_note():
    data = ("a;b\n" + "".join(f"{n};{n * 2}\n" for n in range(MAX_ROWS + 5))).encode("utf-8")
    page = preview(data, "csv", "big.csv")
    assert '<tr data-row="2"><th class="row" scope="row">2</th><td>0</td><td>0</td></tr>' in page
    assert f'data-row="{MAX_ROWS + 1}"' not in page and "Only the first" in page


def test_other_types_have_no_preview():
    with pytest.raises(FailedPrecondition):
        preview(b"%PDF", "pdf", "a.pdf")
