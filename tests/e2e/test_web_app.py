"""The web app in a real browser (Debian's Chromium driven by Playwright) against the real mesh.

One journey, as a person would take it: upload a PDF (generated here) and watch its progress
bar finish, ask a question and watch the answer stream, open a citation and check that the
highlighted text is the cited span (in the extracted text and on the pdf.js page), run an
analysis, ask in agent mode, open the graph, look at System, delete the document. Screenshots of
every page land in the test's output directory; time-to-first-token of the streamed answer is
written to results.json there (a figure, not an assertion).
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import re
import shutil
import time

import httpx
import pytest
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from tests.e2e.browser import ARTIFACTS_ENV, launch

pytestmark = pytest.mark.e2e

TENANT = "web-e2e"
FILENAME = "harbour-report.pdf"
PAGES = [
    ["Harbour Office Annual Report", "", "The harbour office manages moorings, pilots and the fish market.",
     "Mooring fees rose by four percent this year after the quay repairs."],
    ["Lighthouse maintenance", "",
     "The lighthouse keeper inspects the lamp every Tuesday at dawn.",
     "The lens is cleaned with alcohol once a month by the keeper.",
     "Storm damage to the lantern room was repaired in October."],
]
# A second PDF that shares topics with the first, so the graph has related documents to click through to.
OTHER_FILENAME = "lighthouse-log.pdf"
OTHER_PAGES = [
    ["Lighthouse keeper log", "", "The lighthouse keeper logged storm damage to the lantern room in October.",
     "The harbour office paid for the lantern room repairs and the new lens."],
]
QUESTION = "When does the lighthouse keeper inspect the lamp?"
SECOND_QUESTION = "How often is the lens cleaned?"


def make_pdf(pages: list[list[str]]) -> bytes:
    """A PDF whose pages carry these lines of Helvetica text."""
    writer = PdfWriter()
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    for lines in pages:
        page = writer.add_blank_page(612, 792)
        fonts = DictionaryObject({NameObject("/F1"): font})
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): fonts})
        ops = ["BT", "/F1 12 Tf", "16 TL", "72 720 Td"]
        ops += [f"({line}) Tj T*" for line in lines]
        ops.append("ET")
        stream = DecodedStreamObject()
        stream.set_data("\n".join(ops).encode("latin-1"))
        page.replace_contents(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def journey(base_url: str, out: pathlib.Path, token: str | None) -> dict:
    """The whole walk through the app, signed in with ``token`` (a user of TENANT; None with auth off);
    returns the figures measured on the way."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=60_000)

    out.mkdir(parents=True, exist_ok=True)
    api = httpx.Client(base_url=base_url, timeout=60,
                       headers={"authorization": f"Bearer {token}"} if token else {"x-tenant-id": TENANT})
    figures: dict = {}
    errors: list[str] = []
    with sync_playwright() as p:
        browser = launch(p)
        # The token arrives as `make run` hands it over: in the URL fragment of the first page (auth off: the
        # tenant comes from x-tenant-id, added to every request).
        context = browser.new_context(viewport={"width": 1280, "height": 900},
                                      extra_http_headers={} if token else {"x-tenant-id": TENANT})
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
        page.on("console", lambda m: m.type == "error" and "Failed to load resource" not in m.text
                and errors.append(f"console: {m.text}"))
        # No CDN: every request stays on the gateway's origin (blob: and data: URLs are the page's own).
        page.on("request", lambda r: r.url.startswith((base_url, "blob:", "data:"))
                or errors.append(f"off-origin request {r.url}"))
        # Every failed call but the two this test provokes (bad uploads) is a defect.
        page.on("response", lambda r: r.status >= 400 and not re.search(r"filename=(tool\.exe|broken\.pdf)", r.url)
                and errors.append(f"HTTP {r.status} {r.request.method} {r.url}"))
        page.set_default_timeout(60_000)

        # -- Library: upload and watch the progress bar finish
        page.goto(f"{base_url}/#token={token}" if token else f"{base_url}/#/library")
        expect(page.get_by_role("heading", name="Library")).to_be_visible()
        if token:  # stored, and gone from the address bar
            assert page.evaluate("localStorage.getItem('docuthinker.token')") == token
            assert page.evaluate("location.hash") == "#/library"
        # Keyboard: Tab to the drop zone, Enter opens the file chooser.
        dropzone = page.locator('[data-testid="dropzone"]')
        expect(dropzone).to_be_enabled()
        with page.expect_file_chooser() as chooser:
            dropzone.press("Enter")  # focuses the drop zone, then presses Enter on it
        chooser.value.set_files(files=[
            {"name": FILENAME, "mimeType": "application/pdf", "buffer": make_pdf(PAGES)},
            {"name": OTHER_FILENAME, "mimeType": "application/pdf", "buffer": make_pdf(OTHER_PAGES)},
            {"name": "tool.exe", "mimeType": "application/octet-stream", "buffer": b"MZ not a document"},
            {"name": "broken.pdf", "mimeType": "application/pdf", "buffer": b"these bytes are no PDF"},
        ])
        for name, said in (("tool.exe", "unsupported file type"), ("broken.pdf", "not a readable PDF")):
            bad = page.locator(f'li.upload[data-file="{name}"]')
            expect(bad).to_have_attribute("data-state", "failed")
            expect(bad.get_by_role("alert")).to_contain_text(said)  # the server's own message
        for name in (FILENAME, OTHER_FILENAME):  # one progress bar per file, each to the end
            row = page.locator(f'li.upload[data-file="{name}"]')
            expect(row).to_have_attribute("data-state", "done", timeout=180_000)
            stages = row.get_attribute("data-stages").split("|")
            assert row.locator("progress").evaluate("p => p.value") == 1
            for stage in ("parsed", "chunked", "indexed", "done"):
                assert stage in stages, stages
            assert any(re.fullmatch(r"embedded \d+/\d+", s) for s in stages), stages
        doc_row = page.locator(f'table.docs tr[data-filename="{FILENAME}"]')
        other_row = page.locator(f'table.docs tr[data-filename="{OTHER_FILENAME}"]')
        expect(doc_row.locator(".badge")).to_have_text("ready")
        expect(other_row.locator(".badge")).to_have_text("ready")
        document_id = doc_row.get_attribute("data-document-id")
        other_id = other_row.get_attribute("data-document-id")
        page.fill('input[type="search"]', "lighthouse")  # the table's search
        expect(doc_row).to_have_count(0)
        expect(other_row).to_be_visible()
        page.fill('input[type="search"]', "")
        reindex = other_row.locator("button", has_text="Re-index")
        reindex.click()
        expect(other_row.locator("button", has_text="Re-index")).to_be_enabled()
        expect(page.locator("section", has=page.locator("#docs-h")).get_by_role("alert")).to_have_count(0)
        page.screenshot(path=out / "library.png", full_page=True)

        # -- Ask: a streamed answer with citations, in a new conversation
        page.goto(f"{base_url}/#/ask")
        page.get_by_role("button", name="New conversation").click()
        page.fill("#question", QUESTION)
        page.press("#question", "Enter")
        turn = page.locator("article.turn").first
        expect(turn).to_have_attribute("data-state", "done", timeout=120_000)
        figures["ttft_ms_first_question"] = float(turn.get_attribute("data-ttft-ms"))
        answer = turn.locator('[data-testid="answer"]').inner_text()
        assert "Tuesday" in answer, answer
        expect(turn.locator('[data-testid="support"]')).to_be_visible()
        citation = turn.locator("a.cite-link").first
        excerpt = turn.locator(".citations blockquote").first.inner_text()
        cited = {k: citation.get_attribute(f"data-{k}") for k in ("document-id", "char-start", "char-end", "page")}
        assert cited["document-id"] == document_id
        # A second question, the models now warm: the conversation keeps both turns, newest at the bottom.
        page.fill("#question", SECOND_QUESTION)
        page.press("#question", "Enter")
        expect(page.locator("article.turn")).to_have_count(2)
        latest = page.locator("article.turn").last
        expect(latest).to_have_attribute("data-state", "done", timeout=120_000)
        expect(latest).to_contain_text(SECOND_QUESTION)
        figures["ttft_ms_warm"] = float(latest.get_attribute("data-ttft-ms"))
        turn = page.locator("article.turn").first  # the first question's turn
        citation = turn.locator("a.cite-link").first
        # Asked of one selected document only, the answer cites only that document.
        page.check("#scope-some")
        page.locator(f'.picker input[value="{other_id}"]').check()
        page.fill("#question", "Who paid for the lantern room repairs?")
        page.press("#question", "Enter")
        expect(page.locator("article.turn")).to_have_count(3)
        scoped = page.locator("article.turn").last
        expect(scoped).to_have_attribute("data-state", "done", timeout=120_000)
        expect(scoped).to_contain_text("1 document")
        cited_docs = {a.get_attribute("data-document-id") for a in scoped.locator("a.cite-link").all()}
        assert cited_docs == {other_id}, cited_docs
        page.check("#scope-all")
        page.screenshot(path=out / "ask.png", full_page=True)

        # -- the citation opens the document at its page with the cited span highlighted
        marker = turn.locator("a.marker").first
        (marker if marker.count() else citation).click()
        mark = page.locator('[data-testid="cited-span"]')
        expect(mark).to_be_visible()
        sections = api.get(f"/v1/documents/{document_id}/text").json()["sections"]
        section = next(s for s in sections if s["page"] == int(cited["page"]))
        span = section["text"][int(cited["char-start"]):int(cited["char-end"])]
        assert mark.text_content() == span, (mark.text_content(), span)
        assert squash(span) == squash(excerpt)
        pdf_page = page.locator('[data-testid="pdf-page"]')
        expect(pdf_page).to_have_attribute("data-page", cited["page"])
        expect(pdf_page).to_have_attribute("data-highlighted", re.compile(r"^[1-9]"))
        lit = "".join(pdf_page.locator("span.hl").all_text_contents())
        assert squash(span) in squash(lit), (span, lit)
        for analysis in ("summary", "key-ideas", "entities", "analytics"):  # each on demand
            page.locator(f'button[data-analysis="{analysis}"]').click()
            box = page.locator(f"#analysis-{analysis} .analysis-out")
            expect(box.locator("> div")).to_be_visible(timeout=120_000)  # the result, or an explained error
            expect(box.locator(".error")).to_have_count(0)
            assert box.inner_text().strip()
        page.fill("#rewrite-style", "one short sentence for a child")  # a rewrite in a free-text style
        page.click("form.rewrite button[type=submit]")
        expect(page.locator("form.rewrite .rewritten")).not_to_be_empty(timeout=180_000)
        page.screenshot(path=out / "document.png", full_page=True)

        # -- agent mode: planner -> retriever -> reasoner -> validator, with timings
        page.goto(f"{base_url}/#/ask")
        page.check("#agent-mode")
        page.fill("#question", QUESTION)
        page.click("form.ask-form button[type=submit]")
        agent_turn = page.locator("article.turn").last
        expect(agent_turn).to_have_attribute("data-state", "done", timeout=180_000)
        steps = agent_turn.locator(".steps li strong").all_text_contents()
        for node in ("planner", "retriever", "reasoner", "validator"):
            assert node in steps, steps
        page.screenshot(path=out / "ask-agent.png", full_page=True)

        # -- Graph: wait until the document is synced, then draw it and select the document
        deadline = time.monotonic() + 120
        for doc in (document_id, other_id):
            while api.get(f"/v1/documents/{doc}").json()["document"]["graph_sync"] != "GRAPH_SYNC_STATUS_SYNCED":
                assert time.monotonic() < deadline, "the documents never reached the graph"
                time.sleep(1)
        page.goto(f"{base_url}/#/graph")
        canvas = page.locator('[data-testid="graph"]')
        expect(canvas).to_have_attribute("data-nodes", re.compile(r"^([3-9]|\d\d+)"))
        page.locator("summary", has_text="All nodes").click()
        page.locator("button.kind-document", has_text=FILENAME).click()
        open_button = page.locator(".graph-side a.button", has_text="Open document")
        expect(open_button).to_have_attribute("href", re.compile(document_id))
        related = page.locator(f'.graph-side a[href*="{other_id}"]')
        expect(related).to_be_visible()
        page.screenshot(path=out / "graph.png", full_page=True)
        related.click()  # click-through to the related document
        expect(page.get_by_role("heading", level=1)).to_have_text(OTHER_FILENAME)

        # -- System
        page.goto(f"{base_url}/#/system")
        health = page.locator('[data-testid="health"]')
        expect(health).to_contain_text("rag")
        expect(health).to_contain_text("SERVING")
        expect(page.locator("#circuits-h + *")).to_contain_text("service:rag")
        expect(page.locator("#dlq-h + *")).to_contain_text("parked")
        expect(page.locator("#costs-h + *")).to_contain_text("Mesh today")
        page.screenshot(path=out / "system.png", full_page=True)

        # -- a phone's width
        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(f"{base_url}/#/library")
        expect(doc_row).to_be_visible()
        page.screenshot(path=out / "library-phone.png", full_page=True)
        page.set_viewport_size({"width": 1280, "height": 900})

        # -- delete the document from the table
        for row, doc in ((doc_row, document_id), (other_row, other_id)):
            page.once("dialog", lambda d: d.accept())
            row.locator("button.danger").click()
            expect(row).to_have_count(0)
            assert api.get(f"/v1/documents/{doc}").status_code == 404
        browser.close()
    assert not errors, errors
    return figures


def test_web_app_journey(mesh, tmp_path_factory):
    out = tmp_path_factory.mktemp("web-app")
    figures = journey(mesh.base_url, out, mesh.mint(TENANT))
    results = {**figures, "questions": [QUESTION, SECOND_QUESTION],
               "note": "time in the browser from submitting the question to the first answer delta of "
                       "/v1/query:stream; "
                       "first_question includes warming up after the mesh started; shared 2-core machine"}
    (out / "results.json").write_text(json.dumps(results, indent=2))
    target = os.environ.get(ARTIFACTS_ENV)
    if target:
        shutil.copytree(out, target, dirs_exist_ok=True)
    print(f"web app: screenshots and results in {out}; time to first token {figures['ttft_ms_first_question']:.0f} ms"
          f" (first question), {figures['ttft_ms_warm']:.0f} ms (warm)")


SITES = b"site,blades,last inspection\nLyon,42,March\nBrest,18,April\nNantes,7,June\n"


def test_a_table_span_marks_its_cells(mesh, tmp_path_factory):
    """A span of a CSV (a retrieved chunk's provenance): the document view draws the sheet as a table and marks
    the cells the span covers."""
    from playwright.sync_api import expect, sync_playwright

    out = tmp_path_factory.mktemp("web-table")
    tenant = "web-e2e-table"
    with mesh.http(headers={"x-tenant-id": tenant}, timeout=120) as api:
        reply = api.post("/v1/documents:ingest", params={"filename": "sites.csv"}, content=SITES,
                         headers={"Content-Type": "text/csv"})
        assert reply.status_code == 200, reply.text
        document_id = reply.json()["result"]["document"]["document_id"]
        # A retrieved chunk's provenance: the same fields (and offsets) a citation carries.
        hits = api.post("/v1/search", json={"query": "Brest blades April", "top_k": 1,
                                            "document_ids": [document_id]}).json()["results"]
        citation = {**hits[0]["provenance"], "marker": 1}
        sections = api.get(f"/v1/documents/{document_id}/text").json()["sections"]
    section = next(s for s in sections
                   if s["sheet_name"] == citation["sheet_name"] and len(s["text"]) >= citation["char_end"])
    # The span of one row (as a one-row citation would be), found in the page text the service returned.
    row = "Brest | 18 | April"
    start = section["text"].index(row)
    citation.update(char_start=start, char_end=start + len(row))
    span = section["text"][citation["char_start"]:citation["char_end"]]
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1280, "height": 900},
                                extra_http_headers={"authorization": f"Bearer {mesh.mint(tenant)}"})
        page.set_default_timeout(60_000)
        query = (f"start={citation['char_start']}&end={citation['char_end']}&page={citation['page']}"
                 f"&sheet={citation['sheet_name']}&marker={citation['marker']}")
        page.goto(f"{mesh.base_url}/#/doc/{document_id}?{query}")
        marks = page.locator('[data-testid="cited-cell"]')
        expect(marks.first).to_be_visible(timeout=60_000)
        assert marks.all_text_contents() == ["Brest", "18", "April"]
        assert "".join(marks.all_text_contents()) == re.sub(r" \| |\n", "", span)
        expect(page.locator("table.sheet td", has_text="Lyon")).not_to_have_class("cited-cell")
        page.screenshot(path=out / "document-table.png", full_page=True)
        browser.close()
    target = os.environ.get(ARTIFACTS_ENV)
    if target:
        shutil.copytree(out, target, dirs_exist_ok=True)
