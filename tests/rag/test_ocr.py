"""OCR of scanned PDF pages and page images: real Tesseract where the words matter, a recording
reader at the OCR port where only the routing (which pages, at what size) does."""

from __future__ import annotations

import io
import shutil
import threading
import time
from dataclasses import dataclass, field

import grpc
import pytest
from PIL import Image

from services.rag.ingest.formats import FileType, validate_upload
from services.rag.ingest.ocr import OcrConfig, TesseractReader, reader_from
from services.rag.ingest.parsers import ParseLimits, parse
from services.runtime.errors import DeadlineExceeded, DomainError

from .factories import make_image, make_page_image, make_pdf, make_scanned_pdf, png_header_only

LIMITS = ParseLimits()
MB = 1024 * 1024


@pytest.fixture(scope="module")
def tesseract() -> TesseractReader:
    reader = TesseractReader(OcrConfig())
    if reader.missing is not None:
        pytest.fail(f"Tesseract must be installed for these tests (make setup installs it): {reader.missing}")
    return reader


@dataclass
class RecordingReader:
    """Stands in for Tesseract: says which page it was shown and remembers the image sizes."""

    max_pages: int = 50
    dpi: int = 200
    workers: int = 1
    seen: list[tuple[int, tuple[int, int], int]] = field(default_factory=list)

    def read(self, image: Image.Image, page: int, dpi: int) -> str:
        self.seen.append((page, image.size, dpi))
        return f"Recognised words of page {page}."


@dataclass
class SlowReader(RecordingReader):
    """Takes its time over each page and notes how many pages it is reading at once."""

    workers: int = 2
    fail_on: int = 0
    reading: int = 0
    most_at_once: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def read(self, image: Image.Image, page: int, dpi: int) -> str:
        with self.lock:
            self.reading += 1
            self.most_at_once = max(self.most_at_once, self.reading)
        try:
            time.sleep(0.3 if page % 2 else 0.1)  # odd pages are slower: completions come out of order
            if page == self.fail_on:
                raise DeadlineExceeded(f"page {page} took too long", reason="OCR_TIMEOUT")
            return super().read(image, page, dpi)
        finally:
            with self.lock:
                self.reading -= 1


def _error(data: bytes, file_type: FileType, ocr, limits: ParseLimits = LIMITS) -> DomainError:
    with pytest.raises(DomainError) as caught:
        parse(data, file_type, limits, ocr)
    return caught.value


def test_a_scanned_pdf_is_read_page_by_page(tesseract):
    data = make_scanned_pdf([["The warehouse in Leeds ships 4,200 parcels a day."],
                             ["Night shifts end at six in the morning."]])
    parsed = parse(data, FileType.PDF, LIMITS, tesseract)
    assert [s.page for s in parsed.sections] == [1, 2] and parsed.page_count == 2
    assert "warehouse in Leeds ships 4,200 parcels" in parsed.sections[0].text
    assert "Night shifts end at six" in parsed.sections[1].text
    assert "\x0c" not in parsed.sections[0].text  # Tesseract's page break is cleaned away


MEMO_LINES = [
    "Customs forms are due before the ship docks at Rotterdam.",
    "Every container needs its own bill of lading and a packing list.",
    "The harbour master inspects refrigerated cargo on Tuesdays.",
    "Late paperwork delays unloading by at least one full day.",
    "Questions about tariffs go to the brokerage desk on the second floor.",
    "Keep copies of every form for seven years after the shipment.",
]


def _turned(angle: int) -> bytes:
    out = io.BytesIO()
    make_page_image(MEMO_LINES).rotate(angle, expand=True).save(out, "PNG")
    return out.getvalue()


def test_pages_scanned_sideways_or_upside_down_are_read_upright(tesseract):
    # Orientation is detected from the page's text, so the page holds a paragraph, as real scans do.
    for angle in (90, 180):
        text = parse(_turned(angle), FileType.IMAGE, LIMITS, tesseract).sections[0].text
        assert "Customs forms are due before the ship docks" in text, angle
    upright_only = TesseractReader(OcrConfig(detect_orientation=False))
    text = "\n".join(s.text for s in parse(_turned(180), FileType.IMAGE, LIMITS, upright_only).sections)
    assert "Customs forms" not in text


def test_only_pages_without_a_text_layer_are_ocred():
    reader = RecordingReader()
    parsed = parse(make_scanned_pdf([None, ["scanned"], None]), FileType.PDF, LIMITS, reader)
    assert [page for page, _, _ in reader.seen] == [2]
    assert reader.seen[0][1:] == ((1700, 2200), 200)  # a letter page rendered at the reader's 200 dpi
    assert [s.page for s in parsed.sections] == [1, 2, 3]
    assert "harbour office" in parsed.sections[0].text and parsed.sections[1].text == "Recognised words of page 2."


def test_progress_is_reported_before_and_after_every_ocr_page():
    heard: list[tuple[int, int]] = []

    def hear(done: int, total: int) -> None:
        heard.append((done, total))

    parse(make_scanned_pdf([["a"], None, ["b"]]), FileType.PDF, LIMITS, RecordingReader(), hear)
    assert heard == [(0, 2), (1, 2), (2, 2)]
    heard.clear()
    parse(make_image([["a"], ["b"]], fmt="TIFF"), FileType.IMAGE, LIMITS, RecordingReader(), hear)
    assert heard == [(0, 2), (1, 2), (2, 2)]
    heard.clear()
    parse(make_pdf([["typed"]]), FileType.PDF, LIMITS, RecordingReader(), hear)
    assert heard == []  # no scan, no OCR progress


def test_pages_are_read_side_by_side_and_kept_in_page_order():
    reader = SlowReader(workers=2)
    heard: list[tuple[int, int]] = []
    parsed = parse(make_scanned_pdf([[str(n)] for n in range(5)]), FileType.PDF, LIMITS, reader,
                   lambda done, total: heard.append((done, total)))
    assert reader.most_at_once == 2
    assert [s.page for s in parsed.sections] == [1, 2, 3, 4, 5]
    assert [s.text for s in parsed.sections] == [f"Recognised words of page {n}." for n in range(1, 6)]
    assert heard == [(n, 5) for n in range(6)]  # counts of pages read, in order, whatever page finished
    tiff = make_image([["a"], ["b"], ["c"]], fmt="TIFF")
    single = SlowReader(workers=1)
    assert [s.page for s in parse(tiff, FileType.IMAGE, LIMITS, single).sections] == [1, 2, 3]
    assert single.most_at_once == 1


def test_a_failing_page_fails_the_document_and_stops_the_rest():
    reader = SlowReader(workers=2, fail_on=2)
    error = _error(make_scanned_pdf([[str(n)] for n in range(8)]), FileType.PDF, reader)
    assert (error.code, error.reason) == (grpc.StatusCode.DEADLINE_EXCEEDED, "OCR_TIMEOUT")
    assert len(reader.seen) < 7  # pages not yet started were dropped


def test_a_scanner_stamp_in_the_text_layer_does_not_hide_the_scan():
    reader = RecordingReader()
    parsed = parse(make_scanned_pdf([["scanned"], None], stamp="Scanned with CamScanner"), FileType.PDF, LIMITS,
                   reader)
    assert [page for page, _, _ in reader.seen] == [1]
    assert parsed.sections[0].text == "Recognised words of page 1."
    assert "harbour office" in parsed.sections[1].text  # a real text layer is kept as it is


def test_blank_pages_are_not_scans():
    reader = RecordingReader()
    error = _error(make_pdf([[], []]), FileType.PDF, reader)
    assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "NO_EXTRACTABLE_TEXT")
    assert reader.seen == []


def test_a_scan_without_ocr_is_a_failed_precondition_naming_the_fix():
    error = _error(make_scanned_pdf([["scanned"]]), FileType.PDF, None)
    assert (error.code, error.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "OCR_UNAVAILABLE")
    missing = TesseractReader(OcrConfig(tesseract_cmd="/nonexistent/tesseract"))
    error = _error(make_scanned_pdf([["scanned"]]), FileType.PDF, missing)
    assert error.reason == "OCR_UNAVAILABLE" and "apt-get install tesseract-ocr" in error.message
    assert _error(make_image([["a page"]]), FileType.IMAGE, None).reason == "OCR_UNAVAILABLE"


def test_a_missing_language_is_named(tesseract):
    reader = TesseractReader(OcrConfig(languages="eng+klingon"))
    assert reader.missing is not None and "klingon" in reader.missing
    assert reader_from(OcrConfig(enabled=False)) is None


def test_with_ocr_off_a_mixed_pdf_keeps_its_text_pages():
    parsed = parse(make_scanned_pdf([None, ["scanned"]]), FileType.PDF, LIMITS, None)
    assert [s.page for s in parsed.sections] == [1]


def test_too_many_scanned_pages_are_refused_before_any_ocr():
    reader = RecordingReader(max_pages=2)
    error = _error(make_scanned_pdf([["a"], ["b"], ["c"]]), FileType.PDF, reader)
    assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "TOO_MANY_OCR_PAGES")
    assert reader.seen == []


def test_a_poster_sized_page_renders_within_the_pixel_limit():
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=io.BytesIO(make_scanned_pdf([["poster"]])))
    writer.pages[0].scale_to(612 * 20, 792 * 20)  # 170 x 220 inches
    out = io.BytesIO()
    writer.write(out)
    reader = RecordingReader()
    parse(out.getvalue(), FileType.PDF, ParseLimits(max_image_pixels=4_000_000), reader)
    [(_, (width, height), dpi)] = reader.seen
    assert width * height <= 4_000_000 and dpi < 20


def test_a_png_and_a_multipage_tiff_are_read(tesseract):
    png = parse(make_image([["Invoice 7731 is due on the first of March."]]), FileType.IMAGE, LIMITS, tesseract)
    assert [s.page for s in png.sections] == [1] and "Invoice 7731 is due" in png.sections[0].text
    tiff = make_image([["First page of the fax."], ["Second page of the fax."]], fmt="TIFF")
    parsed = parse(tiff, FileType.IMAGE, LIMITS, tesseract)
    assert [s.page for s in parsed.sections] == [1, 2] and parsed.page_count == 2
    assert "Second page of the fax" in parsed.sections[1].text


def test_images_beyond_the_pixel_limit_are_refused_undecoded():
    reader = RecordingReader()
    for width, height in ((10_000, 10_000), (100_000, 100_000)):  # our limit; Pillow's bomb guard
        error = _error(png_header_only(width, height), FileType.IMAGE, reader)
        assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "IMAGE_TOO_LARGE")
    assert reader.seen == []


def test_broken_images_are_corrupt_files():
    reader = RecordingReader()
    truncated = make_image([["cut short"]])[:400]
    for data in (b"\x89PNG\r\n\x1a\n" + b"garbage" * 20, truncated):
        error = _error(data, FileType.IMAGE, reader)
        assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "CORRUPT_FILE")


def test_an_image_upload_is_typed_by_its_bytes():
    jpeg = io.BytesIO()
    Image.new("L", (20, 20), 255).save(jpeg, "JPEG")
    upload = validate_upload("photo.png", "image/png", jpeg.getvalue(), 10 * MB)
    assert (upload.file_type, upload.content_type) == (FileType.IMAGE, "image/jpeg")
    with pytest.raises(DomainError) as caught:
        validate_upload("notes.png", "image/png", b"just some text", 10 * MB)
    assert caught.value.reason == "CORRUPT_FILE"


def test_tesseract_is_what_setup_installs():
    assert shutil.which("tesseract"), "tools/system_packages.sh (make setup) installs tesseract-ocr"
