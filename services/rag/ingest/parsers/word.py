"""DOCX with python-docx: headings (kept as a path), paragraphs and tables in body order,
then page headers and footers (once each, however many sections repeat them)."""

from __future__ import annotations

import io
import re

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph
from lxml import etree

from services.rag.documents import ParsedDocument, Section
from services.rag.ingest.formats import FileType, corrupt
from services.rag.ingest.parsers.archive import OOXML_MAIN, open_office_archive
from services.rag.ingest.parsers.cleaning import clean_text, collapse_cell
from services.rag.ingest.parsers.limits import ParseLimits, too_large
from services.rag.ingest.parsers.tables import TextBuilder, fits_one_block, table_blocks

_HEADING = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)


def _heading_level(paragraph: Paragraph) -> int | None:
    style = paragraph.style
    name = (style.name or "") if style is not None else ""
    if name.lower() == "title":
        return 0
    match = _HEADING.match(name)
    return int(match.group(1)) if match else None


def _table_rows(table: Table) -> list[tuple[int, list[str]]]:
    rows = []
    for number, row in enumerate(table.rows, start=1):
        cells, seen = [], set()
        for cell in row.cells:
            # A merged cell is returned once per grid column it spans; keep it once.
            if id(cell._tc) in seen:
                continue
            seen.add(id(cell._tc))
            cells.append(collapse_cell(cell.text))
        rows.append((number, cells))
    return rows


def parse_docx(data: bytes, limits: ParseLimits) -> ParsedDocument:
    open_office_archive(data, FileType.DOCX, OOXML_MAIN, limits).close()
    try:
        document = docx.Document(io.BytesIO(data))
    except (KeyError, ValueError, etree.LxmlError) as exc:
        raise corrupt(FileType.DOCX, str(exc) or type(exc).__name__) from exc
    except Exception as exc:  # python-docx raises PackageNotFoundError and friends for broken packages
        raise corrupt(FileType.DOCX, str(exc) or type(exc).__name__) from exc
    for part in document.part.package.iter_parts():
        element = getattr(part, "element", None)
        if element is not None:
            _inline_entities(element)

    sections: list[Section] = []
    headers, footers = _margins(document)
    if headers:
        sections.append(Section(text="\n\n".join(headers), heading_path=("Header",)))

    path: list[tuple[int, str]] = []
    builder = TextBuilder()
    title = (document.core_properties.title or "").strip()

    def flush() -> None:
        nonlocal builder
        if not builder.empty:
            sections.append(builder.section(heading_path=tuple(text for _, text in path)))
        builder = TextBuilder()

    total = 0
    for block in document.iter_inner_content():
        if isinstance(block, Paragraph):
            text = clean_text(block.text).strip()
            if not text:
                continue
            level = _heading_level(block)
            if level is not None:
                flush()
                path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, text)]
                title = title or text
            builder.paragraph(text)
        else:
            rows = _table_rows(block)
            if fits_one_block(rows, limits.table_block_chars):
                builder.table(rows)
            else:  # a long table: blocks of rows, each starting with the header row
                flush()
                where = tuple(text for _, text in path)
                sections.extend(table_blocks(rows[0], iter(rows[1:]), limits.table_block_chars, heading_path=where))
        total = builder.length + sum(len(s.text) for s in sections)
        if total > limits.max_text_chars:
            raise too_large("extracted characters", limits.max_text_chars, "TOO_MUCH_TEXT")
    flush()
    if footers:
        sections.append(Section(text="\n\n".join(footers), heading_path=("Footer",)))
    return ParsedDocument(tuple(sections), title=title)


_MAX_ENTITY_CHARS = 1024


def _inline_entities(root: etree._Element) -> None:
    """Entity references python-docx's parser leaves unexpanded (it never resolves entities, which is what
    keeps XXE and "billion laughs" out) become text: a ``<w:t>`` holding one keeps only the text before it
    as ``.text``, so what followed in the run was lost. A short entity declared in the part's own DTD gives
    its text, once (never a nested reference); any other is dropped; the text after it stays."""
    entities = list(root.iter(etree.Entity))
    if not entities:
        return
    dtd = root.getroottree().docinfo.internalDTD
    declared = {e.name: e.content for e in dtd.iterentities()} if dtd is not None else {}
    for entity in entities:
        content = declared.get(entity.name) or ""
        if len(content) > _MAX_ENTITY_CHARS or "&" in content or "<" in content:
            content = ""
        text = content + (entity.tail or "")
        parent, previous = entity.getparent(), entity.getprevious()
        if parent is None:
            continue
        if previous is not None:
            previous.tail = (previous.tail or "") + text
        else:
            parent.text = (parent.text or "") + text
        parent.remove(entity)


def _margins(document) -> tuple[list[str], list[str]]:
    headers: list[str] = []
    footers: list[str] = []
    for section in document.sections:
        for parts, target in (
            ((section.header, section.first_page_header, section.even_page_header), headers),
            ((section.footer, section.first_page_footer, section.even_page_footer), footers),
        ):
            for part in parts:
                if part.is_linked_to_previous:
                    continue
                text = clean_text("\n".join(p.text for p in part.paragraphs)).strip()
                if text and text not in target:
                    target.append(text)
    return headers, footers
