"""CI-only: the real-world documents in ../shared/fixtures/docs (see its SOURCES.md).

Every file is either ingested (through the full pipeline, real MiniLM embedder and Tesseract) or refused
with the right error; extracted text and table rows are checked against known content.
"""

from __future__ import annotations

import csv
import io

import grpc
import pytest

from services.models.embedder import get_embedder
from services.rag.documents import DocumentStatus, IngestOutcome
from services.rag.ingest.formats import validate_upload
from services.rag.ingest.ocr import OcrConfig, PageReader, reader_from
from services.rag.ingest.parsers import ParseLimits, parse
from services.runtime.errors import DomainError

from .probes import collect

pytestmark = [pytest.mark.fixtures, pytest.mark.models]  # every parser, OCR and Whisper included

REFUSED = {
    "encrypted-r6-user-password.pdf": (grpc.StatusCode.FAILED_PRECONDITION, "ENCRYPTED_PDF"),
}


@pytest.fixture(scope="module")
def docs(shared_dir):
    return shared_dir / "fixtures" / "docs"


def _parsed(docs, name: str, ocr: PageReader | None = None):
    path = docs / name
    upload = validate_upload(name, "", path.read_bytes(), 25 * 1024 * 1024)
    return parse(upload.data, upload.file_type, ParseLimits(), ocr)


async def test_every_fixture_is_ingested_or_refused_with_the_right_error(docs, open_runtime) -> None:
    runtime = open_runtime(get_embedder(), embed_progress_every=128)
    names = sorted(p.name for p in docs.iterdir())
    assert len(names) >= 25 and set(REFUSED) <= set(names)
    for name in names:
        data = (docs / name).read_bytes()
        if name in REFUSED:
            with pytest.raises(DomainError) as caught:
                await collect(runtime.pipeline.upload("ci", name, "", data))
            assert (caught.value.code, caught.value.reason) == REFUSED[name], name
            continue
        outcome = (await collect(runtime.pipeline.upload("ci", name, "", data)))[-1]
        assert isinstance(outcome, IngestOutcome), name
        assert outcome.document.status is DocumentStatus.READY and outcome.document.chunk_count > 0, name
    assert runtime.metadata.count_documents("ci") == len(names) - len(REFUSED)


def test_a_scanned_table_is_read_by_ocr_or_refused_without_it(docs) -> None:
    """single_table.pdf is a scan: one page image of a table, no text layer."""
    text = _parsed(docs, "single_table.pdf", reader_from(OcrConfig())).sections[0].text
    assert "mean chunks per document" in text and "Chipper" in text and "64,058" in text
    with pytest.raises(DomainError) as caught:
        _parsed(docs, "single_table.pdf")
    assert (caught.value.code, caught.value.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "OCR_UNAVAILABLE")


def test_data_pdf_tables_match_the_csv(docs) -> None:
    """data.pdf page 1 is the mtcars table of data_1-3.csv: its rows come out as the CSV's cells, in
    order, in blocks that each start with the header row."""
    tables = [s for s in _parsed(docs, "data.pdf").sections if s.page == 1 and s.row_starts]
    rows = list(csv.reader(io.StringIO((docs / "data_1-3.csv").read_text())))
    header, body = " | ".join(rows[0]), [" | ".join(row) for row in rows[1:]]
    assert tables and all(t.text.startswith(header + "\n") for t in tables)
    found = [line for t in tables for line in t.text.splitlines()[1:]]
    assert found == body  # every row, once, in the same order, label and numbers together
    numbers = [n for t in tables for _, n in t.row_starts]
    assert numbers == list(range(2, len(rows) + 1))


def test_data_csv_rows_keep_the_header_and_row_numbers(docs) -> None:
    sections = _parsed(docs, "data_1-3.csv").sections
    assert all(s.text.startswith(" | mpg | cyl | disp") for s in sections)
    numbers = [n for s in sections for _, n in s.row_starts]
    assert numbers == list(range(2, 34))
    first = sections[0]
    offset = dict((n, o) for o, n in first.row_starts)[2]
    assert first.text[offset:].startswith("Mazda RX4 | 21.0 | 6 | 160.0 | 110 | 3.90 | 2.620 | 16.46 | 0 | 1 | 4 | 4")


def test_pdfs_keep_pages_and_reading_order(docs) -> None:
    geo = _parsed(docs, "GeoBase_NHNC1_Data_Model_UML_EN.pdf")
    assert geo.page_count == 19
    crazy = _parsed(docs, "crazyones.pdf").sections[0].text
    assert crazy.startswith("The Crazy Ones") and "The misfits. The rebels. The troublemakers." in crazy
    columns = _parsed(docs, "multi-column-2p.pdf").sections[0].text
    # The left column's abstract reads on without the right column's lines interleaved.
    assert "Open-domain question answering relies on efficient passage retrieval to select candidate" in columns
    assert "Abstract\nOpen-domain question answering" in columns


def test_docx_tables_headers_and_headings(docs) -> None:
    tables = "\n".join(s.text for s in _parsed(docs, "docx-tables.docx").sections)
    assert "Header Col 1 | Header Col 2\nLorem ipsum | A link example" in tables
    margins = {s.heading_path: s.text for s in _parsed(docs, "hdr-header-footer.docx").sections}
    assert margins[("Header",)] == "Header for section-1"
    assert margins[("Footer",)] == "Footer for section 1"
    known = _parsed(docs, "par-known-paragraphs.docx")
    assert known.sections[0].heading_path == ("Heading Paragraph",) and "Normal paragraph" in known.sections[0].text


def test_spreadsheets(docs) -> None:
    cups = _parsed(docs, "stanley-cups.xlsx")
    assert cups.sheet_names == ("Stanley Cups", "Stanley Cups Since 67")
    first = cups.sections[0]
    assert first.sheet_name == "Stanley Cups" and "Team | Location | Stanley Cups" in first.text
    assert "Maple Leafs | TOR | 13" in first.text
    bad = _parsed(docs, "bad_dimensions.xlsx")  # declares 1048576 x 1024 cells
    assert bad.sections[0].text.startswith("PN | Qty | Price\nEP00001 | 10000 | 0.0367")
    semicolons = _parsed(docs, "semicolon-delimited.csv").sections[0].text.splitlines()
    assert semicolons[0] == "Lorem, ipsum | dolor sit | amet" and all(line.count(" | ") == 2 for line in semicolons)


def test_html_and_markdown(docs) -> None:
    ideas = _parsed(docs, "ideas-page.html")
    assert ideas.title == "How to Get New Ideas"
    assert "Someone fed my essays into GPT" in ideas.sections[0].text
    tenk = "\n".join(s.text for s in _parsed(docs, "example-10k-1p.html").sections)
    assert "Galaxy Gaming, Inc." in tenk and "Nevada | 20-8143439" in tenk
    table = _parsed(docs, "simple-table.md").sections[0]
    assert table.text == "Item | Price | # In stock\nJuicy Apples | 1.99 | 739\nBananas | 1.89 | 6"
    assert [n for _, n in table.row_starts] == [2, 3]  # the header line is row 1
    spec = _parsed(docs, "commonmark-spec.md")
    assert len({s.heading_path for s in spec.sections}) > 20
    assert any(len(s.heading_path) >= 2 for s in spec.sections)


def test_text_files(docs) -> None:
    assert _parsed(docs, "norwich-city.txt").sections[0].text.startswith("Iwan Roberts")
    assert "CHAPTER I" in _parsed(docs, "book-war-and-peace-1p.txt").sections[0].text
