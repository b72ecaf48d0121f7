"""Cited spans located on their page: PDFium's character boxes for a PDF's text and table cells, Tesseract's
word boxes for a scan. The PDFs and scans are generated here, parsed by the real parsers, and the span is a
slice of the parsed text, as a citation's offsets are."""

from __future__ import annotations

import io
import threading

import pytest
from PIL import Image, ImageDraw, ImageFont

from services.rag.ingest.formats import FileType
from services.rag.ingest.ocr import OcrConfig, reader_from
from services.rag.ingest.parsers import ParseLimits, parse
from services.rag.viewing.span_boxes import OcrWords, SpanLocator, locate, match_row, normalise, words_from_tsv
from tests.rag.layout_pdf import Rule, Text, layout_pdf, lines_at

ROWS = [("Port", "Vessels", "Tonnage"), ("Halifax", "1,204", "8.1"), ("Saint John", "877", "5.9"),
        ("Sydney", "312", "1.2")]
COLUMNS = (72, 200, 300, 400)
TOP, STEP = 150, 20


def ruled_table_pdf() -> bytes:
    items: list[Text | Rule] = lines_at(72, 100, ["Harbour traffic in the last season is shown below."])
    for r in range(len(ROWS) + 1):
        items.append(Rule(COLUMNS[0], TOP + r * STEP, COLUMNS[-1], TOP + r * STEP))
    for x in COLUMNS:
        items.append(Rule(x, TOP, x, TOP + len(ROWS) * STEP))
    for r, row in enumerate(ROWS):
        for c, cell in enumerate(row):
            items.append(Text(COLUMNS[c] + 4, TOP + r * STEP + 14, cell))
    items += lines_at(72, 260, ["Tonnage is in millions of tonnes."])
    return layout_pdf([items])


def scanned_table_pdf() -> bytes:
    """A 200 dpi page image (no text layer) of a sentence and the same table, columns at fixed x."""
    image = Image.new("L", (1700, 2200), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=40)
    draw.text((150, 200), "Harbour traffic in the last season is shown below.", font=font, fill=0)
    for r, row in enumerate(ROWS):
        for c, cell in enumerate(row):
            draw.text((150 + 450 * c, 400 + 80 * r), cell, font=font, fill=0)
    out = io.BytesIO()
    image.save(out, "PDF", resolution=200)
    return out.getvalue()


def section_with(parsed, needle: str):
    return next(s for s in parsed.sections if needle in s.text)


@pytest.fixture(scope="module")
def locator() -> SpanLocator:
    ocr = OcrWords()
    if not ocr.available:
        pytest.fail("Tesseract must be installed for these tests (make setup installs it)")
    return SpanLocator(ocr, 200, threading.Lock())


def test_a_table_cell_of_a_pdf_is_boxed_where_the_pdf_draws_it(locator):
    data = ruled_table_pdf()
    parsed = parse(data, FileType.PDF, ParseLimits())
    section = section_with(parsed, "Saint John | 877")
    start = section.text.index("Saint John | 877 | 5.9")
    span = section.text[start:start + len("Saint John | 877 | 5.9")]
    source, words = locator.page_words("t/table", data, "pdf", 1)
    assert source == "pdfium"
    found = locate(words, span, "877", source)
    assert (found.words_found, found.words_total) == (4, 4)
    answer = [b for b in found.boxes if b.answer]
    assert len(answer) == 1
    x, baseline = (COLUMNS[1] + 4) / 612, (TOP + 2 * STEP + 14) / 792
    box = answer[0]
    assert box.x0 == pytest.approx(x, abs=0.01) and box.y0 < baseline <= box.y1 + 0.005
    assert box.x1 < COLUMNS[2] / 612  # the cell, not the row
    rest = [b for b in found.boxes if not b.answer]
    assert {round(b.y0, 3) for b in rest} == {round(box.y0, 3)}  # the row's other cells, on the same line
    assert min(b.x0 for b in rest) == pytest.approx((COLUMNS[0] + 4) / 612, abs=0.01)


def test_prose_is_boxed_line_by_line(locator):
    data = ruled_table_pdf()
    parsed = parse(data, FileType.PDF, ParseLimits())
    text = parsed.sections[0].text
    _, words = locator.page_words("t/table", data, "pdf", 1)
    found = locate(words, text, "last season", "pdfium")
    assert found.words_found == found.words_total == 9
    assert [b.answer for b in found.boxes] == [False, True, False]  # before, the answer, after: one line
    assert found.boxes[1].x0 > found.boxes[0].x1 - 0.001


def test_a_scanned_table_cell_is_boxed_from_tesseracts_words(locator):
    data = scanned_table_pdf()
    parsed = parse(data, FileType.PDF, ParseLimits(), reader_from(OcrConfig()))
    section = section_with(parsed, "877")
    line = next(text for text in section.text.splitlines() if "877" in text)
    start = section.text.index(line)
    source, words = locator.page_words("t/scan", data, "pdf", 1)
    assert source == "tesseract"
    answer_at = line.index("877")
    found = locate(words, section.text[start:start + len(line)], line[answer_at:answer_at + 3], source)
    assert found.words_found >= 3
    answer = [b for b in found.boxes if b.answer]
    assert len(answer) == 1
    # Drawn at x 600 px, row 3's text from y 560 px, on a 1700 x 2200 px page.
    assert answer[0].x0 == pytest.approx(600 / 1700, abs=0.02)
    assert answer[0].y0 == pytest.approx(560 / 2200, abs=0.02)
    assert all(abs(b.y0 - answer[0].y0) < 0.02 for b in found.boxes)


def test_an_ocr_page_is_read_once(locator, monkeypatch):
    data = scanned_table_pdf()
    calls = []
    read = locator._ocr.read
    monkeypatch.setattr(locator._ocr, "read", lambda image, dpi=0: calls.append(1) or read(image, dpi))
    locator.page_words("t/once", data, "pdf", 1)
    locator.page_words("t/once", data, "pdf", 1)
    assert len(calls) == 1


def test_a_row_is_found_on_one_line_whatever_the_order_of_the_words():
    # Column-major order (as OCR may read a table), with "877" also on another line.
    tsv = "\n".join(["level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"]
                    + [f"5\t1\t1\t1\t1\t1\t{x}\t{y}\t80\t30\t95\t{t}" for x, y, t in [
                        (100, 100, "Halifax"), (100, 200, "Saint"), (190, 200, "John"), (400, 100, "877"),
                        (400, 200, "877"), (700, 100, "8.1"), (700, 200, "5.9")]])
    words = words_from_tsv(tsv, 1000, 1000)
    cells = [[normalise(w) for w in c.split()] for c in ("Saint John", "877", "5.9")]
    picked = match_row(words, cells)
    assert [[words[i].text for i in cell] for cell in picked] == [["Saint", "John"], ["877"], ["5.9"]]
    assert all(abs(words[i].y0 - 0.2) < 1e-9 for cell in picked for i in cell)


def test_a_span_that_is_not_on_the_page_has_no_boxes():
    tsv = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n" \
          "5\t1\t1\t1\t1\t1\t10\t10\t50\t20\t95\tHello"
    found = locate(words_from_tsv(tsv, 100, 100), "an entirely different sentence here", "", "tesseract")
    assert found.boxes == () and found.source == ""
