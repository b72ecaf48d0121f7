"""CSV and TSV: encoding detection, delimiter sniffing, header repeated with each block of rows.

Row numbers are 1-based records of the file (the header is row 1).
"""

from __future__ import annotations

import csv
import io

from services.rag.documents import ParsedDocument
from services.rag.ingest.formats import FileType, corrupt
from services.rag.ingest.parsers.cleaning import clean_text, collapse_cell, decode_text
from services.rag.ingest.parsers.limits import ParseLimits, too_large
from services.rag.ingest.parsers.tables import table_blocks

_CANDIDATES = ",;\t|"
_SAMPLE_CHARS = 64 * 1024


def sniff_delimiter(text: str, default: str) -> str:
    sample = text[:_SAMPLE_CHARS]
    if "\n" in sample[:-1]:
        # Drop a possibly cut last line so the sniffer sees whole records only.
        sample = sample[: sample.rfind("\n")]
    try:
        return csv.Sniffer().sniff(sample, delimiters=_CANDIDATES).delimiter
    except csv.Error:
        return default


def parse_delimited(data: bytes, file_type: FileType, limits: ParseLimits) -> ParsedDocument:
    text = clean_text(decode_text(data))
    if len(text) > limits.max_text_chars:
        raise too_large("extracted characters", limits.max_text_chars, "TOO_MUCH_TEXT")
    delimiter = "\t" if file_type is FileType.TSV else sniff_delimiter(text, ",")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)

    def records():
        try:
            for number, record in enumerate(reader, start=1):
                if sum(map(len, record)) > limits.max_record_chars:
                    raise too_large(f"characters in one {file_type.value.upper()} record (record {number})",
                                    limits.max_record_chars, "RECORD_TOO_LONG")
                cells = [collapse_cell(c) for c in record]
                while cells and not cells[-1]:
                    cells.pop()
                if cells:
                    yield number, cells
        except csv.Error as exc:
            raise corrupt(file_type, f"malformed {file_type.value.upper()} ({exc})") from exc

    csv.field_size_limit(max(limits.max_record_chars, 131072))
    rows = records()
    header = next(rows, None)
    sections = table_blocks(header, rows, limits.table_block_chars)
    return ParsedDocument(tuple(sections))
