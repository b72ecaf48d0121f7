"""PDF: the text layer read by PDFium (``document``), its tables found from character boxes and
drawn lines (``table_finder``), and its pages laid out as prose and table sections (``layout``)."""

from services.rag.ingest.parsers.pdf.document import PageStart, parse_pdf

__all__ = ["PageStart", "parse_pdf"]
