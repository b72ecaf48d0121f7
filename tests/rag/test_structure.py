"""Structure at ingestion: PDF tables as rows of cells, wrapped lines re-joined, list items and
``key: value`` lines kept whole (fixtures generated here)."""

from __future__ import annotations

from services.rag.documents import Section
from services.rag.ingest.chunking import ChunkerConfig, chunk_sections
from services.rag.ingest.formats import FileType
from services.rag.ingest.parsers import ParseLimits, parse
from services.rag.ingest.parsers.reflow import reflow
from tests.rag.layout_pdf import Rule, Text, layout_pdf, lines_at

LIMITS = ParseLimits()

_OFFENSES = [
    ("Driving under the influence", "87,232", "58,068"),
    ("Liquor laws", "41,110", "29,350"),
    ("Drunkenness", "23,468", "17,972"),
    ("Disorderly conduct", "110,415", "73,064"),
    ("Vagrancy", "1,851", "1,389"),
]


def _rows(section: Section) -> dict[int, str]:
    lines = {}
    for offset, number in section.row_starts:
        end = section.text.find("\n", offset)
        lines[number] = section.text[offset : end if end >= 0 else None]
    return lines


def _leader_table_pdf() -> bytes:
    items: list[Text | Rule] = lines_at(72, 80, ["Table 4. Arrests by offense charged, 2019"])
    items += [Text(72, 120, "Offense charged"), Text(380, 120, "Total"), Text(460, 120, "Under 18")]
    for i, (label, total, young) in enumerate(_OFFENSES):
        y = 140 + 14 * i
        items += [Text(72, y, f"{label} " + "." * (60 - 2 * len(label) // 2)), Text(380, y, total), Text(460, y, young)]
    items += lines_at(72, 240, ["Figures exclude arrests for traffic offenses, which are counted apart in the",
                                "annual series of the bureau."])
    return layout_pdf([items])


def _ruled_table_pdf() -> bytes:
    header = ("Port", "Vessels", "Tonnage")
    body = [("Halifax", "1,204", "8.1"), ("Saint John", "877", "5.9"), ("Sydney", "312", "1.2")]
    xs, top, step = (72, 200, 300, 400), 150, 20
    items: list[Text | Rule] = lines_at(72, 100, ["Harbour traffic in the last season is shown below."])
    for r in range(len(body) + 2):
        items.append(Rule(xs[0], top + r * step, xs[-1], top + r * step))
    for x in xs:
        items.append(Rule(x, top, x, top + (len(body) + 1) * step))
    for r, row in enumerate([header, *body]):
        for c, cell in enumerate(row):
            items.append(Text(xs[c] + 4, top + r * step + 14, cell))
    items += lines_at(72, 260, ["Tonnage is in millions of tonnes."])
    return layout_pdf([items])


class TestPdfTables:
    def test_leader_dot_rows_keep_their_label_with_their_numbers(self) -> None:
        parsed = parse(_leader_table_pdf(), FileType.PDF, LIMITS)
        tables = [s for s in parsed.sections if s.row_starts]
        assert len(tables) == 1 and tables[0].page == 1
        assert tables[0].heading_path == ("Table 4. Arrests by offense charged, 2019",)  # its caption
        rows = _rows(tables[0])
        assert tables[0].text.startswith("Offense charged | Total | Under 18\n")  # the header line
        assert [rows[n] for n in range(2, 7)] == [" | ".join(row) for row in _OFFENSES]
        prose = [s.text for s in parsed.sections if not s.row_starts]
        assert prose[0] == "Table 4. Arrests by offense charged, 2019"  # the caption stays before the table
        assert prose[-1].startswith("Figures exclude arrests for traffic offenses, which are counted apart in the annual")

    def test_ruled_table_cells_and_reading_order(self) -> None:
        parsed = parse(_ruled_table_pdf(), FileType.PDF, LIMITS)
        texts = [s.text for s in parsed.sections]
        assert texts[0] == "Harbour traffic in the last season is shown below."
        assert texts[1] == "Port | Vessels | Tonnage\nHalifax | 1,204 | 8.1\nSaint John | 877 | 5.9\nSydney | 312 | 1.2"
        assert [n for _, n in parsed.sections[1].row_starts] == [2, 3, 4]  # the header is row 1
        assert texts[2] == "Tonnage is in millions of tonnes."

    def test_every_chunk_of_a_long_pdf_table_repeats_the_header(self) -> None:
        parsed = parse(_leader_table_pdf(), FileType.PDF, ParseLimits(table_block_chars=110))
        tables = [s for s in parsed.sections if s.row_starts]
        assert len(tables) >= 2
        spans = chunk_sections(tables, ChunkerConfig(size=200, overlap=0))
        for span in spans:
            text = tables[span.section_index].text[span.start : span.end]
            assert text.startswith("Offense charged | Total | Under 18\n")
            assert span.row_start >= 2 and span.row_end >= span.row_start
        rows = [n for t in tables for _, n in t.row_starts if n > 1]
        assert rows == [2, 3, 4, 5, 6]

    def test_two_columns_of_prose_are_not_a_table(self) -> None:
        left = ["Open-domain question answering relies on", "efficient passage retrieval to select the",
                "candidate contexts where sparse vector", "space models such as TF-IDF are used."]
        right = ["Retrieval in open-domain QA is usually", "implemented using TF-IDF or BM25, which",
                 "matches keywords with an inverted index", "and can be seen as a sparse model."]
        data = layout_pdf([lines_at(72, 100, left) + lines_at(320, 100, right)])
        parsed = parse(data, FileType.PDF, LIMITS)
        assert not any(s.row_starts for s in parsed.sections)


class TestReflow:
    def test_wrapped_and_hyphenated_lines_are_rejoined_and_bullets_kept(self) -> None:
        prose = lines_at(72, 100, [
            "The committee met on Tuesday to review the proposed amend-",
            "ments to the harbour regulations and heard from the public",
            "about the new mooring fees. Comments may be sent to:",
            "\u2022 Fax: 202-493-2251",
            "\u2022 Mail: Docket Operations, 1200 New Jersey Avenue SE",
            "Phone: 1-800-661-2638",
            "The meeting closed at noon after a vote on the final text of",
            "the notice.",
        ])
        section = parse(layout_pdf([prose]), FileType.PDF, LIMITS).sections[0]
        assert section.text.splitlines() == [
            "The committee met on Tuesday to review the proposed amendments to the harbour regulations and heard "
            "from the public about the new mooring fees. Comments may be sent to:",
            "\u2022 Fax: 202-493-2251",
            "\u2022 Mail: Docket Operations, 1200 New Jersey Avenue SE",
            "Phone: 1-800-661-2638",
            "The meeting closed at noon after a vote on the final text of the notice.",
        ]
        # The bullet line is one unit for the chunker too: a chunk boundary never cuts it.
        for size in (60, 90, 120, 150):
            spans = chunk_sections([section], ChunkerConfig(size=size, overlap=0))
            chunks = [section.text[s.start : s.end] for s in spans]
            assert any("Fax: 202-493-2251" in chunk for chunk in chunks), size

    def test_soft_hyphens_and_private_bullets(self) -> None:
        text = "A long line of running text that fills the column and is then cut in the mid\ufffe\ndle of a word.\n\uf0b7 Proposal of options"
        assert reflow(text) == "A long line of running text that fills the column and is then cut in the middle of a word.\n• Proposal of options"

    def test_short_lines_stay_lines(self) -> None:
        text = "May 5, 2023\nTo Whom it May Concern:\nThere were 200 laptops delivered on January 23, 2023, after a delay of a\nweek. Thanks.\nBest Regards,\nMallori"
        assert reflow(text).splitlines() == [
            "May 5, 2023", "To Whom it May Concern:",
            "There were 200 laptops delivered on January 23, 2023, after a delay of a week. Thanks.",
            "Best Regards,", "Mallori",
        ]


class TestOtherFormatsTables:
    def test_a_long_docx_table_is_cut_into_blocks_that_repeat_the_header(self) -> None:
        import io

        import docx

        document = docx.Document()
        document.add_heading("Fleet", level=1)
        document.add_paragraph("Every vessel registered in the harbour.")
        table = document.add_table(rows=41, cols=3)
        for r in range(41):
            for c, value in enumerate(("Vessel", "Length", "Owner") if r == 0 else (f"Boat {r}", f"{10 + r} m", f"Owner {r}")):
                table.cell(r, c).text = value
        out = io.BytesIO()
        document.save(out)
        parsed = parse(out.getvalue(), FileType.DOCX, ParseLimits(table_block_chars=300))
        blocks = [s for s in parsed.sections if s.row_starts]
        assert len(blocks) >= 3 and all(s.heading_path == ("Fleet",) for s in blocks)
        assert all(s.text.startswith("Vessel | Length | Owner\n") for s in blocks)
        assert [n for s in blocks for _, n in s.row_starts] == list(range(2, 42))
        assert _rows(blocks[0])[2] == "Boat 1 | 11 m | Owner 1"
        assert parsed.sections[0].text == "Fleet\n\nEvery vessel registered in the harbour."

    def test_a_long_html_table_is_cut_into_blocks_that_repeat_the_header(self) -> None:
        rows = "".join(f"<tr><td>Boat {r}</td><td>{10 + r}</td></tr>" for r in range(1, 40))
        html = f"<html><body><h1>Fleet</h1><table><tr><th>Vessel</th><th>Length</th></tr>{rows}</table></body></html>"
        parsed = parse(html.encode(), FileType.HTML, ParseLimits(table_block_chars=200))
        blocks = [s for s in parsed.sections if s.row_starts]
        assert len(blocks) >= 3 and all(s.text.startswith("Vessel | Length\n") for s in blocks)
        assert [n for s in blocks for _, n in s.row_starts] == list(range(2, 41))

    def test_markdown_table_cells(self) -> None:
        source = "# Stock\n\n| Item | Price |\n|---|---:|\n| Juicy Apples | 1.99 |\n| Bananas | |\n"
        table = parse(source.encode(), FileType.MARKDOWN, LIMITS).sections[-1]
        assert table.text == "Item | Price\nJuicy Apples | 1.99\nBananas |"  # an empty last cell
        assert table.heading_path == ("Stock",)


class TestMojibake:
    def test_double_encoded_utf8_is_repaired_in_every_text_format(self) -> None:
        text = "Le café coûte 3 € — naïve façade, don’t"
        broken = text.encode("utf-8").decode("cp1252")
        assert broken != text
        parsed = parse(broken.encode("utf-8"), FileType.TEXT, LIMITS)
        assert parsed.sections[0].text == text
        html = f"<html><body><p>{broken}</p><table><tr><td>{broken}</td><td>1</td></tr></table></body></html>"
        sections = parse(html.encode("utf-8"), FileType.HTML, LIMITS).sections
        assert sections[0].text == f"{text}\n\n{text} | 1"

    def test_clean_text_is_left_alone(self) -> None:
        text = "Déjà vu — naïve façade, garçon. Straße, Ærøskøbing, Ελληνικά, 東京."
        assert parse(text.encode("utf-8"), FileType.TEXT, LIMITS).sections[0].text == text


def test_rows_of_numbers_are_never_joined() -> None:
    """Table rows the finder did not see (OCR text, say) stay one row a line, whatever their length."""
    text = ("Processing | total chunks | mean chunks per document (std)\nBase 128 | 64,058 800.73 (484.11) N/A\n"
            "Base 256 | 32,051 400.64 (242.04) N/A\nChipper 20,843 260.57 (145.80) 96.20 (57.53)")
    assert reflow(text).splitlines() == text.splitlines()


def test_a_page_the_table_finder_cannot_read_keeps_its_text(monkeypatch) -> None:
    from services.rag.ingest.parsers.pdf import layout

    def broken(*args, **kwargs):
        raise RuntimeError("finder bug (injected)")

    monkeypatch.setattr(layout, "find_tables", broken)
    parsed = parse(_leader_table_pdf(), FileType.PDF, LIMITS)
    assert not any(s.row_starts for s in parsed.sections)
    assert "Driving under the influence" in parsed.sections[0].text and "87,232" in parsed.sections[0].text


def _tsv(words: list[tuple[int, int, int, int, int, str]]) -> str:
    """Tesseract TSV rows (level 5: words) from (block, line, left, top, width, text) tuples; height 30."""
    head = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"
    rows = [f"5\t1\t{b}\t1\t{ln}\t{i}\t{x}\t{y}\t{w}\t30\t95\t{t}" for i, (b, ln, x, y, w, t) in enumerate(words)]
    return "\n".join([head, *rows]) + "\n"


def test_an_ocr_table_comes_out_as_rows_of_cells() -> None:
    from services.rag.ingest.ocr_layout import text_from_tsv

    words = [(1, 1, 100, 50, 300, "Harbour"), (1, 1, 420, 50, 200, "report")]
    table = [("Port", "Vessels", "Tonnage"), ("Halifax", "1,204", "8.1"), ("Saint", "877", "5.9"), ("Sydney", "312", "1.2")]
    for r, row in enumerate(table):
        for c, cell in enumerate(row):
            words.append((2, r + 1, 100 + 400 * c, 200 + 50 * r, 150, cell))
    words.append((3, 1, 100, 500, 400, "Figures"))
    words.append((3, 1, 520, 500, 200, "rounded."))
    text = text_from_tsv(_tsv(words))
    assert text == ("Harbour report\n\nPort | Vessels | Tonnage\nHalifax | 1,204 | 8.1\nSaint | 877 | 5.9\n"
                    "Sydney | 312 | 1.2\n\nFigures rounded.")
    from services.rag.ingest.parsers.tables import inline_row_starts

    starts = inline_row_starts(text)
    assert [n for _, n in starts] == [1, 2, 3, 4]
    assert text[starts[1][0]:].startswith("Halifax | 1,204 | 8.1\n")


def test_ocr_prose_keeps_tesseract_lines_and_paragraphs() -> None:
    from services.rag.ingest.ocr_layout import text_from_tsv

    words = [(1, 1, 100, 50, 100, "Dear"), (1, 1, 210, 50, 100, "pilots,"), (2, 1, 100, 150, 100, "The"),
             (2, 1, 210, 150, 100, "fees"), (2, 2, 100, 200, 100, "start"), (2, 2, 210, 200, 100, "Monday.")]
    assert text_from_tsv(_tsv(words)) == "Dear pilots,\n\nThe fees\nstart Monday."
