"""EPUB with EbookLib: the spine's XHTML documents in reading order, each parsed like HTML
(headings as a path, tables as rows); a chapter's number is its page. The navigation document
(table of contents) is skipped."""

from __future__ import annotations

import zipfile

import ebooklib
from ebooklib import epub
from lxml import etree

from services.rag.documents import ParsedDocument, Section
from services.rag.ingest.formats import FileType, corrupt
from services.rag.ingest.parsers.archive import open_office_archive
from services.rag.ingest.parsers.html import parse_html
from services.rag.ingest.parsers.limits import ParseLimits, too_large


def parse_epub(data: bytes, limits: ParseLimits) -> ParsedDocument:
    archive = open_office_archive(data, FileType.EPUB, "META-INF/container.xml", limits)
    archive.close()
    try:
        import io

        book = epub.read_epub(io.BytesIO(data), options={"ignore_ncx": True})
    except (epub.EpubException, KeyError, ValueError, IndexError, AttributeError, etree.LxmlError,
            zipfile.BadZipFile) as exc:
        raise corrupt(FileType.EPUB, str(exc) or type(exc).__name__) from exc
    sections: list[Section] = []
    chapters = 0
    total = 0
    for idref, _linear in book.spine:
        item = book.get_item_with_id(idref)
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT or isinstance(item, epub.EpubNav):
            continue
        chapters += 1
        if chapters > limits.max_pages:
            raise too_large("chapters", limits.max_pages, "TOO_MANY_PAGES")
        parsed = parse_html(item.get_content(), limits)
        for section in parsed.sections:
            total += len(section.text)
            if total > limits.max_text_chars:
                raise too_large("extracted characters", limits.max_text_chars, "TOO_MUCH_TEXT")
            sections.append(Section(text=section.text, page=chapters, heading_path=section.heading_path,
                                    row_starts=section.row_starts))
    title = (book.title or "").strip() if isinstance(book.title, str) else ""
    return ParsedDocument(tuple(sections), page_count=chapters, title=title)
