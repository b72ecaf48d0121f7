"""The first hour in the web app, in Debian's Chromium against the real mesh, one bounded journey per promise:

- a conversation kept on the server, with a follow-up read against the first question, newest turn at the
  bottom, listed, renamed and reopened;
- a cited table cell of a PDF previewed in place, then highlighted on the page from PDFium's character boxes;
  the same for a scanned PDF from Tesseract's word boxes;
- dark mode from ``prefers-color-scheme`` and from the toggle (kept across a reload);
- every page at 390 px wide without a horizontal scroll;
- a question asked with the keyboard alone, each Tab stop visible and outlined;
- axe-core on every page, light and dark: no serious or critical violation;
- the Settings page pointing the mesh at an OpenAI-compatible server (llama.cpp's own, with the packaged SmolLM2),
  whose rewrite a document then shows;
- a screenshot of every page, light and dark (``DOCUTHINKER_WEB_ARTIFACTS`` copies them, e.g. to docs/screenshots).
"""

from __future__ import annotations

import io
import os
import pathlib
import re
import shutil

import pytest

from services.launcher.mesh import ROOT
from tests.e2e.browser import ARTIFACTS_ENV, launch
from tests.e2e.web_session import TENANT, TIMEOUT_MS, Session, luminance, routes, shot, visible_and_outlined
from tests.rag.test_span_boxes import COLUMNS, ROWS, STEP, TOP, ruled_table_pdf, scanned_table_pdf

pytestmark = pytest.mark.e2e

AXE = ROOT / "web" / "node_modules" / "axe-core" / "axe.min.js"
CATS = ("The Handbook of Cats was written by Jane Smith in 1998. It covers feeding, grooming and the care of kittens."
        "\n\nJane Smith lives in Lyon, where she teaches veterinary science at the university.")
PAGES = ("library", "ask", "doc", "graph", "system")


@pytest.fixture(scope="module")
def library(mesh) -> dict[str, str]:
    """The documents of the journeys: prose for the conversation, a PDF table and a scanned table."""
    import httpx

    token = mesh.mint(TENANT, subject="ada")
    ids = {}
    with httpx.Client(base_url=mesh.base_url, headers={"authorization": f"Bearer {token}"}, timeout=300) as api:
        for name, data, kind in (("cats.txt", CATS.encode(), "text/plain"),
                                 ("harbour-table.pdf", ruled_table_pdf(), "application/pdf"),
                                 ("harbour-scan.pdf", scanned_table_pdf(), "application/pdf"),
                                 ("sites.xlsx", _workbook(), "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")):
            reply = api.post("/v1/documents:ingest", params={"filename": name}, content=data,
                             headers={"Content-Type": kind})
            assert reply.status_code == 200, reply.text
            ids[name] = reply.json()["result"]["document"]["document_id"]
    return ids


def _workbook() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Sites"
    for row in (("site", "blades", "last inspection"), ("Lyon", 42, "March"), ("Brest", 18, "April")):
        sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as p:
        browser = launch(p)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("web-journeys")
    yield out
    target = os.environ.get(ARTIFACTS_ENV)
    if target:
        shutil.copytree(out, target, dirs_exist_ok=True)


@pytest.fixture
def session(mesh, chromium):
    opened: list[Session] = []

    def open_(subject: str = "ada", **context) -> Session:
        opened.append(Session(mesh, chromium, subject, **context))
        return opened[-1]

    yield open_
    for s in opened:
        s.close()


def test_a_conversation_with_a_follow_up_is_kept_on_the_server(session, library, artifacts):
    from playwright.sync_api import expect

    s = session()
    page = s.page
    s.go("ask")
    page.get_by_role("button", name="New conversation").click()
    first = s.ask("Who wrote the Handbook of Cats?")
    expect(first.locator('[data-testid="short-answer"]')).to_have_text("Jane Smith")
    expect(first.locator('[data-testid="supporting-quote"] mark.answer')).to_have_text("Jane Smith")
    second = s.ask("When did she write it?")
    expect(second.locator('[data-testid="resolved"]')).to_contain_text("When did Jane Smith write the Handbook of Cats?")
    expect(second.locator('[data-testid="short-answer"]')).to_have_text("1998")
    # Newest at the bottom.
    assert first.bounding_box()["y"] < second.bounding_box()["y"]
    chat = page.locator(".chats li[aria-current=true]")
    expect(chat.locator("a")).to_have_text("Who wrote the Handbook of Cats?")
    conversation_id = chat.get_attribute("data-conversation-id")
    page.once("dialog", lambda d: d.accept("Cats and their author"))
    page.locator(".chat-head").get_by_role("button", name=re.compile("^Rename")).click()
    expect(page.locator(".chats li[aria-current=true] a")).to_have_text("Cats and their author")
    shot(page, artifacts / "conversation.png")
    # Kept on the server: a fresh tab (no session storage) reopens it with both turns.
    again = session()
    again.go(f"ask?c={conversation_id}")
    turns = again.page.locator("article.turn")
    expect(turns).to_have_count(2)
    expect(turns.nth(1)).to_contain_text("When did she write it?")
    expect(again.page.locator("#chat-title")).to_have_text("Cats and their author")
    # Another user of the tenant sees none of it.
    other = session("bob")
    with other.page.expect_response(lambda r: conversation_id in r.url and r.status == 404):
        other.go(f"ask?c={conversation_id}")
    expect(other.page.locator("#chat-title")).to_have_text("New conversation")
    expect(other.page.locator(".chats li a")).to_have_count(0)
    other.errors = [e for e in other.errors if f"/v1/conversations/{conversation_id}" not in e]  # its 404


@pytest.mark.parametrize("name, question, cell, source", [
    ("harbour-table.pdf", "How many vessels did Saint John have?", "877", "pdfium"),
    ("harbour-scan.pdf", "What was the tonnage of Sydney?", "1.2", "tesseract"),
])
def test_a_cited_table_cell_is_previewed_then_highlighted_on_the_page(session, library, artifacts, name, question,
                                                                      cell, source):
    from playwright.sync_api import expect

    s = session()
    page = s.page
    s.go("ask")
    page.get_by_role("button", name="New conversation").click()
    page.check("#scope-some")
    page.locator(f'.picker input[value="{library[name]}"]').check()
    turn = s.ask(question)
    expect(turn.locator('[data-testid="short-answer"]')).to_have_text(cell)
    label = turn.locator(".citations a.cite-link").first
    expect(label).to_contain_text(re.compile(r"row “\w"))  # the cell's row and column, not a range of rows
    # Preview in place: hovering the marker shows the quote with the cell marked, without leaving the page.
    turn.locator("a.marker").first.hover()
    preview = page.locator('[data-testid="preview"]')
    expect(preview).to_be_visible()
    expect(preview.locator("mark.answer")).to_have_text(cell)
    shot(page, artifacts / f"preview-{source}.png")
    label.click()
    pdf_page = page.locator('[data-testid="pdf-page"]')
    expect(pdf_page).to_have_attribute("data-box-source", source)
    answer = pdf_page.locator('[data-testid="answer-box"]')
    expect(answer).to_have_count(1)
    page_box, box = pdf_page.bounding_box(), answer.bounding_box()
    x = (box["x"] - page_box["x"]) / page_box["width"]
    y = (box["y"] + box["height"] / 2 - page_box["y"]) / page_box["height"]
    row = next(i for i, r in enumerate(ROWS) if cell in r)
    column = ROWS[row].index(cell)
    if source == "pdfium":  # drawn at these points of a 612 x 792 page
        expected = ((COLUMNS[column] + 4) / 612, (TOP + row * STEP + 10) / 792)
    else:  # drawn at these pixels of a 1700 x 2200 scan
        expected = ((150 + 450 * column) / 1700, (400 + 80 * row + 20) / 2200)
    assert x == pytest.approx(expected[0], abs=0.02) and y == pytest.approx(expected[1], abs=0.02), (x, y, expected)
    expect(pdf_page.locator('[data-testid="span-box"]')).to_have_count(2)  # the row's other two cells
    shot(page, artifacts / f"highlight-{source}.png")


def test_spreadsheets_are_previewed_with_the_cited_row_marked(session, library):
    from playwright.sync_api import expect

    s = session()
    s.go(f"doc/{library['sites.xlsx']}?start=0&end=1&sheet=Sites&rows=3-3&marker=1")
    frame = s.page.frame_locator('[data-testid="preview-frame"]')
    expect(frame.locator('tr.cited')).to_have_count(1)
    expect(frame.locator('tr.cited')).to_contain_text("Brest")


def test_dark_mode_follows_the_system_and_the_toggle(session, library):
    from playwright.sync_api import expect

    dark = session(color_scheme="dark")
    html = dark.page.locator("html")
    expect(html).to_have_attribute("data-theme", "dark")
    background = dark.page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    assert luminance(background) < 0.1, background
    toggle = dark.page.locator("#theme-toggle")
    expect(toggle).to_have_attribute("aria-pressed", "true")
    toggle.click()
    expect(html).to_have_attribute("data-theme", "light")
    dark.page.reload()
    expect(html).to_have_attribute("data-theme", "light")  # the choice outlives the system's preference
    assert luminance(dark.page.evaluate("getComputedStyle(document.documentElement).backgroundColor")) > 0.8
    light = session(color_scheme="light")
    expect(light.page.locator("html")).to_have_attribute("data-theme", "light")
    light.page.locator("#theme-toggle").click()
    expect(light.page.locator("html")).to_have_attribute("data-theme", "dark")


def test_no_page_scrolls_sideways_at_390_px(session, library):
    from playwright.sync_api import expect

    s = session(viewport={"width": 390, "height": 844})
    s.go("ask")
    s.ask("Who wrote the Handbook of Cats?")  # a page with a conversation, citations and the sidebar
    wide = {}
    for name, route in routes(library).items():
        s.go(route)
        expect(s.page.locator("main h1")).to_be_visible()
        s.page.wait_for_load_state("networkidle")
        width = s.page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        if width[0] > width[1]:
            wide[name] = (width, s.page.evaluate("""() => [...document.querySelectorAll('main *')]
                .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
                .slice(0, 5).map(e => e.tagName + '.' + e.className)"""))
    assert not wide, wide


def test_a_question_is_asked_with_the_keyboard_alone(session, library):
    from playwright.sync_api import expect

    s = session()
    page = s.page
    page.goto(f"{s.base}/#/ask")
    page.reload()  # a first load: focus starts at the top of the document
    page.wait_for_selector("#question")
    page.keyboard.press("Tab")
    first = page.evaluate("document.activeElement.textContent")
    assert first == "Skip to content"
    visible_and_outlined(page)
    page.keyboard.press("Enter")  # to the page's content: on Ask, the question field
    for _ in range(40):
        if page.evaluate("document.activeElement.id") == "question":
            break
        page.keyboard.press("Tab")
        visible_and_outlined(page)
    else:
        pytest.fail("the question field was not reached with Tab")
    visible_and_outlined(page)
    page.keyboard.type("Where does Jane Smith live?")
    page.keyboard.press("Enter")
    turn = page.locator("article.turn").last
    expect(turn).to_have_attribute("data-state", "done")
    expect(turn.locator('[data-testid="short-answer"]')).to_have_text("Lyon")
    # On to the citation with Tab, and Enter opens the document at the span.
    for _ in range(60):
        page.keyboard.press("Shift+Tab")
        if page.evaluate("document.activeElement.classList.contains('cite-link')"):
            break
    else:
        pytest.fail("no citation link was reached with the keyboard")
    visible_and_outlined(page)
    expect(page.locator('[data-testid="preview"]')).to_be_visible()  # previewed on focus too
    page.keyboard.press("Enter")
    expect(page.locator('[data-testid="cited-span"]')).to_contain_text("Lyon")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_page_passes_axe_and_is_photographed(session, library, artifacts, scheme):
    from playwright.sync_api import expect

    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing: run `make setup` (tools/web_setup.sh installs axe-core from npm)")
    s = session(color_scheme=scheme, viewport={"width": 1100, "height": 760})
    s.go("ask")
    s.ask("Who wrote the Handbook of Cats?")
    found = {}
    for name, route in routes(library).items():
        s.go(route)
        expect(s.page.locator("main h1")).to_be_visible()
        s.page.wait_for_load_state("networkidle")
        s.page.add_script_tag(path=str(AXE))
        result = s.page.evaluate("axe.run(document, {resultTypes: ['violations']})")
        bad = [(v["id"], v["impact"], [n["target"] for n in v["nodes"][:3]]) for v in result["violations"]
               if v["impact"] in ("serious", "critical")]
        if bad:
            found[name] = bad
        if name == "doc":
            expect(s.page.locator('[data-testid="original"]')).to_have_attribute("data-ready", "true")
            s.page.evaluate("window.scrollTo(0, 0)")
        shot(s.page, artifacts / f"{name}-{scheme}.png")
    assert not found, found


# Kept for the life of the process: destroying an xllamacpp server early is unsafe (see providers/local_model).
_SERVERS: list[object] = []


@pytest.fixture(scope="module")
def llamacpp() -> str:
    """llama.cpp's OpenAI-compatible HTTP server (xllamacpp) with the packaged SmolLM2 weights, on loopback."""
    import xllamacpp

    from services.providers.local_model import gguf_path

    params = xllamacpp.CommonParams()
    params.model.path = str(gguf_path())
    params.n_ctx = 2048
    params.n_parallel = 1
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.verbosity = -1
    params.ui = False
    server = xllamacpp.Server(params)
    _SERVERS.append(server)
    return f"{server.listening_address}/v1"


def test_settings_point_the_mesh_at_a_local_model_server(mesh, session, library, llamacpp):
    import httpx
    from playwright.sync_api import expect

    user = session()
    user.go("settings")
    expect(user.page.locator('[data-testid="server-status"]')).to_contain_text("the local model")
    user.page.fill("#server-url", llamacpp)
    user.page.fill("#server-model", "smollm2")
    user.page.get_by_role("button", name="Check and save").click()
    expect(user.page.locator('[data-testid="server-result"]').get_by_role("alert")).to_contain_text("Forbidden (403)")
    user.errors = [e for e in user.errors if "/v1/settings/model-server" not in e]  # that 403, provoked

    admin = session("root")
    admin_token = mesh.mint(TENANT, role="admin", subject="root")
    admin.page.evaluate("t => localStorage.setItem('docuthinker.token', t)", admin_token)
    try:
        admin.go("settings")
        admin.page.fill("#server-url", llamacpp)
        admin.page.fill("#server-model", "smollm2")
        admin.page.fill("#server-window", "2048")
        admin.page.get_by_role("button", name="Check and save").click()
        expect(admin.page.locator('[data-testid="server-saved"]')).to_contain_text("Saved: smollm2")
        expect(admin.page.locator('[data-testid="server-status"]')).to_contain_text("(chosen here)")
        # The NLP service writes the rewrite on that server from its next call.
        admin.go(f"doc/{library['cats.txt']}")
        admin.page.fill("#rewrite-style", "one short sentence")
        admin.page.click("form.rewrite button[type=submit]")
        rewritten = admin.page.locator("form.rewrite .rewritten")
        expect(rewritten).not_to_be_empty()
        expect(admin.page.locator("form.rewrite .analysis-out")).to_contain_text("engine: openai")
    finally:  # the session's mesh is shared: back to the local model
        with httpx.Client(base_url=mesh.base_url, timeout=60,
                          headers={"authorization": f"Bearer {admin_token}"}) as api:
            assert api.put("/v1/settings/model-server", json={"base_url": ""}).status_code == 200
