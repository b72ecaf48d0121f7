"""HTML previews of originals a browser cannot show: DOCX (mammoth), spreadsheets (openpyxl, xlrd) and
delimited text (csv), for the web app's viewer.

The HTML is served like the original's bytes (``Content-Security-Policy: sandbox``) and the web app shows
it in a sandboxed frame without scripts; every value is escaped here all the same. Table rows carry
``data-row`` (the 1-based row number citations use) and each sheet a ``data-sheet``, so the viewer can
mark a cited row. Large sheets are cut (``MAX_ROWS`` x ``MAX_COLUMNS`` per sheet, said in the preview).
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Iterable, Sequence

from charset_normalizer import from_bytes

from services.runtime.errors import FailedPrecondition

MAX_ROWS = 2000
MAX_COLUMNS = 60
PREVIEWED = frozenset({"docx", "xlsx", "xls", "csv", "tsv"})
_STYLE = """
:root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.45; }
body { margin: .75rem; }
table { border-collapse: collapse; font-size: .85rem; margin: .5rem 0 1rem; }
th, td { border: 1px solid #9fb3c8; padding: .2rem .45rem; text-align: left; vertical-align: top; }
th.row { color: #616e7c; font-weight: normal; text-align: right; }
tr.cited td, tr.cited th { background: #fde04780; }
mark.cited { background: #fde047; color: #111; }
caption { text-align: left; font-weight: 600; padding: .3rem 0; }
img { max-width: 100%; height: auto; }
p.cut { color: #b45309; }
"""


def unsupported(file_type: str) -> FailedPrecondition:
    return FailedPrecondition(f"{file_type or 'this'} originals have no HTML preview (DOCX, XLSX, XLS, CSV and TSV do)",
                              reason="NO_PREVIEW", metadata={"file_type": file_type})


def preview(data: bytes, file_type: str, filename: str) -> str:
    """The whole HTML document of a preview."""
    if file_type == "docx":
        body = _docx(data)
    elif file_type == "xlsx":
        body = _workbook(data)
    elif file_type == "xls":
        body = _legacy_workbook(data)
    elif file_type in ("csv", "tsv"):
        body = _delimited(data, "\t" if file_type == "tsv" else None)
    else:
        raise unsupported(file_type)
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(filename)}</title>"
            f"<style>{_STYLE}</style></head><body>{body}</body></html>")


def _docx(data: bytes) -> str:
    import mammoth

    # mammoth escapes the document's text; its images come inline as data: URIs (the sandbox allows those).
    return mammoth.convert_to_html(io.BytesIO(data)).value


def _table(name: str, rows: Iterable[Sequence[object]]) -> str:
    out = [f'<section data-sheet="{html.escape(name)}">', "<table>"]
    if name:
        out.append(f"<caption>{html.escape(name)}</caption>")
    cut = False
    for number, row in enumerate(rows, start=1):
        if number > MAX_ROWS:
            cut = True
            break
        cells = list(row)
        if len(cells) > MAX_COLUMNS:
            cells, cut = cells[:MAX_COLUMNS], True
        tag = "th" if number == 1 else "td"
        out.append(f'<tr data-row="{number}"><th class="row" scope="row">{number}</th>'
                   + "".join(f"<{tag}>{html.escape(_text(c))}</{tag}>" for c in cells) + "</tr>")
    out.append("</table>")
    if cut:
        out.append(f'<p class="cut">Only the first {MAX_ROWS} rows and {MAX_COLUMNS} columns are shown.</p>')
    out.append("</section>")
    return "".join(out)


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _workbook(data: bytes) -> str:
    import openpyxl

    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        return "".join(_table(sheet.title, sheet.iter_rows(values_only=True)) for sheet in book.worksheets)
    finally:
        book.close()


def _legacy_workbook(data: bytes) -> str:
    import xlrd

    book = xlrd.open_workbook(file_contents=data)
    return "".join(_table(sheet.name, (sheet.row_values(r) for r in range(sheet.nrows))) for sheet in book.sheets())


def _delimited(data: bytes, delimiter: str | None) -> str:
    best = from_bytes(data[:1_000_000]).best()
    text = data.decode(best.encoding if best is not None else "utf-8", errors="replace")
    if delimiter is None:
        try:
            delimiter = csv.Sniffer().sniff(text[:20_000], delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
    return _table("", csv.reader(io.StringIO(text), delimiter=delimiter))
