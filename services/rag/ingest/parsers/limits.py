"""Safety limits every parser honours, so a hostile file cannot exhaust memory or time."""

from __future__ import annotations

from dataclasses import dataclass

from services.runtime.errors import InvalidArgument


@dataclass(frozen=True)
class ParseLimits:
    max_pages: int = 2000
    """Pages of a PDF."""
    max_sheet_cells: int = 2_000_000
    """Non-empty cells of a workbook."""
    max_sheet_rows_scanned: int = 4_000_000
    """Row records walked in a workbook, empty ones included."""
    max_unzipped_bytes: int = 256 * 1024 * 1024
    """Declared uncompressed size of an Office archive's members."""
    max_compression_ratio: float = 200.0
    """Largest uncompressed/compressed ratio of one archive member bigger than 1 MiB."""
    max_text_chars: int = 20_000_000
    """Extracted characters per document."""
    max_image_pixels: int = 60_000_000
    """Pixels of one page image: an uploaded image's frame, or a scanned PDF page as rendered for
    OCR (rendered at a lower resolution when its page is that large)."""
    max_table_pages: int = 500
    """First PDF pages searched for tables (character boxes, then pdfplumber); later pages keep their text
    as PDFium reads it, re-flowed."""
    table_block_chars: int = 900
    """Target size of a block of table rows (each block repeats the header row)."""
    max_record_chars: int = 131_072
    """Characters of one CSV/TSV record (a "line"): a multi-megabyte single line is a table no one can read."""
    max_chunks: int = 25_000
    """Chunks one document may become (embedding time grows with them)."""
    max_page_content_bytes: int = 32 * 1024 * 1024
    """Decompressed bytes of one PDF page's content streams, the form XObjects it draws counted as often
    as drawn (``pdf.content_budget``). A dense text page has tens of KB; a detailed map a few MB."""
    max_page_operators: int = 1_000_000
    """Drawing and text operators on one PDF page (PDFium builds an object for each)."""
    max_page_chars: int = 400_000
    """Characters shown by one PDF page's text operators (PDFium keeps ~200 bytes per character; a dense
    page shows about 5,000)."""
    max_content_bytes: int = 512 * 1024 * 1024
    """Decompressed content-stream bytes of a whole PDF."""
    max_operators: int = 20_000_000
    """Drawing and text operators of a whole PDF."""


def too_large(what: str, limit: int | float, reason: str, **metadata: str) -> InvalidArgument:
    """A property of the file that no retry changes: INVALID_ARGUMENT (400), never RESOURCE_EXHAUSTED (429).
    ``metadata`` adds to the ErrorInfo (e.g. the page)."""
    return InvalidArgument(
        f"the document exceeds the limit of {limit} {what}",
        reason=reason,
        metadata={"limit": str(limit), **metadata},
    )
