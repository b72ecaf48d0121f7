"""PPTX with python-pptx: one page per slide (its title as the heading), text boxes and tables
in shape order, then the slide's speaker notes."""

from __future__ import annotations

import io

from lxml import etree
from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE

from services.rag.documents import ParsedDocument, Section
from services.rag.ingest.formats import FileType, corrupt
from services.rag.ingest.parsers.archive import OOXML_MAIN, open_office_archive
from services.rag.ingest.parsers.cleaning import clean_text, collapse_cell
from services.rag.ingest.parsers.limits import ParseLimits, too_large
from services.rag.ingest.parsers.tables import TextBuilder

NOTES_LABEL = "Speaker notes:"


def parse_pptx(data: bytes, limits: ParseLimits) -> ParsedDocument:
    open_office_archive(data, FileType.PPTX, OOXML_MAIN, limits).close()
    try:
        deck = Presentation(io.BytesIO(data))
        slides = list(deck.slides)
    except (KeyError, ValueError, etree.LxmlError) as exc:
        raise corrupt(FileType.PPTX, str(exc) or type(exc).__name__) from exc
    except Exception as exc:  # python-pptx raises PackageNotFoundError and friends for broken packages
        raise corrupt(FileType.PPTX, str(exc) or type(exc).__name__) from exc
    if len(slides) > limits.max_pages:
        raise too_large("slides", limits.max_pages, "TOO_MANY_PAGES")
    sections: list[Section] = []
    total = 0
    title = ""
    for number, slide in enumerate(slides, start=1):
        builder = TextBuilder()
        heading = ""
        if slide.shapes.title is not None and slide.shapes.title.has_text_frame:
            heading = collapse_cell(slide.shapes.title.text_frame.text)
        for shape in slide.shapes:
            _shape_text(shape, builder)
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = clean_text(slide.notes_slide.notes_text_frame.text).strip()
            if notes:
                builder.paragraph(f"{NOTES_LABEL} {notes}")
        total += builder.length
        if total > limits.max_text_chars:
            raise too_large("extracted characters", limits.max_text_chars, "TOO_MUCH_TEXT")
        if not builder.empty:
            sections.append(builder.section(page=number, heading_path=(heading,) if heading else ()))
        title = title or heading
    core = (deck.core_properties.title or "").strip()
    return ParsedDocument(tuple(sections), page_count=len(slides), title=core or title)


def _shape_text(shape, builder: TextBuilder, depth: int = 0) -> None:
    if shape.shape_type == MSO_SHAPE_TYPE.GROUP and depth < 8:
        for child in shape.shapes:
            _shape_text(child, builder, depth + 1)
        return
    if getattr(shape, "has_table", False) and shape.has_table:
        rows = [(n, [collapse_cell(cell.text) for cell in row.cells]) for n, row in enumerate(shape.table.rows, 1)]
        builder.table(rows)
        return
    if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        for paragraph in shape.text_frame.paragraphs:
            text = clean_text("".join(run.text for run in paragraph.runs)).strip()
            if text:
                builder.paragraph(text)
