"""The browser side of the web journeys (``test_web_journeys.py``): a signed-in Chromium session that records
every failure, the app's pages by route, and the checks the journeys make of a page (focus visible and outlined, a
background's luminance, a small screenshot)."""

from __future__ import annotations

import io
import pathlib
import re

TENANT = "web-journeys"
TIMEOUT_MS = 120_000


class Session:
    """A signed-in browser context (the token as `make run` hands it over) that records every failure."""

    def __init__(self, mesh, chromium, subject: str, **context) -> None:
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        self.base = mesh.base_url
        self.context = chromium.new_context(**{"viewport": {"width": 1280, "height": 900}, **context})
        self.page = self.context.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.errors: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.on("response", lambda r: r.status >= 400 and self.errors.append(f"HTTP {r.status} {r.url}"))
        # Requests that got no answer at all: not an error by themselves (a navigation aborts fetches), but what
        # to read when the app never starts.
        self.unanswered: list[str] = []
        self.page.on("requestfailed", lambda r: self.unanswered.append(f"{r.url}: {r.failure}"))
        self.page.goto(f"{self.base}/#token={mesh.mint(TENANT, subject=subject)}")
        try:
            self.page.wait_for_function("location.hash === '#/library'")
        except PlaywrightTimeout as exc:
            raise AssertionError(f"the app never took its token and went to #/library: at {self.page.url.split('#')[0]}"
                                 f", errors {self.errors}, unanswered requests {self.unanswered}") from exc

    def go(self, route: str) -> None:
        self.page.goto(f"{self.base}/#/{route}")

    def ask(self, question: str):
        from playwright.sync_api import expect

        before = self.page.locator("article.turn").count()
        self.page.fill("#question", question)
        self.page.press("#question", "Enter")
        turn = self.page.locator("article.turn").nth(before)
        expect(turn).to_have_attribute("data-state", "done")
        return turn

    def close(self) -> None:
        self.context.close()
        assert not self.errors, self.errors


def routes(library) -> dict[str, str]:
    return {"library": "library", "ask": "ask", "graph": "graph", "system": "system", "settings": "settings",
            # The cell "877" of the table PDF's row "Saint John", as its citation opens it.
            "doc": f"doc/{library['harbour-table.pdf']}?page=1&start=47&end=69&as=60&ae=63&marker=1"}


def visible_and_outlined(page) -> None:
    state = page.evaluate("""() => {
        const e = document.activeElement, r = e.getBoundingClientRect(), s = getComputedStyle(e);
        return {tag: e.tagName + '#' + e.id + '.' + e.className, w: r.width, h: r.height, top: r.top, left: r.left,
                inView: r.bottom > 0 && r.right > 0 && r.top < innerHeight && r.left < innerWidth,
                outline: s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2};
    }""")
    assert state["w"] > 1 and state["h"] > 1 and state["inView"], state
    assert state["outline"], state


def luminance(css: str) -> float:
    r, g, b = (int(v) / 255 for v in re.findall(r"\d+", css)[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def shot(page, path: pathlib.Path) -> None:
    """A small PNG of the viewport: 256 colours."""
    from PIL import Image

    image = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)

