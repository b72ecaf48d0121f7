"""Structure at ingestion, before vs after: parse time per fixture and gold answers found in one chunk.

Two worker processes parse and chunk the same fixture documents side by side, one with the rag
ingestion code of a base commit (extracted with ``git archive``), one with the working tree's.
Calls alternate between them, ``--repeat`` times per document, so the shared machine's noise
hits both alike; the report compares medians (ratios). For every answerable question of
``docqa/dev.json`` it then checks whether one chunk of its document holds a gold answer string
(and, for list questions, all of the items): what the answer engine can at best read from a
single retrieved chunk.

    python -m bench.ingest_structure --base 1c29699 --out bench/results/ingest-structure.md

Scans (single_table.pdf) need OCR: with ``--ocr`` both sides read them with Tesseract; without it they
show as errors on both sides.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]

_WORKER = r"""
import json, sys, time
from services.rag.ingest.chunking import ChunkerConfig, chunk_sections
from services.rag.ingest.formats import validate_upload
from services.rag.ingest.parsers import ParseLimits, parse
limits, chunker = ParseLimits(table_block_chars=900), ChunkerConfig(size=900, overlap=120)
ocr = None
if sys.argv[1:] == ["--ocr"]:
    from services.rag.ingest.ocr import OcrConfig, reader_from
    ocr = reader_from(OcrConfig())
for line in sys.stdin:
    path = json.loads(line)
    data = open(path, "rb").read()
    try:
        upload = validate_upload(path.rsplit("/", 1)[-1], "", data, 1 << 30)
        start = time.perf_counter()
        parsed = parse(upload.data, upload.file_type, limits, ocr)
        seconds = time.perf_counter() - start
        spans = chunk_sections(parsed.sections, chunker)
        chunks = [parsed.sections[s.section_index].text[s.start:s.end] for s in spans]
        headings = [" / ".join(parsed.sections[s.section_index].heading_path) for s in spans]
        out = {"seconds": seconds, "chunks": chunks, "headings": headings}
    except Exception as exc:
        out = {"error": f"{type(exc).__name__}: {getattr(exc, 'reason', '')} {exc}"[:200]}
    print(json.dumps(out), flush=True)
"""


class Worker:
    def __init__(self, code_root: pathlib.Path, ocr: bool) -> None:
        env = dict(os.environ, PYTHONPATH=str(code_root))
        argv = [sys.executable, "-c", _WORKER, *(["--ocr"] if ocr else [])]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                     cwd=code_root)

    def run(self, path: pathlib.Path) -> dict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(str(path)) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


_STOP = frozenset("what which when where does have with from that this were many much according their there "
                  "about into under over they them than then been being whom whose your also only".split())


def _terms(question: str) -> set[str]:
    """The question's content words, cut to 5 letters (a crude stem)."""
    words = re.findall(r"[a-z0-9][a-z0-9.\-]*[a-z0-9]|[a-z0-9]", question.lower())
    return {w[:5] for w in words if len(w) >= 4 and w not in _STOP}


def _found(item: dict, chunks: list[str], headings: list[str]) -> tuple[bool, bool | None, bool]:
    """(a gold answer in one chunk, all list items in one chunk or None for non-list questions,
    a gold answer in a chunk that, with its heading path, holds half or more of the question's
    content words)."""
    normed = [_norm(c) for c in chunks]
    any_hit = any(_norm(a) in c for a in item["answers"] for c in normed)
    items = item.get("all_items")
    every = None if not items else any(all(_norm(a) in c for a in items) for c in normed)
    terms = _terms(item["question"])
    with_terms = False
    for chunk, heading in zip(normed, headings, strict=True):
        if any(_norm(a) in chunk for a in item["answers"]):
            context = f"{_norm(heading)} {chunk}"
            present = {t for t in terms if t in context}
            if not terms or len(present) >= 0.5 * len(terms):
                with_terms = True
                break
    return any_hit, every, with_terms


def _as_cell(item: dict, chunks: list[str]) -> bool:
    """A gold answer is a whole cell of a ``cell | cell`` row in a chunk whose first line is a
    ``cell | cell`` header row: the table convention the answer engine reads by row and column."""
    answers = {_norm(a) for a in item["answers"]}
    for chunk in chunks:
        lines = chunk.split("\n")
        if " | " not in lines[0]:
            continue
        for line in lines[1:]:
            if " | " in line and answers & {_norm(c) for c in line.split(" | ")}:
                return True
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="1c29699", help="commit whose services/ is 'before'")
    parser.add_argument("--docs", default=str(ROOT.parent / "shared" / "fixtures" / "docs"))
    parser.add_argument("--dev", default=str(ROOT.parent / "shared" / "data" / "docqa" / "dev.json"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ocr", action="store_true", help="read scans with Tesseract (both sides)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "ingest-structure.md"))
    args = parser.parse_args()
    docs = pathlib.Path(args.docs)
    dev = json.loads(pathlib.Path(args.dev).read_text())
    with tempfile.TemporaryDirectory(prefix="ingest-before-") as tmp:
        archive = subprocess.run(["git", "archive", args.base, "services"], cwd=ROOT, check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        workers = {"before": Worker(pathlib.Path(tmp), args.ocr), "after": Worker(ROOT, args.ocr)}
        try:
            results = {name: {} for name in workers}
            for path in sorted(p for p in docs.iterdir() if p.is_file()):
                for _ in range(args.repeat):
                    for name, worker in workers.items():
                        out = worker.run(path)
                        slot = results[name].setdefault(path.name, {"seconds": [], "chunks": [], "error": ""})
                        if "error" in out:
                            slot["error"] = out["error"]
                        else:
                            slot["seconds"].append(out["seconds"])
                            slot["chunks"] = out["chunks"]
                            slot["headings"] = out["headings"]
        finally:
            for worker in workers.values():
                worker.close()
    report = _report(results, dev, args)
    pathlib.Path(args.out).write_text(report)
    pathlib.Path(args.out).with_suffix(".json").write_text(json.dumps(_summary(results, dev), indent=1))
    print(report)


def _summary(results: dict, dev: list[dict]) -> dict:
    out: dict = {"files": {}, "questions": []}
    for name in sorted(results["after"]):
        row = {}
        for side in ("before", "after"):
            slot = results[side][name]
            row[side] = {"median_s": statistics.median(slot["seconds"]) if slot["seconds"] else None,
                         "chunks": len(slot["chunks"]), "error": slot["error"]}
        out["files"][name] = row
    for item in dev:
        if not item["answers"]:
            continue
        entry = {"id": item["id"], "file": item["file"], "kind": item["kind"]}
        for side in ("before", "after"):
            slot = results[side].get(item["file"], {})
            chunks, headings = slot.get("chunks", []), slot.get("headings", [])
            entry[side], entry[f"{side}_all_items"], entry[f"{side}_with_terms"] = _found(item, chunks, headings)
            entry[f"{side}_cell"] = _as_cell(item, chunks)
        out["questions"].append(entry)
    return out


def _report(results: dict, dev: list[dict], args) -> str:
    summary = _summary(results, dev)
    lines = [
        "# Structure at ingestion: before vs after",
        "",
        f"`python -m bench.ingest_structure --base {args.base} --repeat {args.repeat}{' --ocr' if args.ocr else ''}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "Both sides ran in one run, alternating per call, on the shared 2-core machine (other work was running:",
        "compare the ratio, not the absolute times). Parse time excludes chunking"
        + ("; scans read by Tesseract on both sides." if args.ocr else "; no OCR."),
        "",
        "| file | before s | after s | after/before | chunks before | chunks after |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    tb = ta = 0.0
    for name, row in summary["files"].items():
        b, a = row["before"], row["after"]
        if b["error"] or a["error"]:
            lines.append(f"| {name} | {b['error'] or '-'} | {a['error'] or '-'} | | | |")
            continue
        tb += b["median_s"]
        ta += a["median_s"]
        ratio = a["median_s"] / b["median_s"] if b["median_s"] else float("nan")
        lines.append(f"| {name} | {b['median_s']:.4f} | {a['median_s']:.4f} | {ratio:.1f}x | {b['chunks']} | {a['chunks']} |")
    lines.append(f"| **all** | {tb:.3f} | {ta:.3f} | {ta / tb:.1f}x | | |")
    questions = summary["questions"]
    hit_b = sum(q["before"] for q in questions)
    hit_a = sum(q["after"] for q in questions)
    lists = [q for q in questions if q["before_all_items"] is not None]
    tables = [q for q in questions if q["kind"] == "table"]
    lines += [
        "",
        f"Gold answer string inside one chunk (answerable dev questions, {len(questions)}): "
        f"before {hit_b}/{len(questions)}, after {hit_a}/{len(questions)}.",
        f"Gold answer in a chunk that (with its heading path) holds half or more of the question's content words: before "
        f"{sum(q['before_with_terms'] for q in questions)}/{len(questions)}, after {sum(q['after_with_terms'] for q in questions)}/{len(questions)}.",
        f"Table questions whose gold answer is a whole cell of a row, in a chunk that starts with the header row "
        f"({len(tables)}): before {sum(q['before_cell'] for q in tables)}/{len(tables)}, "
        f"after {sum(q['after_cell'] for q in tables)}/{len(tables)}.",
        f"All items of a list question inside one chunk ({len(lists)}): before "
        f"{sum(bool(q['before_all_items']) for q in lists)}/{len(lists)}, after {sum(bool(q['after_all_items']) for q in lists)}/{len(lists)}.",
        "",
        "| id | file | kind | in a chunk before | after | with the question's words before | after | as a cell before | after |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]

    def yn(v: bool) -> str:
        return "yes" if v else "no"

    for q in questions:
        if q["before"] != q["after"] or q["before_with_terms"] != q["after_with_terms"] or not q["after_with_terms"] \
                or q["before_cell"] != q["after_cell"]:
            lines.append(f"| {q['id']} | {q['file']} | {q['kind']} | {yn(q['before'])} | {yn(q['after'])} | "
                         f"{yn(q['before_with_terms'])} | {yn(q['after_with_terms'])} | "
                         f"{yn(q['before_cell'])} | {yn(q['after_cell'])} |")
    lines.append("")
    lines.append("(Only questions whose outcome changed or that are still missed are listed.)")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
