"""The web app with authentication on (the session mesh's default, as under `make run`), driven in
Debian's Chromium. The page itself loads without a token; every /v1 call it makes needs one, and
401 and 403 are said plainly; a saved token is sent on JSON calls and on the upload's
XMLHttpRequest alike."""

from __future__ import annotations

import pytest

from gateway.auth import AuthSettings, mint
from tests.e2e.browser import launch

pytestmark = pytest.mark.e2e

TENANT = "web-auth-e2e"


@pytest.fixture(scope="module")
def secured(mesh):
    """(base URL, signing key, auth settings) of the session mesh, which runs with auth on as `make run` does."""
    assert mesh.local_auth.signing_key is not None, "the test mesh runs with auth on"
    return mesh.base_url, mesh.local_auth.signing_key, mesh.auth


def test_web_app_with_auth_on(secured, tmp_path_factory):
    from playwright.sync_api import expect, sync_playwright

    base, key, auth = secured
    out = tmp_path_factory.mktemp("web-auth-shots")
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.set_default_timeout(60_000)
        expect.set_options(timeout=60_000)

        page.goto(f"{base}/#/library")  # the page and its modules load without a token
        expect(page.get_by_role("alert").filter(has_text="Not authenticated (401)")).to_be_visible()
        page.screenshot(path=out / "library-401.png", full_page=True)

        def save_token(token: str) -> None:
            page.click("details.token summary")
            page.fill("#token-input", token)
            page.click("#token-form button[type=submit]")

        save_token(mint(key, TENANT, ttl_s=600, auth=AuthSettings(audience="someone-else")))
        expect(page.get_by_role("alert").filter(has_text="Forbidden (403)")).to_be_visible()

        save_token(mint(key, TENANT, ttl_s=600, auth=auth))
        expect(page.get_by_text("No documents yet")).to_be_visible()
        assert page.evaluate("localStorage.getItem('docuthinker.token')").count(".") == 2
        note = b"The spare key of the boathouse hangs in the harbour office."
        page.set_input_files("#file-input", files=[{"name": "keys.txt", "mimeType": "text/plain", "buffer": note}])
        expect(page.locator('li.upload[data-file="keys.txt"]')).to_have_attribute("data-state", "done", timeout=120_000)
        expect(page.locator('table.docs tr[data-filename="keys.txt"]')).to_be_visible()

        # 429 (rate limit or budget) in the same words the pages use.
        said = page.evaluate("""async () => {
            const { ApiError } = await import('/js/api.js');
            return new ApiError(429, 'daily budget exhausted').explain();
        }""")
        assert said.startswith("Too many requests or over budget (429): daily budget exhausted")
        browser.close()
