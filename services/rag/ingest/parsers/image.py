"""Page images (PNG, JPEG, TIFF, WebP): every frame is a page, read by OCR.

The pixel count is checked from the header before anything is decoded, so a small file that
declares a gigantic canvas (a decompression bomb) is refused without allocating it.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator

from PIL import Image, ImageSequence, UnidentifiedImageError

from services.rag.documents import ParsedDocument, Section
from services.rag.ingest.formats import FileType, corrupt
from services.rag.ingest.ocr import OcrProgress, Page, PageReader, read_pages, too_many_pages, unavailable
from services.rag.ingest.parsers.cleaning import clean_text
from services.rag.ingest.parsers.limits import ParseLimits, too_large
from services.rag.ingest.parsers.reflow import reflow
from services.rag.ingest.parsers.tables import inline_row_starts


def parse_image(data: bytes, limits: ParseLimits, ocr: PageReader | None,
                on_page: OcrProgress | None = None) -> ParsedDocument:
    if ocr is None:
        raise unavailable("it is switched off")
    try:
        with warnings.catch_warnings():
            # Pillow warns from 89M pixels; every frame's size is checked against our own limit below.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as exc:
        raise too_large("pixels in one page image", limits.max_image_pixels, "IMAGE_TOO_LARGE") from exc
    except (UnidentifiedImageError, OSError) as exc:
        raise corrupt(FileType.IMAGE, str(exc)) from exc
    with image:
        frames = getattr(image, "n_frames", 1)
        if frames > ocr.max_pages:
            raise too_many_pages(frames, ocr.max_pages)

        def pages() -> Iterator[Page]:
            for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
                width, height = frame.size
                if width * height > limits.max_image_pixels:
                    raise too_large("pixels in one page image", limits.max_image_pixels, "IMAGE_TOO_LARGE")
                try:
                    page = frame.convert("L")
                except OSError as exc:  # truncated or undecodable pixel data
                    raise corrupt(FileType.IMAGE, str(exc)) from exc
                # Resolution tags of images are often wrong (screenshots say 72): Tesseract estimates it.
                yield number, page, 0

        texts = read_pages(ocr, pages(), frames, on_page)
    cleaned = {number: reflow(clean_text(text)) for number, text in sorted(texts.items())}
    sections = [Section(text=text, page=number, row_starts=inline_row_starts(text))
                for number, text in cleaned.items() if text.strip()]
    if sum(len(s.text) for s in sections) > limits.max_text_chars:
        raise too_large("extracted characters", limits.max_text_chars, "TOO_MUCH_TEXT")
    return ParsedDocument(tuple(sections), page_count=frames)
