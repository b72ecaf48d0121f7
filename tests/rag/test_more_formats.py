"""PPTX, XLS, ODT, ODS, EPUB, EML and RTF: parsed into sections with provenance, refused clearly
when broken (fixtures generated here)."""

from __future__ import annotations

import io
from email.message import EmailMessage

import grpc
import pytest

from services.rag.ingest.chunking import ChunkerConfig, chunk_sections
from services.rag.ingest.formats import FileType, detect_type, validate_upload
from services.rag.ingest.parsers import ParseLimits, parse
from services.runtime.errors import DomainError
from tests.rag.factories import make_docx, with_bomb

LIMITS = ParseLimits()


def _error(data: bytes, file_type: FileType, limits: ParseLimits = LIMITS) -> DomainError:
    with pytest.raises(DomainError) as caught:
        parse(data, file_type, limits)
    return caught.value


def _rows(section) -> dict[int, str]:
    lines = {}
    for offset, number in section.row_starts:
        end = section.text.find("\n", offset)
        lines[number] = section.text[offset : end if end >= 0 else None]
    return lines


def make_pptx() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Harbour budget"
    slide.placeholders[1].text_frame.text = "Dredging costs rose by a third."
    slide.notes_slide.notes_text_frame.text = "Mention the storm in March."
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Fees"
    table = second.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(2)).table
    for r, row in enumerate([("Vessel", "Fee"), ("Ferry", "120"), ("Yacht", "45")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def make_xls() -> bytes:
    import xlwt

    book = xlwt.Workbook()
    sheet = book.add_sheet("Tides")
    for r, row in enumerate([("Port", "High water", "Metres"), ("Dover", "06:12", 6.4), ("Calais", "06:40", 7)]):
        for c, value in enumerate(row):
            sheet.write(r, c, value)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def make_odt() -> bytes:
    from odf.opendocument import OpenDocumentText
    from odf.table import Table, TableCell, TableRow
    from odf.text import H, List, ListItem, P

    doc = OpenDocumentText()
    doc.text.addElement(H(outlinelevel=1, text="Annual report"))
    doc.text.addElement(P(text="Revenue grew by twelve percent."))
    items = List()
    for item in ("Fax: 202-493-2251", "Phone: 1-800-661-2638"):
        entry = ListItem()
        entry.addElement(P(text=item))
        items.addElement(entry)
    doc.text.addElement(items)
    doc.text.addElement(H(outlinelevel=2, text="Regions"))
    table = Table(name="Regions")
    for row in [("Region", "Revenue"), ("North", "120")]:
        tr = TableRow()
        for value in row:
            cell = TableCell()
            cell.addElement(P(text=value))
            tr.addElement(cell)
        table.addElement(tr)
    doc.text.addElement(table)
    out = io.BytesIO()
    doc.write(out)
    return out.getvalue()


def make_ods(repeated_rows: int = 1) -> bytes:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    doc = OpenDocumentSpreadsheet()
    table = Table(name="Cups")
    for row in [("Team", "Cups"), ("Maple Leafs", "13"), ("Canadiens", "24")]:
        tr = TableRow()
        for value in row:
            cell = TableCell(valuetype="string")
            cell.addElement(P(text=value))
            tr.addElement(cell)
        table.addElement(tr)
    # What spreadsheet programs write at the end of a sheet: a million empty rows, once.
    filler = TableRow(numberrowsrepeated=repeated_rows)
    filler.addElement(TableCell(numbercolumnsrepeated=1024))
    table.addElement(filler)
    doc.spreadsheet.addElement(table)
    out = io.BytesIO()
    doc.write(out)
    return out.getvalue()


def make_epub() -> bytes:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("harbour-tales")
    book.set_title("Harbour Tales")
    book.set_language("en")
    chapters = []
    for n, (title, body) in enumerate([("The ferry", "The ferry leaves at noon."), ("The storm", "It rained for a week.")], 1):
        chapter = epub.EpubHtml(title=title, file_name=f"c{n}.xhtml", lang="en")
        chapter.content = f"<html><body><h1>{title}</h1><p>{body}</p></body></html>"
        book.add_item(chapter)
        chapters.append(chapter)
    book.toc = tuple(chapters)
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *chapters]
    out = io.BytesIO()
    epub.write_epub(out, book)
    return out.getvalue()


def make_eml() -> bytes:
    message = EmailMessage()
    message["From"] = "Harbour Office <office@harbour.example>"
    message["To"] = "pilots@harbour.example"
    message["Subject"] = "New mooring fees"
    message["Date"] = "Tue, 01 Dec 2026 09:00:00 +0000"
    message.set_content("Dear pilots,\n\nThe new fees start on Monday.\nFax: 202-493-2251\n")
    message.add_attachment(b"Vessel,Fee\nFerry,120\nYacht,45\n", maintype="text", subtype="csv", filename="fees.csv")
    message.add_attachment(make_docx(), maintype="application",
                           subtype="vnd.openxmlformats-officedocument.wordprocessingml.document", filename="report.docx")
    message.add_attachment(b"not a pdf at all", maintype="application", subtype="pdf", filename="broken.pdf")
    return message.as_bytes()


RTF = (rb"{\rtf1\ansi\deff0{\fonttbl{\f0 Times;}}\f0\fs24 Harbour notice\par "
       rb"The caf\'e9 opens at six.\par Fax: 202-493-2251\par }")


class TestPptx:
    def test_slides_are_pages_with_titles_tables_and_notes(self) -> None:
        parsed = parse(make_pptx(), FileType.PPTX, LIMITS)
        assert parsed.page_count == 2 and parsed.title == "Harbour budget"
        first, second = parsed.sections
        assert (first.page, first.heading_path) == (1, ("Harbour budget",))
        assert "Dredging costs rose by a third." in first.text
        assert first.text.endswith("Speaker notes: Mention the storm in March.")
        assert (second.page, second.heading_path) == (2, ("Fees",))
        assert _rows(second) == {1: "Vessel | Fee", 2: "Ferry | 120", 3: "Yacht | 45"}

    def test_zip_bomb_and_wrong_archive(self) -> None:
        assert _error(with_bomb(make_pptx()), FileType.PPTX).reason == "ARCHIVE_COMPRESSION_RATIO"
        error = _error(make_docx(), FileType.PPTX)
        assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "CORRUPT_FILE")


class TestXls:
    def test_sheet_rows_and_header(self) -> None:
        parsed = parse(make_xls(), FileType.XLS, LIMITS)
        assert parsed.sheet_names == ("Tides",)
        section = parsed.sections[0]
        assert section.sheet_name == "Tides"
        assert section.text == "Port | High water | Metres\nDover | 06:12 | 6.4\nCalais | 06:40 | 7"
        assert [n for _, n in section.row_starts] == [2, 3]

    def test_corrupt_and_cell_limit(self) -> None:
        data = make_xls()
        assert _error(data[:600], FileType.XLS).reason == "CORRUPT_FILE"
        error = _error(data, FileType.XLS, ParseLimits(max_sheet_cells=4))
        assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "SPREADSHEET_TOO_LARGE")


class TestOpenDocument:
    def test_odt_headings_list_items_and_tables(self) -> None:
        parsed = parse(make_odt(), FileType.ODT, LIMITS)
        by_path = {s.heading_path: s for s in parsed.sections}
        report = by_path[("Annual report",)].text
        assert report == "Annual report\n\nRevenue grew by twelve percent.\n\n• Fax: 202-493-2251\n\n• Phone: 1-800-661-2638"
        assert _rows(by_path[("Annual report", "Regions")]) == {1: "Region | Revenue", 2: "North | 120"}
        assert parsed.title == "Annual report"

    def test_ods_sheets_and_a_million_empty_rows(self) -> None:
        parsed = parse(make_ods(repeated_rows=1_048_000), FileType.ODS, LIMITS)
        assert parsed.sheet_names == ("Cups",)
        assert parsed.sections[0].text == "Team | Cups\nMaple Leafs | 13\nCanadiens | 24"
        assert [n for _, n in parsed.sections[0].row_starts] == [2, 3]

    def test_ods_that_is_not_an_opendocument(self) -> None:
        assert _error(make_docx(), FileType.ODS).reason == "CORRUPT_FILE"


class TestEpub:
    def test_chapters_in_spine_order_as_pages(self) -> None:
        parsed = parse(make_epub(), FileType.EPUB, LIMITS)
        assert parsed.title == "Harbour Tales" and parsed.page_count == 2
        assert [(s.page, s.heading_path, s.text) for s in parsed.sections] == [
            (1, ("The ferry",), "The ferry\n\nThe ferry leaves at noon."),
            (2, ("The storm",), "The storm\n\nIt rained for a week."),
        ]

    def test_a_zip_without_container(self) -> None:
        assert _error(make_docx(), FileType.EPUB).reason == "CORRUPT_FILE"


class TestEml:
    def test_headers_body_and_attachments(self) -> None:
        parsed = parse(make_eml(), FileType.EML, LIMITS)
        assert parsed.title == "New mooring fees"
        body = parsed.sections[0]
        assert body.heading_path == ("New mooring fees",)
        assert body.text.startswith("From: Harbour Office <office@harbour.example>\nTo: pilots@harbour.example\n")
        assert "Fax: 202-493-2251" in body.text
        fees = next(s for s in parsed.sections if s.heading_path == ("Attachment: fees.csv",))
        assert fees.text == "Vessel | Fee\nFerry | 120\nYacht | 45" and [n for _, n in fees.row_starts] == [2, 3]
        report = [s for s in parsed.sections if s.heading_path[:1] == ("Attachment: report.docx",)]
        assert any("North | 120 | 15%" in s.text for s in report)
        skipped = parsed.sections[-1]
        assert skipped.heading_path == ("Attachments",) and "broken.pdf" in skipped.text

    def test_not_an_email(self) -> None:
        error = _error(b"just some words\nwithout headers\n", FileType.EML)
        assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "CORRUPT_FILE")


class TestRtf:
    def test_text_and_code_page_escapes(self) -> None:
        parsed = parse(RTF, FileType.RTF, LIMITS)
        assert parsed.sections[0].text.splitlines() == ["Harbour notice", "The café opens at six.", "Fax: 202-493-2251"]
        assert parsed.title == "Harbour notice"

    def test_signature(self) -> None:
        with pytest.raises(DomainError) as caught:
            validate_upload("notice.rtf", "", b"plain words", 1 << 20)
        assert caught.value.reason == "CORRUPT_FILE"


@pytest.mark.parametrize(
    ("filename", "content_type", "expected"),
    [
        ("deck.pptx", "", FileType.PPTX), ("old.xls", "", FileType.XLS), ("a.odt", "", FileType.ODT),
        ("b.ods", "", FileType.ODS), ("book.epub", "", FileType.EPUB), ("mail.eml", "", FileType.EML),
        ("n.rtf", "", FileType.RTF), ("upload", "message/rfc822", FileType.EML), ("upload", "text/rtf", FileType.RTF),
        ("upload", "application/vnd.ms-excel", FileType.XLS),
    ],
)
def test_types_are_detected(filename: str, content_type: str, expected: FileType) -> None:
    assert detect_type(filename, content_type) is expected


@pytest.mark.parametrize(
    ("make", "name"),
    [(make_pptx, "deck.pptx"), (make_xls, "t.xls"), (make_odt, "r.odt"), (make_ods, "c.ods"), (make_epub, "b.epub"),
     (make_eml, "m.eml"), (lambda: RTF, "n.rtf")],
)
def test_every_new_format_is_validated_parsed_and_chunked_with_provenance(make, name: str) -> None:
    upload = validate_upload(name, "", make(), 1 << 24)
    parsed = parse(upload.data, upload.file_type, LIMITS)
    spans = chunk_sections(parsed.sections, ChunkerConfig(size=120, overlap=20))
    assert spans
    for span in spans:
        section = parsed.sections[span.section_index]
        assert section.text[span.start : span.end].strip()
        assert span.row_end >= span.row_start
    has_tables = not name.endswith((".epub", ".rtf"))
    assert any(span.row_start >= 1 for span in spans) == has_tables
    paged = name.endswith((".pptx", ".epub"))
    assert all(s.page >= 1 for s in parsed.sections) == paged
