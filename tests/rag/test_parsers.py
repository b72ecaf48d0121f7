"""One test class per format, on documents the tests generate."""

from __future__ import annotations

import io
import pathlib
import subprocess
import sys
import time
import zipfile

import grpc
import pytest

from services.rag.ingest.formats import FileType
from services.rag.ingest.parsers import ParseLimits, parse
from services.runtime.errors import DomainError

from .factories import (
    make_docx,
    make_pdf,
    make_xlsx,
    rewrite_member,
    with_absurd_dimensions,
    with_bomb,
    with_parts_at_root,
)

LIMITS = ParseLimits()


def _error(data: bytes, file_type: FileType, limits: ParseLimits = LIMITS) -> DomainError:
    with pytest.raises(DomainError) as caught:
        parse(data, file_type, limits)
    return caught.value


def _row_lines(section) -> dict[int, str]:
    lines = {}
    for offset, number in section.row_starts:
        end = section.text.find("\n", offset)
        lines[number] = section.text[offset : end if end >= 0 else None]
    return lines


class TestPdf:
    def test_text_page_by_page(self) -> None:
        data = make_pdf([["Alpha page one.", "Second line."], [], ["Gamma page three."]])
        parsed = parse(data, FileType.PDF, LIMITS)
        assert parsed.page_count == 3
        assert [s.page for s in parsed.sections] == [1, 3]  # the empty page has no section
        assert parsed.sections[0].text == "Alpha page one.\nSecond line."
        assert parsed.sections[1].text == "Gamma page three."

    def test_encrypted_with_user_password_is_failed_precondition(self) -> None:
        error = _error(make_pdf([["secret"]], user_password="u", owner_password="o"), FileType.PDF)
        assert (error.code, error.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "ENCRYPTED_PDF")
        assert "encrypted" in error.message

    def test_owner_password_only_is_readable(self) -> None:
        parsed = parse(make_pdf([["Readable without a password."]], owner_password="o"), FileType.PDF, LIMITS)
        assert parsed.sections[0].text == "Readable without a password."

    def test_no_text_layer(self) -> None:
        error = _error(make_pdf([[], []]), FileType.PDF)
        assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "NO_EXTRACTABLE_TEXT")
        assert "no extractable text" in error.message

    def test_corrupt(self) -> None:
        error = _error(b"%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage", FileType.PDF)
        assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "CORRUPT_FILE")

    def test_truncated(self) -> None:
        data = make_pdf([["Some text"]])
        error = _error(data[: len(data) // 3], FileType.PDF)
        assert error.reason == "CORRUPT_FILE"

    def test_page_limit(self) -> None:
        error = _error(make_pdf([["a"], ["b"], ["c"]]), FileType.PDF, ParseLimits(max_pages=2))
        assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "TOO_MANY_PAGES")


class TestDocx:
    def test_headings_paragraphs_tables_and_margins(self) -> None:
        parsed = parse(make_docx(), FileType.DOCX, LIMITS)
        by_path = {s.heading_path: s for s in parsed.sections}
        assert by_path[("Header",)].text == "ACME Corporation confidential"
        assert by_path[("Footer",)].text == "Page footer text"
        assert by_path[("Annual Report",)].text.startswith("Annual Report\n\nRevenue grew")
        regional = by_path[("Annual Report", "Regional results")]
        assert _row_lines(regional) == {1: "Region | Revenue | Growth", 2: "North | 120 | 15%", 3: "South | 95 | 8%"}
        assert ("Outlook",) in by_path  # a level-1 heading closes the level-2 path
        assert parsed.title == "Annual Report"
        assert parsed.sections[0].heading_path == ("Header",) and parsed.sections[-1].heading_path == ("Footer",)

    def test_zip_bomb_is_refused_before_inflating(self) -> None:
        error = _error(with_bomb(make_docx()), FileType.DOCX)
        assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "ARCHIVE_COMPRESSION_RATIO")

    def test_total_uncompressed_limit(self) -> None:
        error = _error(make_docx(), FileType.DOCX, ParseLimits(max_unzipped_bytes=10_000))
        assert error.reason == "ARCHIVE_TOO_LARGE"

    def test_corrupt_zip(self) -> None:
        error = _error(b"PK\x03\x04" + b"\x00" * 200, FileType.DOCX)
        assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "CORRUPT_FILE")

    def test_a_zip_that_is_not_a_docx(self) -> None:
        error = _error(make_xlsx({"S": [["a"]]}), FileType.DOCX)
        assert error.reason == "CORRUPT_FILE" and "/xl/workbook.xml is not a DOCX document" in error.message


class TestXlsx:
    def test_every_sheet_with_row_numbers_and_header_repeated(self) -> None:
        rows = [["Team", "City", "Cups"]] + [[f"Team {i}", f"City {i}", i] for i in range(1, 41)]
        data = make_xlsx({"Cups": rows, "Empty": [], "Notes": [["just a note"]]})
        parsed = parse(data, FileType.XLSX, ParseLimits(table_block_chars=200))
        assert parsed.sheet_names == ("Cups", "Empty", "Notes")
        cups = [s for s in parsed.sections if s.sheet_name == "Cups"]
        assert len(cups) > 1
        for block in cups:
            assert block.text.startswith("Team | City | Cups\n")  # the header travels with every block
        numbers = [n for block in cups for _, n in block.row_starts]
        assert numbers == list(range(2, 42))  # source row numbers; the header (row 1) is not a data row
        assert _row_lines(cups[0])[2] == "Team 1 | City 1 | 1"
        notes = [s for s in parsed.sections if s.sheet_name == "Notes"]
        assert [s.text for s in notes] == ["just a note"]

    def test_absurd_declared_dimensions_do_not_allocate(self, tmp_path) -> None:
        """Parsed in a child process whose address space is capped at 1 GiB: allocating the
        declared 1048576 x 1024 grid (or padding rows to 1024 columns) would fail there."""
        path = tmp_path / "bad.xlsx"
        path.write_bytes(with_absurd_dimensions(make_xlsx({"Sheet1": [["PN", "Qty"], ["EP1", 10], ["EP2", 20]]})))
        script = (
            "import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
            "from services.rag.ingest.formats import FileType\n"
            "from services.rag.ingest.parsers import ParseLimits, parse\n"
            "parsed = parse(open(sys.argv[1], 'rb').read(), FileType.XLSX, ParseLimits())\n"
            "print(repr(parsed.sections[0].text))\n"
        )
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120,
                              cwd=pathlib.Path(__file__).resolve().parents[2])
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == repr("PN | Qty\nEP1 | 10\nEP2 | 20")
        assert time.perf_counter() - started < 60

    def test_parts_outside_xl_are_found_through_the_relationships(self) -> None:
        data = with_parts_at_root(make_xlsx({"Bookings": [["BKG_NUM", "CHARGE"], [4894831, "FELONY DUI"]]}))
        assert "xl/workbook.xml" not in zipfile.ZipFile(io.BytesIO(data)).namelist()
        parsed = parse(data, FileType.XLSX, LIMITS)
        assert parsed.sheet_names == ("Bookings",)
        assert "4894831 | FELONY DUI" in parsed.sections[0].text

    def test_a_package_without_its_main_part_is_corrupt(self) -> None:
        data = rewrite_member(make_xlsx({"S": [["a"]]}), "_rels/.rels", lambda xml: xml.replace(b"xl/workbook.xml", b"xl/gone.xml"))
        assert _error(data, FileType.XLSX).reason == "CORRUPT_FILE"

    def test_cell_limit(self) -> None:
        data = make_xlsx({"S": [[i, i + 1, i + 2] for i in range(100)]})
        error = _error(data, FileType.XLSX, ParseLimits(max_sheet_cells=50))
        assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "SPREADSHEET_TOO_LARGE")

    def test_zip_bomb(self) -> None:
        error = _error(with_bomb(make_xlsx({"S": [["a"]]})), FileType.XLSX)
        assert error.reason == "ARCHIVE_COMPRESSION_RATIO"


class TestDelimited:
    def test_semicolons_are_sniffed_and_quoted_fields_kept(self) -> None:
        data = b'name;city;note\nAda;London;"likes; semicolons"\nLinus;Helsinki;kernel\n'
        parsed = parse(data, FileType.CSV, LIMITS)
        section = parsed.sections[0]
        assert section.text == "name | city | note\nAda | London | likes; semicolons\nLinus | Helsinki | kernel"
        assert _row_lines(section) == {2: "Ada | London | likes; semicolons", 3: "Linus | Helsinki | kernel"}

    def test_tsv_and_latin1(self) -> None:
        rows = [("mot", "phrase")] + [("café", "Le café est très bon, déjà servi à la française.")] * 5
        data = "".join(f"{a}\t{b}\n" for a, b in rows).encode("latin-1")
        parsed = parse(data, FileType.TSV, LIMITS)
        assert parsed.sections[0].text.splitlines()[:2] == ["mot | phrase", "café | Le café est très bon, déjà servi à la française."]

    def test_blocks_repeat_the_header(self) -> None:
        data = ("id,value\n" + "".join(f"{i},value number {i}\n" for i in range(1, 101))).encode()
        parsed = parse(data, FileType.CSV, ParseLimits(table_block_chars=300))
        assert len(parsed.sections) > 3
        assert all(s.text.startswith("id | value\n") for s in parsed.sections)
        assert [n for s in parsed.sections for _, n in s.row_starts] == list(range(2, 102))

    def test_header_only(self) -> None:
        parsed = parse(b"a,b,c\n", FileType.CSV, LIMITS)
        assert parsed.sections[0].text == "a | b | c"

    def test_binary_garbage_is_corrupt(self) -> None:
        error = _error(b"\x00\x01\x02\xff\xfe\x00binary" * 50, FileType.CSV)
        assert error.reason == "CORRUPT_FILE"


class TestHtml:
    def test_main_text_headings_and_tables_without_scripts(self) -> None:
        html = b"""<html><head><title>Quarterly</title><style>p{color:red}</style></head><body>
        <nav>Home | About</nav><script>var secret = 1;</script>
        <main><h1>Results</h1><p>Sales rose <b>sharply</b> this quarter.</p>
        <h2>By region</h2><table><tr><th>Region</th><th>Sales</th></tr><tr><td>North</td><td>10</td></tr></table>
        <h1>Risks</h1><ul><li>Supply</li><li>Rates</li></ul></main><footer>ignored?</footer></body></html>"""
        parsed = parse(html, FileType.HTML, LIMITS)
        assert parsed.title == "Quarterly"
        text = "\n".join(s.text for s in parsed.sections)
        assert "secret" not in text and "color" not in text and "Home" not in text
        by_path = {s.heading_path: s for s in parsed.sections}
        assert by_path[("Results",)].text == "Results\n\nSales rose sharply this quarter."
        assert _row_lines(by_path[("Results", "By region")]) == {1: "Region | Sales", 2: "North | 10"}
        assert by_path[("Risks",)].text == "Risks\n\nSupply\n\nRates"

    def test_script_only_page_has_no_text(self) -> None:
        error = _error(b"<html><body><script>alert(1)</script></body></html>", FileType.HTML)
        assert error.reason == "NO_EXTRACTABLE_TEXT"


class TestMarkdown:
    def test_heading_path_and_exact_source_slices(self) -> None:
        source = "Intro line.\n\n# Guide\nText A.\n\n## Install\n```\n# not a heading\n```\n\n# Tables\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
        parsed = parse(source.encode(), FileType.MARKDOWN, LIMITS)
        paths = [s.heading_path for s in parsed.sections]
        assert paths == [(), ("Guide",), ("Guide", "Install"), ("Tables",), ("Tables",)]
        for section in parsed.sections[:4]:
            assert section.text in source  # prose: exact slices of the source
        install = parsed.sections[2]
        assert "# not a heading" in install.text
        # GFM tables in the shared table convention: the header line, then rows with their numbers.
        assert parsed.sections[3].text == "# Tables"
        assert parsed.sections[4].text == "a | b\n1 | 2"
        assert _row_lines(parsed.sections[4]) == {2: "1 | 2"}
        assert parsed.title == "Guide"


class TestText:
    @pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "cp1252"])
    def test_encodings(self, encoding: str) -> None:
        text = "Le café est très bon. Déjà vu, naïve façade, garçon.\n" * 3
        parsed = parse(text.encode(encoding), FileType.TEXT, LIMITS)
        assert parsed.sections[0].text.strip() == text.strip()

    def test_whitespace_only_is_rejected(self) -> None:
        error = _error(b" \n\t\n  ", FileType.TEXT)
        assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "NO_EXTRACTABLE_TEXT")

    def test_text_limit(self) -> None:
        error = _error(b"word " * 1000, FileType.TEXT, ParseLimits(max_text_chars=100))
        assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "TOO_MUCH_TEXT")


def _docx_with_entity(declaration: str, run_text: str) -> bytes:
    """A DOCX whose document part declares an internal DTD entity and uses it inside a run."""
    import io
    import zipfile

    import docx

    document = docx.Document()
    document.add_paragraph("MARKER")
    blank = io.BytesIO()
    document.save(blank)
    source = zipfile.ZipFile(blank)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "word/document.xml":
                xml = data.decode().replace("?>", f"?>\n<!DOCTYPE w:document [{declaration}]>", 1)
                data = xml.replace("MARKER", run_text).encode()
            target.writestr(item, data)
    return out.getvalue()


def test_text_after_an_unexpanded_entity_in_a_docx_run_is_kept() -> None:
    data = _docx_with_entity('<!ENTITY company "Acme Corp">', "Signed by &company; on behalf of the board")
    text = parse(data, FileType.DOCX, ParseLimits()).sections[0].text
    assert text == "Signed by Acme Corp on behalf of the board"  # was "Signed by"


def test_an_entity_that_nests_others_is_dropped_not_expanded() -> None:
    laughs = '<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">'
    text = parse(_docx_with_entity(laughs, "before &b; after"), FileType.DOCX, ParseLimits()).sections[0].text
    assert " ".join(text.split()) == "before after"
