"""Real documents indexed in process by the production parsers, chunker and stores (benchmarks only).

``bench.corpus.BenchCorpus`` indexes plain texts; this indexes files as an upload does: format
detection and checks (``validate_upload``), the format's parser (OCR included), the chunker with
the service's settings, provenance as ``IngestPipeline`` builds it, vectors from the (disk-cached)
production embedder. ``answer_service()`` is the production ``AnswerService`` over it.
"""

from __future__ import annotations

import hashlib
import pathlib
import time
from collections.abc import Sequence

from bench.corpus import BenchCorpus, DiskCachedEncoder, IndexedDocument
from services.rag.documents import (
    Chunk,
    DocumentRecord,
    DocumentStatus,
    GraphSyncState,
    Provenance,
    chunk_id_for,
    document_id_for,
)
from services.rag.ingest.chunking import chunk_sections
from services.rag.ingest.formats import validate_upload
from services.rag.ingest.parsers import parse
from services.rag.runtime import pipeline_config
from services.rag.settings import RagSettings
from services.runtime import MeshSettings
from services.runtime.errors import DomainError


class DocumentCorpus(BenchCorpus):
    def __init__(self, encoder: DiskCachedEncoder, root: pathlib.Path | None = None) -> None:
        super().__init__(encoder, root)
        self.config = pipeline_config(RagSettings(), MeshSettings().max_upload_bytes)

    def add_file(self, path: pathlib.Path) -> dict:
        data = path.read_bytes()
        started = time.perf_counter()
        try:
            upload = validate_upload(path.name, "", data, self.config.max_upload_bytes)
            parsed = parse(upload.data, upload.file_type, self.config.limits, self.config.ocr)
        except DomainError as exc:
            return {"file": path.name, "error": exc.reason}
        sha = hashlib.sha256(data).hexdigest()
        document_id = document_id_for(self.TENANT, sha)
        now = time.time()
        record = DocumentRecord(
            document_id=document_id, tenant=self.TENANT, filename=upload.filename, file_type=upload.file_type.value,
            content_type=upload.content_type, content_sha256=sha, size_bytes=len(data), status=DocumentStatus.PENDING,
            create_time=now, update_time=now,
        )
        chunks = []
        for ordinal, span in enumerate(chunk_sections(parsed.sections, self.config.chunker)):
            section = parsed.sections[span.section_index]
            chunks.append(Chunk(
                chunk_id=chunk_id_for(self.TENANT, sha, ordinal), tenant=self.TENANT, ordinal=ordinal,
                text=section.text[span.start:span.end],
                provenance=Provenance(document_id, upload.filename, section.page, section.sheet_name, span.row_start,
                                      span.row_end, section.heading_path, span.start, span.end, span.section_index),
            ))
        vectors = self.encoder.encode([c.text for c in chunks])
        self.metadata.upsert_document(record)
        self.index.stage_vectors(self.TENANT, document_id, chunks, vectors)
        self.index.publish(record, list(parsed.sections), chunks, GraphSyncState.DISABLED)
        doc = IndexedDocument(path.name, document_id, "\n\n".join(s.text for s in parsed.sections))
        self.documents[path.name] = doc
        self.by_document_id[document_id] = doc
        self.chunk_count += len(chunks)
        return {"file": path.name, "chunks": len(chunks), "seconds": round(time.perf_counter() - started, 2)}

    def add_files(self, paths: Sequence[pathlib.Path]) -> list[dict]:
        started = time.perf_counter()
        added = [self.add_file(p) for p in paths]
        self.index.keyword.refresh(self.TENANT)
        self.encoder.save()
        self.index_seconds += time.perf_counter() - started
        return added

    def answer_service(self):
        from services.rag.answers.answering import AnswerService
        from services.rag.answers.extractive import ExtractiveAnswerer, ExtractiveConfig
        from services.rag.answers.settings import AnswerSettings
        from services.rag.retrieval import HybridRetriever

        settings = AnswerSettings()
        retriever = HybridRetriever(self.index, self.encoder, settings.retrieval_config())
        engine = ExtractiveAnswerer(self.encoder, ExtractiveConfig(abstain_threshold=settings.abstain_threshold))
        return AnswerService(retriever, engine)
