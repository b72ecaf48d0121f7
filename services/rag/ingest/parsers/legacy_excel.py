"""Legacy Excel (.xls, BIFF) with xlrd: every sheet as blocks of rows with the header repeated,
source row numbers kept, like XLSX."""

from __future__ import annotations

import datetime as dt

import xlrd

from services.rag.documents import ParsedDocument, Section
from services.rag.ingest.formats import FileType, corrupt
from services.rag.ingest.parsers.cleaning import collapse_cell
from services.rag.ingest.parsers.limits import ParseLimits, too_large
from services.rag.ingest.parsers.tables import table_blocks


def _cell_text(cell, datemode: int) -> str:
    if cell.ctype == xlrd.XL_CELL_NUMBER:
        value = cell.value
        return str(int(value)) if float(value).is_integer() else repr(value)
    if cell.ctype == xlrd.XL_CELL_DATE:
        try:
            value = xlrd.xldate.xldate_as_datetime(cell.value, datemode)
        except (ValueError, OverflowError, xlrd.xldate.XLDateError):
            return str(cell.value)
        return value.date().isoformat() if value.time() == dt.time(0) else value.isoformat()
    if cell.ctype == xlrd.XL_CELL_BOOLEAN:
        return "TRUE" if cell.value else "FALSE"
    if cell.ctype in (xlrd.XL_CELL_EMPTY, xlrd.XL_CELL_BLANK, xlrd.XL_CELL_ERROR):
        return ""
    return collapse_cell(cell.value)


def parse_xls(data: bytes, limits: ParseLimits) -> ParsedDocument:
    try:
        book = xlrd.open_workbook(file_contents=data, on_demand=True)
    except (xlrd.XLRDError, xlrd.compdoc.CompDocError, ValueError, AssertionError, IndexError, KeyError,
            OverflowError) as exc:
        raise corrupt(FileType.XLS, str(exc) or type(exc).__name__) from exc
    sections: list[Section] = []
    names: list[str] = []
    cells = 0
    try:
        for index in range(book.nsheets):
            sheet = book.sheet_by_index(index)
            names.append(sheet.name)
            cells += sheet.nrows * sheet.ncols
            if cells > limits.max_sheet_cells:
                raise too_large("spreadsheet cells", limits.max_sheet_cells, "SPREADSHEET_TOO_LARGE")
            rows = []
            for r in range(sheet.nrows):
                values = [_cell_text(cell, book.datemode) for cell in sheet.row(r)]
                while values and not values[-1]:
                    values.pop()
                if values:
                    rows.append((r + 1, values))
            if rows:
                sections.extend(table_blocks(rows[0], iter(rows[1:]), limits.table_block_chars, sheet_name=sheet.name))
            book.unload_sheet(index)
    except (xlrd.XLRDError, ValueError, AssertionError, IndexError, KeyError) as exc:
        raise corrupt(FileType.XLS, str(exc) or type(exc).__name__) from exc
    finally:
        book.release_resources()
    return ParsedDocument(tuple(sections), sheet_names=tuple(names))
