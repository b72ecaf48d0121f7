"""XLSX with openpyxl in read-only (streaming) mode: every sheet, blocks of rows with the
header row repeated, source row numbers kept.

A sheet's declared dimensions are ignored (``reset_dimensions``): a file may claim
1048576x1024 cells, and openpyxl would otherwise pad every row to that width. Only real
cells count against the limits.
"""

from __future__ import annotations

import datetime as dt
import io
import zipfile

import openpyxl
from openpyxl.utils.exceptions import InvalidFileException

from services.rag.documents import ParsedDocument, Section
from services.rag.ingest.formats import FileType, corrupt
from services.rag.ingest.parsers.archive import OOXML_MAIN, open_office_archive
from services.rag.ingest.parsers.cleaning import collapse_cell
from services.rag.ingest.parsers.limits import ParseLimits, too_large
from services.rag.ingest.parsers.tables import table_blocks


def _cell_text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.datetime) and value.time() == dt.time(0):
        return value.date().isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return collapse_cell(value)


class _Budget:
    def __init__(self, limits: ParseLimits) -> None:
        self.limits = limits
        self.cells = 0
        self.rows = 0

    def row(self) -> None:
        self.rows += 1
        if self.rows > self.limits.max_sheet_rows_scanned:
            raise too_large("spreadsheet rows", self.limits.max_sheet_rows_scanned, "SPREADSHEET_TOO_LARGE")

    def add_cells(self, n: int) -> None:
        self.cells += n
        if self.cells > self.limits.max_sheet_cells:
            raise too_large("spreadsheet cells", self.limits.max_sheet_cells, "SPREADSHEET_TOO_LARGE")


def _rows(worksheet, budget: _Budget):
    """(row number, cells) for every non-empty row, trailing empty cells dropped."""
    worksheet.reset_dimensions()
    for number, values in enumerate(worksheet.iter_rows(values_only=True), start=1):
        budget.row()
        if not values:
            continue
        cells = [_cell_text(v) for v in values]
        while cells and not cells[-1]:
            cells.pop()
        if not cells:
            continue
        budget.add_cells(sum(1 for c in cells if c))
        yield number, cells


def parse_xlsx(data: bytes, limits: ParseLimits) -> ParsedDocument:
    open_office_archive(data, FileType.XLSX, OOXML_MAIN, limits).close()
    try:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except (InvalidFileException, zipfile.BadZipFile, KeyError, ValueError, TypeError, OSError) as exc:
        raise corrupt(FileType.XLSX, str(exc) or type(exc).__name__) from exc
    budget = _Budget(limits)
    sections: list[Section] = []
    names: list[str] = []
    try:
        for worksheet in workbook.worksheets:
            names.append(worksheet.title)
            rows = _rows(worksheet, budget)
            header = next(rows, None)
            sections.extend(table_blocks(header, rows, limits.table_block_chars, sheet_name=worksheet.title))
    except (KeyError, ValueError, TypeError, zipfile.BadZipFile) as exc:
        raise corrupt(FileType.XLSX, str(exc) or type(exc).__name__) from exc
    finally:
        workbook.close()
    title = (workbook.properties.title or "").strip() if workbook.properties else ""
    return ParsedDocument(tuple(sections), sheet_names=tuple(names), title=title)
