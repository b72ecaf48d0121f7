"""OpenDocument text (.odt) and spreadsheets (.ods) with odfpy.

ODT: headings (kept as a path), paragraphs, list items and tables in body order. ODS: every
sheet as blocks of rows with the header repeated, like XLSX. Repeated rows and cells
(``number-rows-repeated``, which a file may set to a million) are expanded only when they hold
text, and count against the spreadsheet limits.
"""

from __future__ import annotations

import io
import zipfile
from xml.parsers.expat import ExpatError

from odf import teletype
from odf.namespaces import TABLENS, TEXTNS
from odf.opendocument import load

from services.rag.documents import ParsedDocument, Section
from services.rag.ingest.formats import FileType, corrupt
from services.rag.ingest.parsers.archive import open_office_archive
from services.rag.ingest.parsers.cleaning import clean_text, collapse_cell
from services.rag.ingest.parsers.limits import ParseLimits, too_large
from services.rag.ingest.parsers.tables import TextBuilder, table_blocks

_MAX_REPEAT = 1000
"""Copies of one repeated row or cell with text that are expanded; the rest are dropped."""


def _load(data: bytes, kind: FileType, limits: ParseLimits):
    open_office_archive(data, kind, "content.xml", limits).close()
    try:
        return load(io.BytesIO(data))
    except (KeyError, ValueError, ExpatError, zipfile.BadZipFile, AttributeError, IndexError) as exc:
        raise corrupt(kind, str(exc) or type(exc).__name__) from exc


def _is(node, namespace: str, name: str) -> bool:
    return getattr(node, "qname", None) == (namespace, name)


def _repeat(node, attribute: str) -> int:
    try:
        return max(1, int(node.attributes.get((TABLENS, attribute), 1)))
    except (TypeError, ValueError):
        return 1


class _Budget:
    def __init__(self, limits: ParseLimits) -> None:
        self.limits = limits
        self.cells = 0

    def add(self, n: int) -> None:
        self.cells += n
        if self.cells > self.limits.max_sheet_cells:
            raise too_large("spreadsheet cells", self.limits.max_sheet_cells, "SPREADSHEET_TOO_LARGE")


def _table_rows(table, budget: _Budget):
    """(source row number, cells) of a table:table's non-empty rows, trailing empty cells dropped."""
    number = 0
    for row in _descendant_rows(table):
        repeat = _repeat(row, "number-rows-repeated")
        cells: list[str] = []
        for cell in row.childNodes:
            if not (_is(cell, TABLENS, "table-cell") or _is(cell, TABLENS, "covered-table-cell")):
                continue
            text = collapse_cell(teletype.extractText(cell))
            times = _repeat(cell, "number-columns-repeated")
            cells.extend([text] * (min(times, _MAX_REPEAT) if text else min(times, 64)))
        while cells and not cells[-1]:
            cells.pop()
        if not cells:
            number += repeat
            continue
        for _ in range(min(repeat, _MAX_REPEAT)):
            number += 1
            budget.add(sum(1 for c in cells if c))
            yield number, cells
        number += repeat - min(repeat, _MAX_REPEAT)


def _descendant_rows(table):
    for child in table.childNodes:
        if _is(child, TABLENS, "table-row"):
            yield child
        elif _is(child, TABLENS, "table-rows") or _is(child, TABLENS, "table-header-rows") \
                or _is(child, TABLENS, "table-row-group"):
            yield from _descendant_rows(child)


def parse_ods(data: bytes, limits: ParseLimits) -> ParsedDocument:
    document = _load(data, FileType.ODS, limits)
    budget = _Budget(limits)
    sections: list[Section] = []
    names: list[str] = []
    for table in document.spreadsheet.childNodes:
        if not _is(table, TABLENS, "table"):
            continue
        name = str(table.attributes.get((TABLENS, "name"), f"Sheet{len(names) + 1}"))
        names.append(name)
        rows = _table_rows(table, budget)
        header = next(rows, None)
        sections.extend(table_blocks(header, rows, limits.table_block_chars, sheet_name=name))
    return ParsedDocument(tuple(sections), sheet_names=tuple(names), title=_title(document))


def parse_odt(data: bytes, limits: ParseLimits) -> ParsedDocument:
    document = _load(data, FileType.ODT, limits)
    walker = _TextWalker(limits)
    walker.walk(document.text)
    walker.flush()
    return ParsedDocument(tuple(walker.sections), title=_title(document) or walker.first_heading)


class _TextWalker:
    def __init__(self, limits: ParseLimits) -> None:
        self.limits = limits
        self.budget = _Budget(limits)
        self.sections: list[Section] = []
        self.path: list[tuple[int, str]] = []
        self.builder = TextBuilder()
        self.total = 0
        self.first_heading = ""

    def flush(self) -> None:
        if not self.builder.empty:
            self.sections.append(self.builder.section(heading_path=tuple(t for _, t in self.path)))
        self.builder = TextBuilder()

    def add(self, text: str) -> None:
        text = clean_text(text).strip()
        if not text:
            return
        self.builder.paragraph(text)
        self.total += len(text)
        if self.total > self.limits.max_text_chars:
            raise too_large("extracted characters", self.limits.max_text_chars, "TOO_MUCH_TEXT")

    def walk(self, node, in_list: bool = False) -> None:
        for child in node.childNodes:
            if _is(child, TEXTNS, "h"):
                text = collapse_cell(teletype.extractText(child))
                if not text:
                    continue
                try:
                    level = int(child.attributes.get((TEXTNS, "outline-level"), 1))
                except (TypeError, ValueError):
                    level = 1
                self.flush()
                self.path = [(lvl, t) for lvl, t in self.path if lvl < level] + [(level, text)]
                self.first_heading = self.first_heading or text
                self.add(text)
            elif _is(child, TEXTNS, "p"):
                text = teletype.extractText(child)
                self.add(f"• {text.strip()}" if in_list and text.strip() else text)
            elif _is(child, TEXTNS, "list"):
                self.walk(child, in_list=True)
            elif _is(child, TABLENS, "table"):
                self.builder.table(_table_rows(child, self.budget))
            elif getattr(child, "childNodes", None):
                self.walk(child, in_list)


def _title(document) -> str:
    from odf import dc

    for node in document.meta.getElementsByType(dc.Title):
        text = collapse_cell(teletype.extractText(node))
        if text:
            return text
    return ""
