"""Open the labeling page of a pushed task in headless Chromium and save a screenshot.

    python -m annotate.browser.screenshot --project 3 --task 17 --out task.png [--dir STUDIO_DIR]

What an annotator sees is the product of the label config, the task's HTML and Label Studio's own
styles together; only a real browser shows whether it reads well. Needs the Debian `chromium`
package and `playwright` from PyPI (the `test` extra); logs in with the studio's admin account.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from annotate.studio.server import StudioConfig, default_studio_dir, read_credentials, read_state

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
EDITOR_SELECTOR = ".lsf-main-view"  # present once the labeling editor has rendered the task


@dataclass(frozen=True)
class PageCapture:
    path: Path
    text: str  # the editor's visible text, to check what the annotator reads
    textareas: list[str]  # the editable fields' contents, pre-filled from the draft


def screenshot_task(url: str, username: str, password: str, project_id: int, task_id: int, out: Path,
                    width: int = 1600, height: int = 1100, timeout_ms: int = 60_000) -> PageCapture:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(f"{url}/user/login/", wait_until="domcontentloaded", timeout=timeout_ms)
            page.fill("input[name=email]", username)
            page.fill("input[name=password]", password)
            page.click("button[type=submit]")
            page.wait_for_load_state("networkidle", timeout=timeout_ms)
            page.goto(f"{url}/projects/{project_id}/data?tab=1&task={task_id}", wait_until="domcontentloaded",
                      timeout=timeout_ms)
            page.wait_for_selector(EDITOR_SELECTOR, timeout=timeout_ms)
            page.wait_for_timeout(1500)  # fonts and the inline HTML settle after the editor mounts
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out))
            text = page.inner_text(EDITOR_SELECTOR)
            textareas = page.eval_on_selector_all(f"{EDITOR_SELECTOR} textarea", "els => els.map(e => e.value)")
        finally:
            browser.close()
    return PageCapture(out, text, textareas)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=int, required=True)
    parser.add_argument("--task", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--dir", type=Path, default=None, help="studio folder (default: the local studio)")
    args = parser.parse_args(argv)
    config = StudioConfig(root=args.dir or default_studio_dir())
    state = read_state(config)
    if not state:
        parser.error(f"no running studio in {config.root}")
    credentials = read_credentials(config)
    screenshot_task(state["url"], credentials.username, credentials.password, args.project, args.task, args.out)
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
