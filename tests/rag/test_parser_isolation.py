"""Hostile PDFs against the parse limits: pages measured before PDFium reads them, worker processes
under memory and CPU limits, and the pipeline storing nothing of a refused document."""

from __future__ import annotations

import asyncio
import dataclasses
import pathlib
import time

import grpc
import psutil
import pytest

from services.rag.ingest.formats import FileType
from services.rag.ingest.parser_pool import ParserPool, ParserPoolConfig
from services.rag.ingest.parser_worker import ParseJob
from services.rag.ingest.parsers.limits import ParseLimits
from services.rag.ingest.parsers.pdf import parse_pdf
from services.runtime.errors import DomainError

from .hostile_pdfs import drawing_bomb, form_bomb, plain_pdf, text_bomb
from .probes import blobs_held, collect

FIXTURES = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "docs"
UNBOUNDED_PAGES = dataclasses.replace(ParseLimits(), max_page_chars=10**12, max_page_operators=10**12,
                                      max_page_content_bytes=10**12, max_content_bytes=10**12, max_operators=10**12)
"""No page limits: what reaches PDFium is bounded by the worker's limits alone."""


@pytest.mark.parametrize(("make", "reason"), [
    (lambda: text_bomb(200), "PDF_PAGE_TOO_MUCH_TEXT"),
    (lambda: drawing_bomb(100), "PDF_PAGE_TOO_MANY_OPERATORS"),
    (form_bomb, "PDF_PAGE_TOO_MUCH_TEXT"),
])
def test_a_pdf_bomb_is_refused_before_pdfium_reads_its_page(make, reason) -> None:
    bomb = make()
    assert len(bomb) < 1_000_000
    before = psutil.Process().memory_info().rss
    with pytest.raises(DomainError) as caught:
        parse_pdf(bomb, ParseLimits())
    error = caught.value
    assert (error.code, error.reason, error.metadata["page"]) == (grpc.StatusCode.INVALID_ARGUMENT, reason, "1")
    assert "page 1" in error.message
    assert psutil.Process().memory_info().rss - before < 100 * 2**20  # PDFium would take gigabytes


def test_page_limits_let_ordinary_pdfs_through() -> None:
    assert "solar panels" in parse_pdf(plain_pdf(), ParseLimits()).sections[0].text
    fixtures = sorted(FIXTURES.glob("*.pdf")) if FIXTURES.is_dir() else []
    for path in fixtures:
        if "encrypted" in path.name:
            continue
        try:
            parse_pdf(path.read_bytes(), ParseLimits())
        except DomainError as exc:
            assert not exc.reason.startswith("PDF_"), (path.name, exc.reason)


def test_a_document_wide_content_limit() -> None:
    limits = dataclasses.replace(ParseLimits(), max_content_bytes=2 << 20)
    with pytest.raises(DomainError) as caught:
        parse_pdf(drawing_bomb(3), limits)
    assert caught.value.reason in ("PDF_CONTENT_TOO_LARGE", "PDF_PAGE_TOO_MANY_OPERATORS")


@pytest.fixture
def pool():
    opened: list[ParserPool] = []

    def make(**config) -> ParserPool:
        opened.append(ParserPool(ParserPoolConfig(**config)))
        return opened[-1]

    yield make
    for each in opened:
        each.close()


async def test_a_worker_parses_as_this_process_does(pool) -> None:
    parsers = pool(workers=1)
    data = plain_pdf()
    parsed = await parsers.parse(ParseJob(FileType.PDF, data, ParseLimits(), "d1"))
    assert parsed == parse_pdf(data, ParseLimits())
    with pytest.raises(DomainError) as caught:  # a refusal comes back as the same domain error
        await parsers.parse(ParseJob(FileType.PDF, text_bomb(50), ParseLimits(), "d2"))
    assert caught.value.reason == "PDF_PAGE_TOO_MUCH_TEXT" and caught.value.metadata["page"] == "1"
    assert parsers.started == 1  # one worker did both


async def test_a_bomb_past_the_page_limits_dies_in_its_worker_not_here(pool) -> None:
    parsers = pool(workers=1, memory_mb=200)
    before = psutil.Process().memory_info().rss
    with pytest.raises(DomainError) as caught:  # ~800 MB in PDFium
        await parsers.parse(ParseJob(FileType.PDF, text_bomb(5), UNBOUNDED_PAGES, "bomb"))
    error = caught.value
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert error.reason in ("PARSER_CRASHED", "PARSER_MEMORY_LIMIT"), error
    assert psutil.Process().memory_info().rss - before < 100 * 2**20
    # The pool goes on with fresh workers.
    assert (await parsers.parse(ParseJob(FileType.PDF, plain_pdf(), ParseLimits(), "next"))).char_count > 0


async def test_a_page_past_its_cpu_limit_is_refused_and_its_worker_killed(pool) -> None:
    parsers = pool(workers=1, memory_mb=0, page_cpu_s=0.3)
    started = time.monotonic()
    with pytest.raises(DomainError) as caught:
        await parsers.parse(ParseJob(FileType.PDF, text_bomb(5), UNBOUNDED_PAGES, "slow"))
    assert (caught.value.reason, caught.value.metadata["page"]) == ("PDF_PAGE_CPU_LIMIT", "1")
    assert time.monotonic() - started < 30


async def test_a_worker_that_grew_is_retired_so_its_memory_returns(pool) -> None:
    parsers = pool(workers=1, recycle_rss_mb=64)  # any worker holds more than 64 MB after a job
    await parsers.parse(ParseJob(FileType.PDF, plain_pdf(), ParseLimits(), "a"))
    await parsers.parse(ParseJob(FileType.PDF, plain_pdf("Another page."), ParseLimits(), "b"))
    assert parsers.started == 2
    kept = pool(workers=1)
    for name in "ab":
        await kept.parse(ParseJob(FileType.PDF, plain_pdf(name), ParseLimits(), name))
    assert kept.started == 1


async def test_four_bombs_at_once_leave_a_neighbour_unaffected(open_runtime) -> None:
    runtime = open_runtime(parser_isolation=True)

    async def bomb(n: int):
        with pytest.raises(DomainError) as caught:
            await collect(runtime.pipeline.upload("mallory", f"bomb-{n}.pdf", "application/pdf", text_bomb(200)))
        return caught.value

    refusals, neighbour = await asyncio.gather(
        asyncio.gather(*(bomb(n) for n in range(4))),
        collect(runtime.pipeline.upload("acme", "memo.pdf", "application/pdf", plain_pdf())),
    )
    assert {(e.code, e.reason) for e in refusals} == {(grpc.StatusCode.INVALID_ARGUMENT, "PDF_PAGE_TOO_MUCH_TEXT")}
    assert neighbour[-1].document.chunk_count == 1
    # Nothing of a refused document is stored.
    assert runtime.metadata.count_documents("mallory") == 0 and blobs_held(runtime, "mallory") == 0
