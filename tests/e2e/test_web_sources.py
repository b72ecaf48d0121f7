"""The web app's Sources page in a real browser (Debian's Chromium under Playwright) against the real mesh: add a
folder source through the form and watch it sync (state, documents), see a failing source's reason, pause one and
remove one. A screenshot of the page lands in the test's output directory."""

from __future__ import annotations

import os
import pathlib
import shutil

import pytest

from tests.e2e.browser import ARTIFACTS_ENV, launch

pytestmark = pytest.mark.e2e

TENANT = "web-sources-e2e"


def test_sources_page(mesh, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=90_000)
    folder = mesh.data_dir / "sources" / "web-e2e"
    folder.mkdir(parents=True)
    (folder / "pier.md").write_text("# Pier\n\nThe ferry leaves pier four at seven.\n")
    (folder / "quay.md").write_text("# Quay\n\nThe quay closes at dusk in winter.\n")
    token = mesh.mint(TENANT)
    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{mesh.base_url}/#token={token}" if token else f"{mesh.base_url}/")
        page.get_by_role("link", name="Sources").click()
        expect(page.get_by_text("No sources yet")).to_be_visible()

        page.locator("#source-kind").select_option("folder")
        page.locator("#source-name").fill("harbour notes")
        page.locator("#source-path").fill(str(folder))
        page.get_by_role("button", name="Add and sync").click()
        row = page.locator("tr", has_text="harbour notes")
        expect(row.get_by_test_id("source-state")).to_have_text("ok")
        expect(row.locator("td").nth(4)).to_have_text("2")  # documents

        page.locator("#source-name").fill("missing folder")
        page.locator("#source-path").fill(str(folder.parent / "not-there"))
        page.get_by_role("button", name="Add and sync").click()
        failing = page.locator("tr", has_text="missing folder")
        expect(failing.get_by_test_id("source-state")).to_have_text("failed")
        failing.locator("summary").click()
        expect(failing.get_by_text("SOURCE_NOT_FOUND")).to_be_visible()

        row.get_by_role("button", name="Pause").click()
        expect(row.get_by_test_id("source-state")).to_contain_text("(paused)")
        page.once("dialog", lambda dialog: dialog.accept())
        failing.get_by_role("button", name="Remove").click()
        expect(page.locator("tr", has_text="missing folder")).to_have_count(0)
        shot = tmp_path / "sources.png"
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    if os.environ.get(ARTIFACTS_ENV):
        shutil.copy(shot, pathlib.Path(os.environ[ARTIFACTS_ENV]) / "sources.png")
