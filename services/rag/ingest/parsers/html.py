"""HTML with BeautifulSoup (lxml): the main content, headings as a path, tables as rows.

Scripts, styles, forms and navigation chrome are dropped; ``<main>`` (or ``<article>``) is
preferred to the whole body when the page has one.
"""

from __future__ import annotations

import warnings

from bs4 import BeautifulSoup, NavigableString, Tag, XMLParsedAsHTMLWarning
from bs4.element import Comment, Doctype, ProcessingInstruction

from services.rag.documents import ParsedDocument, Section
from services.rag.ingest.parsers.cleaning import collapse_cell
from services.rag.ingest.parsers.limits import ParseLimits, too_large
from services.rag.ingest.parsers.tables import TextBuilder, fits_one_block, table_blocks

# XHTML pages are parsed as HTML on purpose: lxml's HTML parser is the lenient one.
warnings.filterwarnings("ignore", category=XMLParsedAsHTMLWarning)

_DROP = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "form", "button", "select",
         "nav", "head")
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_BLOCKS = {"p", "div", "section", "article", "main", "header", "footer", "aside", "li", "ul", "ol", "dl", "dt", "dd",
           "blockquote", "pre", "figure", "figcaption", "address", "br", "hr", "caption", "details", "summary"}


class _Walker:
    def __init__(self, limits: ParseLimits) -> None:
        self.limits = limits
        self.sections: list[Section] = []
        self.path: list[tuple[int, str]] = []
        self.builder = TextBuilder()
        self.line: list[str] = []
        self.total = 0

    def end_line(self) -> None:
        text = collapse_cell("".join(self.line))
        self.line = []
        if text:
            self.builder.paragraph(text)
            self.total += len(text)
            if self.total > self.limits.max_text_chars:
                raise too_large("extracted characters", self.limits.max_text_chars, "TOO_MUCH_TEXT")

    def flush(self) -> None:
        self.end_line()
        if not self.builder.empty:
            self.sections.append(self.builder.section(heading_path=tuple(t for _, t in self.path)))
        self.builder = TextBuilder()

    def walk(self, node: Tag) -> None:
        for child in node.children:
            if isinstance(child, (Comment, Doctype, ProcessingInstruction)):
                continue
            if isinstance(child, NavigableString):
                self.line.append(str(child))
                continue
            if not isinstance(child, Tag):
                continue
            name = child.name.lower()
            if name in _HEADINGS:
                text = collapse_cell(child.get_text(" "))
                if text:
                    self.flush()
                    level = _HEADINGS[name]
                    self.path = [(lvl, t) for lvl, t in self.path if lvl < level] + [(level, text)]
                    self.line.append(text)
                    self.end_line()
            elif name == "table":
                self.end_line()
                rows = [row for row in _table_rows(child) if row[1]]
                if fits_one_block(rows, self.limits.table_block_chars):
                    self.builder.table(rows)
                else:  # a long table: blocks of rows, each starting with the header row
                    self.flush()
                    where = tuple(t for _, t in self.path)
                    self.sections.extend(table_blocks(rows[0], iter(rows[1:]), self.limits.table_block_chars,
                                                      heading_path=where))
            elif name in _BLOCKS:
                self.end_line()
                self.walk(child)
                self.end_line()
            else:
                self.walk(child)


def _table_rows(table: Tag):
    number = 0
    for row in table.find_all("tr"):
        if row.find_parent("table") is not table:
            continue  # rows of a nested table are rendered inside their cell's text
        number += 1
        cells = [collapse_cell(cell.get_text(" ")) for cell in row.find_all(["td", "th"], recursive=False)]
        # Empty cells are mostly layout spacers on web pages (and 10-K filings); drop them.
        yield number, [cell for cell in cells if cell]


def parse_html(data: bytes, limits: ParseLimits) -> ParsedDocument:
    soup = BeautifulSoup(data, "lxml")
    title = " ".join(soup.title.get_text(" ").split()) if soup.title else ""
    for tag in soup.find_all(_DROP):
        tag.decompose()
    root = soup.find("main") or soup.find("article") or soup.body or soup
    walker = _Walker(limits)
    walker.walk(root)
    walker.flush()
    return ParsedDocument(tuple(walker.sections), title=title)
