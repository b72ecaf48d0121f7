"""What each PDF page costs to read, measured on its content streams before PDFium loads the page.

PDFium builds one object per text character and per drawing operator when it loads a page, and no
API bounds that: a 680 KB file whose one content stream inflates to 200 MB of ``(AAAA) Tj`` drove
the service to 2.5 GB and 40-90 s of CPU (20 MB of such operators: 3.3 GB and 13 s, measured). So
every page's content streams, and the form XObjects they draw (``/Name Do``, counted as often as
they are drawn, nested ones too), are inflated here in bounded steps with ``zlib`` and counted as
they come: decompressed bytes, operators, and characters shown by string operands. The first
limit passed refuses the document with INVALID_ARGUMENT naming the page and the limit, before the
page's first byte reaches PDFium and long before its memory does.

The structure is read with ``pypdf`` (lazily: nothing is decoded but what is counted here). A file
``pypdf`` cannot walk is left to PDFium, which reads (or refuses) it inside the parser worker's
memory and CPU limits (``ingest.parser_pool``): this scan gives a precise reason for the common
bomb, the worker's limits hold for whatever it misses.
"""

from __future__ import annotations

import io
import logging
import re
import zlib
from dataclasses import dataclass, field

import pypdf
from pypdf.generic import ArrayObject, DictionaryObject, IndirectObject, NameObject, StreamObject

from services.rag.ingest.parsers.limits import ParseLimits, too_large

log = logging.getLogger("docuthinker.rag.ingest")

_STEP = 1 << 20
"""Bytes inflated (and counted) at a time."""
_MAX_FORM_DEPTH = 12
_FLATE = {"/FlateDecode", "/Fl"}
# Operators are short keywords not preceded by a name slash; literal strings are counted by their bytes.
_OPERATOR = re.compile(rb"(?<![/\w.])[A-Za-z'\"][A-Za-z0-9*'\"]{0,2}(?![\w])")
_STRING = re.compile(rb"\((?:[^()\\]|\\.)*\)|<[0-9A-Fa-f\s]*>")
_DRAW_FORM = re.compile(rb"/([^\s/<>\[\](){}%]+)\s*Do(?![\w])")


@dataclass
class Cost:
    """What reading a stream (and the forms it draws) asks of PDFium."""

    bytes: int = 0
    operators: int = 0
    chars: int = 0

    def add(self, other: Cost, times: int = 1) -> None:
        self.bytes += other.bytes * times
        self.operators += other.operators * times
        self.chars += other.chars * times


@dataclass
class _Page:
    number: int
    limits: ParseLimits
    cost: Cost = field(default_factory=Cost)

    def check(self, extra: Cost | None = None) -> None:
        total = Cost()
        total.add(self.cost)
        if extra is not None:
            total.add(extra)
        limits, page = self.limits, str(self.number)
        if total.bytes > limits.max_page_content_bytes:
            raise too_large(f"decompressed content bytes on page {page}", limits.max_page_content_bytes,
                            "PDF_PAGE_CONTENT_TOO_LARGE", page=page)
        if total.operators > limits.max_page_operators:
            raise too_large(f"drawing operators on page {page}", limits.max_page_operators,
                            "PDF_PAGE_TOO_MANY_OPERATORS", page=page)
        if total.chars > limits.max_page_chars:
            raise too_large(f"characters on page {page}", limits.max_page_chars, "PDF_PAGE_TOO_MUCH_TEXT",
                            page=page)


def check_content_budget(data: bytes, limits: ParseLimits) -> Cost:
    """The whole document's cost; raises InvalidArgument at the first page or document limit passed."""
    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        pages = list(reader.pages) if len(reader.pages) <= limits.max_pages else None
    except Exception as exc:  # noqa: BLE001 - a structure pypdf cannot walk: PDFium's to read or refuse
        log.info("content budget skipped: %s", exc)
        return Cost()
    if pages is None:
        raise too_large("pages", limits.max_pages, "TOO_MANY_PAGES")
    document = Cost()
    for number, page in enumerate(pages, 1):
        try:
            cost = _page_cost(page, _Page(number, limits))
        except (pypdf.errors.PyPdfError, KeyError, ValueError, TypeError, AttributeError) as exc:
            log.info("content budget of page %d skipped: %s", number, exc)
            continue
        document.add(cost)
        if document.bytes > limits.max_content_bytes:
            raise too_large("decompressed content bytes", limits.max_content_bytes, "PDF_CONTENT_TOO_LARGE")
        if document.operators > limits.max_operators:
            raise too_large("drawing operators", limits.max_operators, "PDF_TOO_MANY_OPERATORS")
    return document


def _page_cost(page: DictionaryObject, budget: _Page) -> Cost:
    contents = _resolve(page.get("/Contents"))
    streams = contents if isinstance(contents, ArrayObject) else [contents]
    forms = _Forms(_resolve(page.get("/Resources")), budget)
    for stream in streams:
        stream = _resolve(stream)
        if isinstance(stream, StreamObject):
            drawn = _count(stream, budget.cost, budget)
            forms.draw(drawn, budget.cost, depth=0)
    return budget.cost


class _Forms:
    """The form XObjects a stream may draw, each inflated once and weighed by how often it is drawn."""

    def __init__(self, resources: object, budget: _Page) -> None:
        self._resources = resources
        self._budget = budget
        self._costs: dict[int, Cost] = {}

    def draw(self, drawn: dict[bytes, int], into: Cost, depth: int, resources: object = None) -> None:
        xobjects = _resolve(_get(resources if resources is not None else self._resources, "/XObject"))
        if not drawn or not isinstance(xobjects, DictionaryObject):
            return
        for name, times in drawn.items():
            ref = xobjects.get(NameObject("/" + name.decode("latin-1")))
            form = _resolve(ref)
            if not isinstance(form, StreamObject) or form.get("/Subtype") != "/Form":
                continue
            into.add(self._cost(ref, form, depth + 1), times)
            self._budget.check()

    def _cost(self, ref: object, form: StreamObject, depth: int) -> Cost:
        key = ref.idnum if isinstance(ref, IndirectObject) else id(form)
        if key in self._costs:
            return self._costs[key]
        if depth > _MAX_FORM_DEPTH:  # forms drawing forms this deep (or in a cycle): PDFium's to bound
            return Cost()
        self._costs[key] = Cost()  # a form that draws itself adds nothing more while it is measured
        cost = Cost()
        drawn = _count(form, cost, self._budget)
        self.draw(drawn, cost, depth, resources=_resolve(form.get("/Resources")) or self._resources)
        self._costs[key] = cost
        return cost


def _count(stream: StreamObject, into: Cost, budget: _Page) -> dict[bytes, int]:
    """Inflates ``stream`` step by step into ``into``'s counts (checked against the page's limits after
    every step); returns the forms it draws and how often."""
    drawn: dict[bytes, int] = {}
    tail = b""
    for block in _decoded(stream, budget):
        block = tail + block
        # Count up to the last line break, so no token is cut in two between steps.
        cut = max(block.rfind(b"\n"), block.rfind(b"\r"))
        if cut < 0 and len(block) < _STEP * 4:
            tail = block
            continue
        head, tail = (block[: cut + 1], block[cut + 1 :]) if cut >= 0 else (block, b"")
        _tally(head, into, drawn)
        budget.check(into if into is not budget.cost else None)
    if tail:
        _tally(tail, into, drawn)
        budget.check(into if into is not budget.cost else None)
    return drawn


def _tally(text: bytes, into: Cost, drawn: dict[bytes, int]) -> None:
    into.bytes += len(text)
    into.operators += len(_OPERATOR.findall(text))
    into.chars += sum(map(len, _STRING.findall(text)))
    if b"Do" in text:
        for name in _DRAW_FORM.findall(text):
            drawn[name] = drawn.get(name, 0) + 1


def _decoded(stream: StreamObject, budget: _Page):
    """The stream's decoded bytes in steps. Flate (nearly every content stream) is inflated in bounded
    steps; other filters are decoded by pypdf, whose own output limits apply."""
    filters = _resolve(stream.get("/Filter"))
    names = [str(_resolve(f)) for f in filters] if isinstance(filters, ArrayObject) else (
        [str(filters)] if filters is not None else [])
    params = _resolve(stream.get("/DecodeParms"))
    raw = getattr(stream, "_data", b"") or b""
    if not names:
        for start in range(0, len(raw), _STEP):
            yield raw[start : start + _STEP]
        return
    if names == [names[0]] and names[0] in _FLATE and not params:
        yield from _inflate(raw)
        return
    try:
        data = stream.get_data()
    except Exception as exc:  # noqa: BLE001 - an undecodable stream is PDFium's to handle
        log.info("content stream of page %d not decoded: %s", budget.number, exc)
        return
    for start in range(0, len(data), _STEP):
        yield data[start : start + _STEP]


def _inflate(raw: bytes):
    inflater = zlib.decompressobj()
    pending = raw
    try:
        while pending:
            block = inflater.decompress(pending, _STEP)
            pending = inflater.unconsumed_tail
            if block:
                yield block
            elif inflater.eof or not pending:
                break
        rest = inflater.flush()
        if rest:
            yield rest
    except zlib.error:
        return  # a damaged stream: PDFium reads what it can of it


def _resolve(value: object) -> object:
    depth = 0
    while isinstance(value, IndirectObject) and depth < 32:
        value = value.get_object()
        depth += 1
    return value


def _get(dictionary: object, key: str) -> object:
    return dictionary.get(key) if isinstance(dictionary, DictionaryObject) else None
