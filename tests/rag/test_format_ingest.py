"""Every new format, and a PDF table, through the ingestion pipeline over real stores (fake embedder):
stored as a READY document whose chunks slice their sections exactly and carry their page/sheet/row."""

from __future__ import annotations

import pytest

from services.rag.documents import DocumentStatus, IngestOutcome

from .probes import collect
from .test_more_formats import RTF, make_eml, make_epub, make_ods, make_odt, make_pptx, make_xls
from .test_structure import _leader_table_pdf


@pytest.mark.parametrize(
    ("name", "make", "term", "where"),
    [
        ("deck.pptx", make_pptx, "dredging", "page"),
        ("tides.xls", make_xls, "calais", "sheet"),
        ("report.odt", make_odt, "revenue", ""),
        ("cups.ods", make_ods, "canadiens", "sheet"),
        ("tales.epub", make_epub, "ferry", "page"),
        ("mail.eml", make_eml, "pilots", ""),
        ("notice.rtf", lambda: RTF, "harbour", ""),
        ("arrests.pdf", _leader_table_pdf, "drunkenness", "row"),
    ],
)
async def test_a_new_format_is_ingested_searchable_and_cited(open_runtime, name, make, term, where) -> None:
    runtime = open_runtime()
    events = await collect(runtime.pipeline.upload("acme", name, "", make()))
    outcome = events[-1]
    assert isinstance(outcome, IngestOutcome) and outcome.document.status is DocumentStatus.READY
    document_id = outcome.document.document_id
    sections = runtime.metadata.sections(document_id)
    chunks = runtime.metadata.document_chunks("acme", document_id)
    assert chunks
    for chunk in chunks:
        section = sections[chunk.provenance.section_index]
        assert section.text[chunk.provenance.char_start : chunk.provenance.char_end] == chunk.text
    hits = runtime.index.keyword_search("acme", term, 5)
    assert hits, term
    cited = [c for c in chunks if term in c.text.lower()]
    assert cited
    if where == "page":
        assert all(c.provenance.page >= 1 for c in cited)
    elif where == "sheet":
        assert all(c.provenance.sheet_name for c in cited) and any(c.provenance.row_start >= 2 for c in cited)
    elif where == "row":
        row = next(c for c in cited if c.provenance.row_start)
        assert row.text.startswith("Offense charged | Total | Under 18\n")
        assert row.provenance.page == 1 and row.provenance.row_start <= 4 <= row.provenance.row_end
