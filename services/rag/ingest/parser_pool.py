"""Parsing in worker processes, so no document can take the service's memory or CPU with it.

A hostile file that passes every format check can still make a parser library allocate gigabytes
or spin for minutes (one 680 KB PDF: 2.5 GB and 40-90 s in PDFium), and memory a process once
held stays with it. So documents are parsed in long-lived worker processes (``parser_worker``),
each under an address-space limit, timed from here:

- a worker past its memory limit gets MemoryError or dies; a worker past ``page_cpu_s`` of CPU on
  one PDF page, or ``document_cpu_s`` on one document, is killed. Either way the document is refused
  with INVALID_ARGUMENT and a precise reason (the service itself never grows);
- a worker that dies of anything else (a crash in a parser library, a kill from outside) is
  replaced and the document tried once more in the new one; a second death refuses it
  (``PARSER_CRASHED``);
- a worker is retired, so its memory goes back to the system, when it holds more than
  ``recycle_rss_mb`` after a job (a large document grew its heap) or has done ``recycle_jobs`` jobs;
  workers are started when needed and kept idle between jobs, since starting one costs about a
  second of CPU (its imports) against a few milliseconds for a small document.

``workers`` documents are parsed at once; others wait for a free worker. Recordings are not sent
here: their transcriber is a model held in the service (``parsers.audio``).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection

import psutil

from services.rag.documents import ParsedDocument
from services.rag.ingest.ocr import OcrProgress
from services.rag.ingest.parser_worker import ParseJob, RefusalInfo
from services.runtime import domain_metrics
from services.runtime.child_exec import spawn_argv
from services.runtime.errors import InvalidArgument

log = logging.getLogger("docuthinker.rag.ingest")

_POLL_S = 0.05
_CPU_CHECK_S = 0.2
_START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ParserPoolConfig:
    workers: int = 2
    """Documents parsed at once, each in its own process."""
    memory_mb: int = 1024
    """Memory (address space) one worker may add to what it holds idle; 0: no limit."""
    page_cpu_s: float = 20.0
    """CPU seconds PDFium may spend reading one PDF page."""
    document_cpu_s: float = 300.0
    """CPU seconds one document's parsing may take (OCR's Tesseract processes not included: they have
    their own per-page timeout)."""
    recycle_rss_mb: int = 400
    """A worker holding more than this after a job is retired (its memory returns to the system)."""
    recycle_jobs: int = 500
    """Jobs after which a worker is retired anyway."""


class _WorkerDied(Exception):
    def __init__(self, how: str) -> None:
        super().__init__(how)
        self.how = how


class _Worker:
    def __init__(self, config: ParserPoolConfig) -> None:
        ours, theirs = socket.socketpair()
        argv = [sys.executable, "-m", "services.rag.ingest.parser_worker", "--fd", str(theirs.fileno()),
                "--memory-mb", str(config.memory_mb)]
        try:
            self.process = subprocess.Popen(spawn_argv(argv), pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL)
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.jobs = 0
        if not self.conn.poll(_START_TIMEOUT_S):
            self.kill()
            raise RuntimeError("the parser worker did not start")
        try:
            kind, pid = self.conn.recv()
        except EOFError:
            raise RuntimeError(f"the parser worker exited at start ({self.process.wait()})") from None
        self.ps = psutil.Process(pid)

    def cpu_s(self) -> float:
        try:
            times = self.ps.cpu_times()
        except psutil.Error:
            return 0.0
        return times.user + times.system

    def rss_mb(self) -> float:
        try:
            return self.ps.memory_info().rss / 2**20
        except psutil.Error:
            return 0.0

    def died(self) -> str:
        """How the process ended (it has, or is about to)."""
        try:
            code = self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.process.wait()
        self.conn.close()
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with code {code}"

    def stop(self) -> None:
        try:
            self.conn.send(None)
            self.process.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()
        self.conn.close()

    def kill(self) -> None:
        try:
            self.process.kill()
            self.process.wait()
        except OSError:
            pass


class ParserPool:
    def __init__(self, config: ParserPoolConfig) -> None:
        self.config = config
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._slots: asyncio.Semaphore | None = None
        self._closed = False
        self.started = 0
        """Workers started so far (the benchmark and tests read it)."""

    async def parse(self, job: ParseJob, on_ocr_page: OcrProgress | None = None,
                    before: Callable[[], None] = lambda: None) -> ParsedDocument:
        """Parses ``job`` in a worker, after ``before`` (in the thread that waits for the worker); raises the
        parser's domain error, or INVALID_ARGUMENT when the document passes a worker's limits."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.config.workers)
        async with self._slots:
            return await asyncio.to_thread(self._parse, job, on_ocr_page, before)

    def warm(self) -> None:
        """Starts the workers ahead of the first document (blocking: run it in a thread)."""
        with self._lock:
            missing = self.config.workers - len(self._idle)
        for _ in range(missing):
            self._give_back(self._start())

    def close(self) -> None:
        self._closed = True
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.stop()

    # -- in a worker thread ------------------------------------------------------------
    def _parse(self, job: ParseJob, on_ocr_page: OcrProgress | None, before: Callable[[], None]) -> ParsedDocument:
        before()
        deaths: list[str] = []
        while True:
            worker = self._take()
            try:
                parsed = self._run(worker, job, on_ocr_page)
            except _WorkerDied as died:
                deaths.append(died.how)
                log.warning("parser worker died", extra={"fields": {
                    "document_id": job.document_id, "how": died.how, "attempt": len(deaths)}})
                if len(deaths) < 2:
                    continue
                raise crashed(deaths, self.config.memory_mb) from None
            except BaseException:
                self._give_back(worker)
                raise
            self._give_back(worker)
            return parsed

    def _run(self, worker: _Worker, job: ParseJob, on_ocr_page: OcrProgress | None) -> ParsedDocument:
        try:
            worker.conn.send(job)
        except OSError:
            raise _WorkerDied(worker.died()) from None
        worker.jobs += 1
        config = self.config
        started = page_started = worker.cpu_s()
        page = 0
        checked = time.monotonic()
        ocr_pages = 0
        while True:
            try:
                ready = worker.conn.poll(_POLL_S)
                message = worker.conn.recv() if ready else None
            except (EOFError, OSError):
                raise _WorkerDied(worker.died()) from None
            if message is not None:
                kind = message[0]
                if kind == "ok":
                    domain_metrics.OCR_PAGES.inc(ocr_pages)
                    return message[1]
                if kind == "refused":
                    info: RefusalInfo = message[1]
                    if message[2]:
                        worker.jobs = config.recycle_jobs  # the worker exits after a refusal at its limit
                    raise info.error()
                if kind == "page":
                    page, page_started = message[1], worker.cpu_s()
                elif kind == "ocr" and on_ocr_page is not None:
                    ocr_pages = message[1]
                    on_ocr_page(message[1], message[2])
                continue
            if time.monotonic() - checked < _CPU_CHECK_S:
                continue
            checked = time.monotonic()
            if worker.process.poll() is not None:
                raise _WorkerDied(worker.died())
            now = worker.cpu_s()
            if page and now - page_started > config.page_cpu_s:
                worker.kill()
                worker.conn.close()
                raise cpu_refusal(f"page {page}", config.page_cpu_s, "PDF_PAGE_CPU_LIMIT", page=str(page))
            if now - started > config.document_cpu_s:
                worker.kill()
                worker.conn.close()
                raise cpu_refusal("the document", config.document_cpu_s, "PARSE_CPU_LIMIT")

    def _take(self) -> _Worker:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self._start()

    def _start(self) -> _Worker:
        worker = _Worker(self.config)
        with self._lock:
            self.started += 1
        return worker

    def _give_back(self, worker: _Worker) -> None:
        """Keeps the worker for the next job, or retires it (its memory back to the system)."""
        if worker.process.poll() is not None or worker.conn.closed:
            if not worker.conn.closed:
                worker.conn.close()
            return
        retire = (self._closed or worker.jobs >= self.config.recycle_jobs
                  or worker.rss_mb() > self.config.recycle_rss_mb)
        with self._lock:
            keep = not retire and len(self._idle) < self.config.workers  # a start-up race may have made extras
            if keep:
                self._idle.append(worker)
        if not keep:
            worker.stop()


def cpu_refusal(what: str, limit_s: float, reason: str, **metadata: str) -> InvalidArgument:
    return InvalidArgument(
        f"reading {what} took more than the parser's {limit_s:g} CPU seconds",
        reason=reason, metadata={"limit_s": f"{limit_s:g}", **metadata},
    )


def crashed(deaths: list[str], memory_mb: int) -> InvalidArgument:
    return InvalidArgument(
        f"the document killed the parser process twice ({'; '.join(deaths)}): it needs more than the parser's "
        f"{memory_mb} MB of memory, or it crashes the parser library",
        reason="PARSER_CRASHED", metadata={"limit_mb": str(memory_mb), "deaths": str(len(deaths))},
    )
