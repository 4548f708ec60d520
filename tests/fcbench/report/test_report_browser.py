"""Open the QA report in headless Chromium: every plot loads and every section is there.

CI installs the browser (Debian `chromium`) and `playwright` from PyPI; the test does not skip
when they are missing, because a report nobody can open is the failure it exists to catch.
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import sync_playwright

from fcbench.report.page import SECTIONS, write_report
from test_report import make_build

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def test_report_opens_in_chromium_with_every_image_loaded(tmp_path: Path) -> None:
    files = write_report(make_build(tmp_path))
    screenshot = tmp_path / "report.png"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            requests: list[str] = []
            page.on("request", lambda request: requests.append(request.url))
            page.goto(files.html.resolve().as_uri(), wait_until="load")
            images = page.eval_on_selector_all(
                "img", "els => els.map(e => ({alt: e.alt, complete: e.complete, width: e.naturalWidth}))")
            headings = page.eval_on_selector_all("section > h2", "els => els.map(e => e.textContent)")
            title = page.title()
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    assert len(images) == files.images == 9  # (the context-length histogram is the ninth)
    assert all(image["complete"] and image["width"] > 0 for image in images), images
    assert headings == list(SECTIONS.values())
    assert title == "QA report: nestful-math"
    # The page itself is the only request: plots are data URIs, nothing else is fetched.
    assert [url for url in requests if not url.startswith("data:")] == [files.html.resolve().as_uri()]
    assert screenshot.stat().st_size > 10_000
