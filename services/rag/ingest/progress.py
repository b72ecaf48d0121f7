"""OCR and transcription progress from a parser's worker thread, as events of an upload's stream."""

from __future__ import annotations

import asyncio

from services.rag.documents import DocumentRecord, IngestProgress, IngestStage
from services.rag.ingest.jobs import IngestJob


class OcrEvents:
    """OCR and transcription progress from the parser's worker thread, as events of the upload's stream.

    Events normally start only once a document has parsed, so that bad input still fails the call
    with its own status (HTTP 4xx over REST). A scan is past every check but OCR itself when OCR
    starts, and may take minutes: its stream starts then (RECEIVED), and reports every page.
    """

    def __init__(self, record: DocumentRecord, job: IngestJob, loop: asyncio.AbstractEventLoop) -> None:
        self._record, self._job, self._loop = record, job, loop
        self.started = False

    def on_page(self, done: int, total: int) -> None:
        # Runs in the parser's thread; the job's queue belongs to the loop. Callbacks run in the order
        # they were scheduled, so all of them have run when the parse's result reaches the loop.
        self._loop.call_soon_threadsafe(self._emit, done, total)

    def _emit(self, done: int, total: int) -> None:
        if not self.started:
            self.started = True
            size = self._record.size_bytes
            self._job.emit(IngestProgress(IngestStage.RECEIVED, size, size, "bytes received"))
        self._job.emit(IngestProgress(IngestStage.OCR, done, total, f"OCR: {done} of {total} pages read"))

    def on_seconds(self, done: float, total: float, language: str) -> None:
        """Transcription progress of a recording (same thread rules as ``on_page``)."""
        self._loop.call_soon_threadsafe(self._emit_seconds, done, total, language)

    def _emit_seconds(self, done: float, total: float, language: str) -> None:
        if not self.started:
            self.started = True
            size = self._record.size_bytes
            self._job.emit(IngestProgress(IngestStage.RECEIVED, size, size, "bytes received"))
        self._job.emit(IngestProgress(IngestStage.TRANSCRIBED, round(done), round(total),
                                      f"transcribed {done:.1f} of {total:.1f} s of audio"
                                      + (f" (language: {language})" if language else "")))
