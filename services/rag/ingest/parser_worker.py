"""A parser worker process: parses documents it is sent, one at a time, under an address-space limit.

Run by ``parser_pool`` as ``python -m services.rag.ingest.parser_worker --fd N --memory-mb M`` behind
the launcher's ``child_exec`` shim (it dies with the thread that started it). It speaks pickled
messages over the socket ``N`` (``multiprocessing.connection``):

- in: ``ParseJob``, or None to exit;
- out: ``("ready", pid)`` once, then per job any number of ``("page", n)`` (PDF page n is being read,
  0 when the page-by-page part is over) and ``("ocr", done, total)``, then one ``("ok", ParsedDocument)``
  or ``("refused", RefusalInfo, retire)``.

Its memory limit is ``RLIMIT_AS``: what the worker holds once its parsers are imported, plus
``--memory-mb``. A parser that asks for more gets MemoryError (refused, then the worker exits) or, in
PDFium, an abort: the pool sees the worker die and refuses the document. ``RLIMIT_AS`` suits this
process, unlike the services (``launcher.memory_ceiling``): it imports no engine that reserves
address space up front (about 260 MB of it, 115 MB resident, measured).
"""

from __future__ import annotations

import argparse
import os
import resource
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection

from services.rag.documents import ParsedDocument
from services.rag.ingest.formats import FileType
from services.rag.ingest.ocr import PageReader
from services.rag.ingest.parsers.limits import ParseLimits
from services.runtime import errors


@dataclass(frozen=True)
class ParseJob:
    file_type: FileType
    data: bytes
    limits: ParseLimits
    document_id: str
    ocr: PageReader | None = None


@dataclass(frozen=True)
class RefusalInfo:
    """A domain error as plain data (its class name and fields), rebuilt on the other side."""

    kind: str
    message: str
    reason: str
    metadata: dict[str, str]
    violations: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, exc: errors.DomainError) -> RefusalInfo:
        return cls(type(exc).__name__, exc.message, exc.reason, dict(exc.metadata),
                   tuple((v.field, v.description) for v in exc.violations))

    def error(self) -> errors.DomainError:
        kind = getattr(errors, self.kind, None)
        if not (isinstance(kind, type) and issubclass(kind, errors._Kind)):
            kind = errors.Internal
        return kind(self.message, reason=self.reason, metadata=self.metadata,
                    violations=[errors.FieldViolation(f, d) for f, d in self.violations])


def memory_refusal(limit_mb: int) -> errors.InvalidArgument:
    return errors.InvalidArgument(
        f"the document needs more than the parser's {limit_mb} MB of memory to read",
        reason="PARSER_MEMORY_LIMIT",
        metadata={"limit_mb": str(limit_mb), "setting": "DOCUTHINKER_RAG_PARSER_MEMORY_MB"},
    )


def _address_space_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def serve(conn: Connection, memory_mb: int) -> None:
    from services.rag.ingest.parse_guard import parse_or_refuse  # before the limit: imports are not the job's
    from services.runtime import logs

    logs.configure("rag-parser", os.environ.get("DOCUTHINKER_LOG_LEVEL", "INFO"))  # JSON lines, as rag's own

    if memory_mb > 0:
        limit = _address_space_bytes() + memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # an abort at the limit must not write a core file
    conn.send(("ready", os.getpid()))
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return  # the service is gone
        if job is None:
            return
        retire = False
        try:
            parsed: ParsedDocument = parse_or_refuse(
                job.data, job.file_type, job.limits, job.document_id, job.ocr,
                on_ocr_page=lambda done, total: conn.send(("ocr", done, total)),
                on_page=lambda number: conn.send(("page", number)),
            )
            reply: tuple = ("ok", parsed)
        except errors.DomainError as exc:
            reply = ("refused", RefusalInfo.of(exc), False)
        except MemoryError:
            reply, retire = ("refused", RefusalInfo.of(memory_refusal(memory_mb)), True), True
        del job
        conn.send(reply)
        if retire:  # a heap that hit the limit may be fragmented beyond use: a fresh worker takes over
            return


def main(args: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="parser_worker", description=__doc__)
    parser.add_argument("--fd", type=int, required=True, help="the socket to the service")
    parser.add_argument("--memory-mb", type=int, default=1024, help="address space a job may add (0: no limit)")
    options = parser.parse_args(args)
    serve(Connection(options.fd), options.memory_mb)


if __name__ == "__main__":
    # Run as the module itself, not as __main__, so what it pickles names this module's classes.
    from services.rag.ingest import parser_worker

    parser_worker.main()
