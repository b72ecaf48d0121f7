"""OCR benchmark: what reading a scan costs next to reading a text layer, and how much of the text survives.

The pages are real prose: SQuAD 2.0 distractor paragraphs (``../shared/data/squad``), wrapped
and drawn at about 11 pt on letter pages rendered at 200 dpi, i.e. clean scans. Each page is
parsed twice through the production parser (``services.rag.ingest.parsers.parse``):

- as a clean scan: a PDF page that is only an image, read by Tesseract;
- as a degraded scan: the same image turned by 0.8 degrees, blurred and saved as a low-quality
  JPEG, as an office scanner or a phone might deliver it;
- as a text layer: the same lines as PDF text.

Both are timed in the same run, so the ratio holds on a noisy machine. Then one PDF of up to
10 of those scanned pages is parsed whole with 1 and with 2 OCR workers (pages read side by
side), alternating, to show what the parallel reading buys on this machine. Word accuracy is the
share of the source's words that the OCR text recovers in order (difflib's longest matching
blocks over word lists, lower-cased, punctuation stripped). The fixture scan
``single_table.pdf`` (a real scanned table) is timed too.

    python -m bench.ocr_bench [--pages 20]

Writes bench/results/ocr-<date>.json and prints it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import gzip
import io
import json
import pathlib
import re
import statistics
import textwrap
import time

from bench.environment import describe
from services.rag.ingest.formats import FileType
from services.rag.ingest.ocr import OcrConfig, TesseractReader
from services.rag.ingest.parsers import ParseLimits, parse

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared"
DISTRACTORS = SHARED / "data" / "squad" / "distractors.json.gz"
FIXTURE_SCAN = SHARED / "fixtures" / "docs" / "single_table.pdf"
LINES_PER_PAGE = 24
CHARS_PER_LINE = 68
_WORD = re.compile(r"[a-z0-9]+")


def pages_of_prose(count: int) -> list[list[str]]:
    with gzip.open(DISTRACTORS, "rt") as fh:
        paragraphs = [p["context"] for article in json.load(fh)["data"] for p in article["paragraphs"]]
    lines = [line for paragraph in paragraphs for line in [*textwrap.wrap(paragraph, CHARS_PER_LINE), ""]]
    return [lines[i * LINES_PER_PAGE:(i + 1) * LINES_PER_PAGE] for i in range(count)]


def scanned_pdf(lines: list[str], degraded: bool = False) -> bytes:
    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    page = Image.new("L", (1700, 2200), 255)
    draw = ImageDraw.Draw(page)
    font = ImageFont.load_default(size=32)
    for number, line in enumerate(lines):
        draw.text((150, 150 + 78 * number), line, font=font, fill=0)
    if degraded:
        page = page.rotate(0.8, resample=Image.Resampling.BICUBIC, fillcolor=255).filter(ImageFilter.GaussianBlur(1.2))
        jpeg = io.BytesIO()
        page.save(jpeg, "JPEG", quality=30)
        page = Image.open(jpeg)
    out = io.BytesIO()
    page.save(out, "PDF", resolution=200)
    return out.getvalue()


def text_pdf(lines: list[str]) -> bytes:
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    page = writer.add_blank_page(612, 792)
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    fonts = DictionaryObject({NameObject("/F1"): font})
    page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): fonts})
    escaped = [line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for line in lines]
    stream = DecodedStreamObject()
    stream.set_data("\n".join(["BT", "/F1 11 Tf", "28 TL", "54 738 Td", *(f"({e}) Tj T*" for e in escaped), "ET"])
                    .encode("latin-1", errors="replace"))
    page.replace_contents(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def word_accuracy(source: str, recognised: str) -> float:
    truth, seen = _WORD.findall(source.lower()), _WORD.findall(recognised.lower())
    matcher = difflib.SequenceMatcher(None, truth, seen, autojunk=False)
    return sum(block.size for block in matcher.get_matching_blocks()) / max(len(truth), 1)


def _timed(data: bytes, reader: TesseractReader) -> tuple[float, str]:
    started = time.perf_counter()
    parsed = parse(data, FileType.PDF, ParseLimits(), reader)
    return time.perf_counter() - started, "\n".join(s.text for s in parsed.sections)


def multipage_pdf(pages: list[list[str]]) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for lines in pages:
        writer.add_page(PdfReader(io.BytesIO(scanned_pdf(lines))).pages[0])
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def workers_comparison(pages: list[list[str]], rounds: int = 2) -> dict:
    data = multipage_pdf(pages[:10])
    seconds: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(rounds):
        for workers in seconds:
            seconds[workers].append(_timed(data, TesseractReader(OcrConfig(workers=workers)))[0])
    best = {workers: min(times) for workers, times in seconds.items()}
    return {"pages": min(len(pages), 10), "rounds": rounds,
            "seconds_best": {str(w): round(t, 2) for w, t in best.items()},
            "pages_per_second": {str(w): round(min(len(pages), 10) / t, 3) for w, t in best.items()},
            "speedup_2_vs_1": round(best[1] / best[2], 2)}


def run(page_count: int) -> dict:
    reader = TesseractReader(OcrConfig())
    if reader.missing is not None:
        raise SystemExit(f"OCR is unavailable: {reader.missing}")
    pages = pages_of_prose(page_count)
    scans, degraded_scans, texts, accuracies, degraded_accuracies = [], [], [], [], []
    for lines in pages:
        source = " ".join(lines)
        scan_s, recognised = _timed(scanned_pdf(lines), reader)
        degraded_s, degraded_text = _timed(scanned_pdf(lines, degraded=True), reader)
        text_s, _ = _timed(text_pdf(lines), reader)
        scans.append(scan_s)
        degraded_scans.append(degraded_s)
        texts.append(text_s)
        accuracies.append(word_accuracy(source, recognised))
        degraded_accuracies.append(word_accuracy(source, degraded_text))
        print(f"page {len(scans):>3}: scan {scan_s * 1000:7.0f} ms (degraded {degraded_s * 1000:7.0f} ms), "
              f"text layer {text_s * 1000:5.1f} ms, word accuracy {accuracies[-1]:.3f} "
              f"(degraded {degraded_accuracies[-1]:.3f})")
    fixture = {}
    if FIXTURE_SCAN.exists():
        seconds, recognised = _timed(FIXTURE_SCAN.read_bytes(), reader)
        fixture = {"file": FIXTURE_SCAN.name, "seconds": round(seconds, 3), "characters": len(recognised)}
    workers = workers_comparison(pages)
    print(f"one {workers['pages']}-page scan: {workers['seconds_best']} s by workers, "
          f"x{workers['speedup_2_vs_1']} with 2")
    return {
        "pages": page_count,
        "document_by_workers": workers,
        "words_per_page": round(statistics.mean(len(_WORD.findall(" ".join(p).lower())) for p in pages), 1),
        "scan_ms_per_page": {"p50": round(statistics.median(scans) * 1000, 1), "max": round(max(scans) * 1000, 1)},
        "text_layer_ms_per_page": {"p50": round(statistics.median(texts) * 1000, 2),
                                   "max": round(max(texts) * 1000, 2)},
        "degraded_scan_ms_per_page": {"p50": round(statistics.median(degraded_scans) * 1000, 1),
                                      "max": round(max(degraded_scans) * 1000, 1)},
        "scan_pages_per_second": round(len(scans) / sum(scans), 3),
        "scan_vs_text_layer_time": round(sum(scans) / sum(texts), 1),
        "word_accuracy": {"mean": round(statistics.mean(accuracies), 4), "min": round(min(accuracies), 4)},
        "degraded_word_accuracy": {"mean": round(statistics.mean(degraded_accuracies), 4),
                                   "min": round(min(degraded_accuracies), 4)},
        "fixture_scan": fixture,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=20)
    args = parser.parse_args()
    today = dt.date.today().isoformat()
    config = OcrConfig()
    report = {"benchmark": "ocr", "date": today, "environment": describe(), "dpi": config.dpi,
              "languages": config.languages, "detect_orientation": config.detect_orientation, **run(args.pages)}
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"ocr-{today}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "environment"}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
