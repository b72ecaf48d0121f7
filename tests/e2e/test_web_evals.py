"""The Evaluations page in a real browser (Debian's Chromium under Playwright) against the real mesh.

Upload the 20-question set (and see a malformed one refused with its row), run it and watch the run's
progress, read the results table, run it again with top_k 1 and open the comparison view, cancel a third run
while it runs, export a run as CSV. Screenshots land in the test's output directory.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil

import httpx
import pytest

from tests.e2e.browser import ARTIFACTS_ENV, launch
from tests.e2e.evals_fixture import DOCUMENTS, malformed_csv, set_csv

pytestmark = pytest.mark.e2e

TENANT = "evals-web"
NAME = "harbour web"


def test_evaluations_page(mesh, tmp_path_factory):
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=120_000)
    out = tmp_path_factory.mktemp("web-evals")
    token = mesh.mint(TENANT)
    with httpx.Client(base_url=mesh.base_url, timeout=300,
                      headers={"authorization": f"Bearer {token}"} if token else {"x-tenant-id": TENANT}) as api:
        for name, text in DOCUMENTS.items():
            reply = api.post("/v1/documents:ingest", params={"filename": name}, content=text.encode(),
                             headers={"content-type": "text/plain"})
            assert reply.status_code == 200, reply.text

    errors: list[str] = []
    with sync_playwright() as p:
        browser = launch(p)
        context = browser.new_context(viewport={"width": 1400, "height": 950}, accept_downloads=True,
                                      extra_http_headers={} if token else {"x-tenant-id": TENANT})
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
        page.on("console", lambda m: m.type == "error" and "Failed to load resource" not in m.text
                and errors.append(f"console: {m.text}"))
        # The only failed call is the malformed upload this test makes.
        page.on("response", lambda r: r.status >= 400 and "/v1/eval-sets?filename=broken.csv" not in r.url
                and errors.append(f"HTTP {r.status} {r.request.method} {r.url}"))
        page.goto(f"{mesh.base_url}/#token={token}" if token else f"{mesh.base_url}/#/library")
        page.get_by_role("link", name="Evaluations").click()
        expect(page.get_by_role("heading", name="Evaluations", exact=True)).to_be_visible()

        # -- a malformed set is refused with its row; the good one is stored
        page.locator('[data-testid="eval-file"]').set_input_files(
            files=[{"name": "broken.csv", "mimeType": "text/csv", "buffer": malformed_csv()}])
        page.get_by_role("button", name="Upload set").click()
        expect(page.locator('[data-testid="upload-error"]')).to_contain_text("row 6: no accepted answers")
        page.locator('[data-testid="eval-file"]').set_input_files(
            files=[{"name": "harbour.csv", "mimeType": "text/csv", "buffer": set_csv()}])
        page.locator("#eval-name").fill(NAME)
        page.get_by_role("button", name="Upload set").click()
        expect(page.locator('[data-testid="upload-ok"]')).to_contain_text(f'"{NAME}": 20 questions')
        set_row = page.locator('[data-testid="sets"] tbody tr', has_text=NAME)
        expect(set_row).to_have_count(1)
        page.screenshot(path=str(out / "evals-sets.png"), full_page=True)

        # -- a run, its progress, then its state
        set_row.locator('[data-testid="start-run"]').click()
        runs = page.locator('[data-testid="runs"] tbody tr')
        expect(runs).to_have_count(1)
        first = runs.first
        expect(first.locator("progress")).to_be_visible()
        seen_running = first.get_attribute("data-state") == "running"
        expect(page.locator('[data-testid="runs"] tbody tr[data-state="succeeded"]')).to_have_count(1)
        expect(page.locator('[data-testid="runs"] tbody tr').first.locator('[data-testid="run-progress"]')).to_have_text(
            re.compile(r"\s*20/20"))

        # -- a second run with another setting
        set_row = page.locator('[data-testid="sets"] tbody tr', has_text=NAME)
        set_row.get_by_label(f"top_k for {NAME}").fill("1")
        set_row.get_by_label(f"Label for {NAME}").fill("top 1")
        set_row.locator('[data-testid="start-run"]').click()
        expect(page.locator('[data-testid="runs"] tbody tr')).to_have_count(2)
        expect(page.locator('[data-testid="runs"] tbody tr[data-state="succeeded"]')).to_have_count(2)
        page.screenshot(path=str(out / "evals-runs.png"), full_page=True)

        # -- the results table of one run, and its CSV
        page.locator('[data-testid="runs"] tbody tr', has_text="top 1").get_by_role("link").click()
        expect(page.locator('[data-testid="results"] tbody tr')).to_have_count(20)
        expect(page.locator('[data-testid="totals"]')).to_contain_text("kind: unanswerable")
        expect(page.locator('[data-testid="run-state"]')).to_have_text("succeeded")
        page.screenshot(path=str(out / "evals-run.png"), full_page=True)
        with page.expect_download() as download:
            page.locator('[data-testid="export-csv"]').click()
        saved = out / "run.csv"
        download.value.save_as(saved)
        assert download.value.suggested_filename.endswith(".csv") and saved.read_text().count("\n") == 21
        page.get_by_role("link", name="← Evaluations").click()

        # -- the comparison view of the two runs
        boxes = page.locator('[data-testid="runs"] tbody input[type="checkbox"]')
        expect(boxes).to_have_count(2)
        boxes.nth(1).check()  # the older run (default top_k) as the base
        boxes.nth(0).check()
        page.locator('[data-testid="compare-selected"]').click()
        expect(page.get_by_role("heading", name="Two runs side by side")).to_be_visible()
        expect(page.locator('[data-testid="differences"]')).to_contain_text("settings.top_k")
        expect(page.locator('[data-testid="differences"]')).to_contain_text("0 → 1")
        expect(page.locator('[data-testid="change-counts"]')).to_contain_text(re.compile(r"\d+ better, \d+ worse"))
        expect(page.locator('[data-testid="figures"]')).to_contain_text("Correct")
        page.get_by_label("Show questions").select_option("all")
        expect(page.locator('[data-testid="comparison"] tbody tr')).to_have_count(20)
        page.screenshot(path=str(out / "evals-compare.png"), full_page=True)

        # -- cancel a third run while it runs
        page.get_by_role("link", name="← Evaluations").click()
        page.locator('[data-testid="sets"] tbody tr', has_text=NAME).locator('[data-testid="start-run"]').click()
        running = page.locator('[data-testid="runs"] tbody tr[data-state="running"]')
        expect(running).to_have_count(1)
        running.locator('[data-testid="cancel-run"]').click()
        cancelled = page.locator('[data-testid="runs"] tbody tr[data-state="cancelled"]')
        expect(cancelled).to_have_count(1)
        done = cancelled.locator('[data-testid="run-progress"]').inner_text()
        assert re.match(r"\s*\d+/20", done) and not done.strip().startswith("20/"), done
        browser.close()

    figures = {"seen_running_at_first_poll": seen_running, "cancelled_after": done.strip()}
    (out / "results.json").write_text(json.dumps(figures, indent=1))
    if os.environ.get(ARTIFACTS_ENV):
        target = pathlib.Path(os.environ[ARTIFACTS_ENV])
        target.mkdir(parents=True, exist_ok=True)
        for shot in out.glob("evals-*.png"):
            shutil.copy(shot, target / shot.name)
    print(f"web evals: screenshots in {out}")
    assert not errors, errors
