"""Driving Label Studio's labeling page in headless Chromium the way an annotator does.

Used by the browser test (tests/annotate/browser/test_ls_annotator_queue.py) and by bench/annotation_ui.py:
log in, press "Label All Tasks" (the queue, as people work) or click a task in the task list, read
which draft is shown, and make the usual corrections through the call forms or through the raw
JSON fallback, then submit.
Every click and key press is counted (`actions`), the figure the bench compares between the two
ways of editing. Needs the Debian `chromium` package and `playwright` from PyPI (the `test` extra).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Iterator

from annotate.tasks.forms import select_class
from annotate.browser.screenshot import CHROMIUM, CHROMIUM_ARGS

RENDER_TIMEOUT_MS = 180_000  # a loaded 2-core machine renders a large task in tens of seconds
FIND_TIMEOUT_MS = 30_000  # find-in-page reveals a match in a 500 kB response in well under a second
_SAMPLE = re.compile(r"sample (\S+) ·")
# the first text node of the labeling view holding the text: rendered (not inside a closed <details>)
# and inside the window
_ON_SCREEN = (
    "(text) => { const walk = document.createTreeWalker(document.querySelector('.lsf-main-view'), NodeFilter.SHOW_TEXT);"
    " for (let node = walk.nextNode(); node; node = walk.nextNode()) { const at = node.data.indexOf(text);"
    " if (at < 0) continue; const range = document.createRange(); range.setStart(node, at);"
    " range.setEnd(node, at + text.length); const box = range.getBoundingClientRect();"
    " return node.parentElement.checkVisibility() && box.height > 0 && box.top >= 0 && box.bottom <= innerHeight; }"
    " return false; }")


@dataclass
class LabelingSession:
    """One logged-in browser page on a Label Studio server."""

    page: Any
    url: str
    actions: int = 0  # clicks and key presses made on the labeling page
    render_seconds: list[float] = field(default_factory=list)

    # ------------------------------------------------------------------------------- navigation
    def open_queue(self, project_id: int) -> str:
        """Press "Label All Tasks" on the project's task list; the sample id of the first task."""
        self.page.goto(f"{self.url}/projects/{project_id}/data", wait_until="domcontentloaded")
        started = time.monotonic()
        self.page.get_by_text("Label All Tasks").first.click(timeout=RENDER_TIMEOUT_MS)
        return self._wait_task(started)

    def open_from_task_list(self, project_id: int, sample_id: str) -> str:
        """Click the task of `sample_id` in the project's task list (the Data Manager), as an
        annotator coming back to a task does; the sample id shown."""
        self.page.goto(f"{self.url}/projects/{project_id}/data", wait_until="domcontentloaded")
        started = time.monotonic()
        row = self.page.locator("[class*=table__row-wrapper]", has_text=sample_id).first
        row.wait_for(timeout=RENDER_TIMEOUT_MS)
        self._click(row)
        return self._wait_task(started)

    def shows_a_skip(self) -> bool:
        """Whether the annotation shown is a skipped one (its bottom bar offers "Cancel skip")."""
        bar = self.page.locator(".lsf-bottombar")
        return bar.count() > 0 and "Cancel skip" in bar.first.inner_text(timeout=RENDER_TIMEOUT_MS)

    def replace_raw_path(self, text: str) -> None:
        """Replace the whole raw JSON path (pasting a corrected path), and leave the field."""
        area = self.page.locator(".lsf-main-view textarea[name^='path_json']")
        self._click(area)
        area.fill(text)
        self.page.keyboard.press("Tab")
        self.actions += 2  # the paste and leaving the field

    def open_task(self, project_id: int, task_id: int) -> str:
        self.page.goto(f"{self.url}/projects/{project_id}/data?tab=1&task={task_id}", wait_until="domcontentloaded")
        return self._wait_task(time.monotonic())

    def _wait_task(self, started: float, previous: str | None = None) -> str:
        self._wait_for(
            "(previous) => { const v = document.querySelector('.lsf-main-view');"
            " if (!v || !v.querySelector('.fcb') || !v.querySelector('textarea')) return false;"
            " const m = /sample (\\S+) ·/.exec(v.innerText); return m && m[1] !== previous; }",
            previous)
        self.render_seconds.append(time.monotonic() - started)
        return self.sample_id()

    def sample_id(self) -> str:
        # the draft's header ("sample ID · domain"); a sent-back task shows its feedback above it
        match = _SAMPLE.search(self.page.inner_text(".lsf-main-view", timeout=RENDER_TIMEOUT_MS))  # 500 kB: slow
        if match is None:
            raise AssertionError("the labeling page shows no fcbench draft")
        return match.group(1)

    def submit(self) -> str | None:
        """Submit and wait for the queue's next task (None when the queue is empty)."""
        current = self.press_submit()
        return self.wait_next(current)

    def press_submit(self) -> str:
        """Press Submit (the annotation is saved right after); the sample id it was for."""
        current = self.sample_id()
        self._click(self.page.locator(".lsf-bottombar button", has_text="Submit").first)
        return current

    def wait_next(self, current: str) -> str | None:
        """Wait until the queue shows a task other than `current` (None: the queue is empty)."""
        started = time.monotonic()
        self._wait_for(
            "(current) => { if (/No more tasks|all tasks|Label All Tasks/i.test(document.body.innerText)"
            " && !document.querySelector('.lsf-main-view .fcb')) return true;"
            " const v = document.querySelector('.lsf-main-view');"
            " const m = v && v.querySelector('.fcb') && /sample (\\S+) ·/.exec(v.innerText);"
            " return m && m[1] !== current; }",
            current)
        if self.page.query_selector(".lsf-main-view .fcb") is None:
            return None
        self.render_seconds.append(time.monotonic() - started)
        return self.sample_id()

    # ------------------------------------------------------------------------------ what is shown
    def field_values(self) -> dict[str, str]:
        """The editable fields' contents by control name (pre-filled ones carry a region suffix)."""
        pairs = self.page.eval_on_selector_all(
            ".lsf-main-view input[name], .lsf-main-view textarea[name]",
            "els => els.filter(e => e.offsetParent !== null && e.type !== 'radio' && e.type !== 'checkbox')"
            ".map(e => [e.name.split(':')[0], e.value])")
        values: dict[str, str] = {}
        for name, value in pairs:
            if value and name not in values:
                values[name] = value
        return values

    def find_in_page(self, text: str) -> float:
        """Search the page with the browser's own find-in-page, what Ctrl+F drives (the DevTools
        protocol's FindInPage domain; `window.find` is another search, which skips folded text), and
        wait until the first match is on screen; seconds taken. The find bar opens a closed
        <details> around a match, so this is how an annotator reaches text in a folded response."""
        from playwright.sync_api import Error as PlaywrightError

        session = self.page.context.new_cdp_session(self.page)
        started = time.monotonic()
        try:
            session.send("FindInPage.findFirst", {"query": text})
        except PlaywrightError as exc:  # the domain is experimental and recent (Chromium 156 has it)
            version = self.page.context.browser.version if self.page.context.browser else "?"
            raise AssertionError(f"this Chromium ({version}) cannot drive its find-in-page: {exc}") from None
        self._wait_for(_ON_SCREEN, text, FIND_TIMEOUT_MS)
        seconds = time.monotonic() - started
        session.send("FindInPage.stop")
        session.detach()
        self.actions += 1 + len(text)  # Ctrl+F and the text typed into the find bar
        return seconds

    def on_screen(self, text: str) -> bool:
        """Whether the first occurrence of `text` in the labeling view is rendered inside the window."""
        return bool(self.page.evaluate(_ON_SCREEN, text))

    def text_area(self, name: str) -> str:
        """A pre-filled text region's value (`query`, `path_json`)."""
        return self.page.eval_on_selector(f".lsf-main-view textarea[name^='{name}:']", "e => e.value")

    # ---------------------------------------------------------------------------------- editing
    def choose_verdict(self, verdict: str) -> None:
        self._click(self.page.locator(f".lsf-main-view input[type=radio][name='{verdict}']"))

    def tick_entry(self, entry_id: str) -> None:
        self._click(self.page.locator(f".lsf-main-view input[type=checkbox][name='{entry_id}']"))

    def set_form_argument(self, slot: int, parameter: str, value: str) -> None:
        """Replace an argument in call `slot`'s form: click the field, select all, type."""
        field_ = self.page.locator(f".lsf-main-view input[name^='c{slot}__{parameter}']:visible").first
        self._click(field_)
        self.page.keyboard.press("Control+A")
        self.page.keyboard.type(value)
        self.page.keyboard.press("Tab")  # leaving the field commits it
        self.actions += 2 + len(value)

    def pick_reference(self, slot: int, pick: int, parameter: str, reference: str) -> None:
        """Set `parameter` of call `slot` to an earlier response field with the reference picker
        (`reference` as the options list it: `var_1.data[2].dest_id`, without the dollars)."""
        self._select(f"c{slot}_ref{pick}_to", parameter)
        self._select(f"c{slot}_ref{pick}", reference)

    def _select(self, control: str, value: str) -> None:
        """Choose `value` in a drop-down, unless it is already chosen (choosing it again would
        clear a single-choice drop-down)."""
        trigger = self.page.locator(f".lsf-main-view .{select_class(control)} button").first
        if trigger.get_attribute("data-value") == value:
            return
        self._click(trigger)
        # an option's text starts with its value (a reference option goes on with the value it reads)
        option = self.page.locator("[data-slot=command-item]").filter(
            has_text=re.compile("^" + re.escape(value) + r"(\s|$)")).first
        self._click(option)

    def type_note(self, text: str) -> None:
        """Type into the notes box and leave it, without pressing "Add" (what people do)."""
        self._click(self.page.locator(".lsf-main-view textarea[name='notes']"))
        self.page.keyboard.type(text)
        self.actions += len(text)

    def edit_raw_path(self, old: str, new: str, occurrence: int = 0) -> None:
        """Change text inside the raw JSON box (see `edit_text`)."""
        self.edit_text("path_json", old, new, occurrence)

    def clear_text(self, name: str) -> None:
        """Empty a pre-filled text box (select all, delete), as a person who wants it worked out again."""
        area = self.page.locator(f".lsf-main-view textarea[name^='{name}:']").first
        self._click(area)
        self.page.keyboard.press("Control+A")
        self.page.keyboard.press("Delete")
        self.page.keyboard.press("Tab")
        self.actions += 3

    def edit_text(self, name: str, old: str, new: str, occurrence: int = 0) -> None:
        """Change text inside a pre-filled text box (`query`, `path_json`) as a person does: click at
        the text (one click puts the caret there; a double-click or a drag selects it), then type
        the replacement."""
        boxes = self.page.locator(f".lsf-main-view textarea[name^='{name}']")
        # the box holding the text (a text region's editable value, not the empty box for a new one)
        area = next((boxes.nth(i) for i in range(boxes.count()) if old in boxes.nth(i).input_value()), boxes.first)
        text = area.input_value()
        if old not in text:
            seen = self.page.eval_on_selector_all(".lsf-main-view textarea", "es => es.map(e => [e.name, e.value.slice(0, 80)])")
            raise AssertionError(f"{old!r} is in no {name} box; boxes: {seen}")
        start = -1
        for _ in range(occurrence + 1):
            start = text.index(old, start + 1)
        self._click(area)
        area.evaluate("(e, range) => e.setSelectionRange(range[0], range[1])", [start, start + len(old)])
        self.actions += 1  # selecting the old text
        self.page.keyboard.type(new)
        self.actions += len(new)
        self.page.keyboard.press("Tab")
        self.actions += 1

    def _wait_for(self, script: str, arg: Any, timeout_ms: int = RENDER_TIMEOUT_MS) -> None:
        """Wait for a page condition; on timeout, fail with what the page shows (and a screenshot
        when FCBENCH_UI_DEBUG_DIR is set), not only playwright's timeout."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        try:
            self.page.wait_for_function(script, arg=arg, polling=200, timeout=timeout_ms)
        except PlaywrightTimeout:
            folder = os.environ.get("FCBENCH_UI_DEBUG_DIR")
            if folder:
                self.page.screenshot(path=str(Path(folder) / f"timeout-{int(time.time())}.png"))
            shown = self.page.inner_text("body")[:600].replace("\n", " | ")
            raise AssertionError(f"the labeling page did not get there in time; it shows: {shown}") from None

    def _click(self, locator: Any) -> None:
        locator.click(timeout=RENDER_TIMEOUT_MS)
        self.actions += 1


def login(page: Any, url: str, username: str, password: str, timeout_ms: int = 60_000) -> None:
    page.goto(f"{url}/user/login/", wait_until="domcontentloaded", timeout=timeout_ms)
    page.fill("input[name=email]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle", timeout=timeout_ms)


def browser_session(url: str, username: str, password: str, width: int = 1600,
                    height: int = 1100) -> Iterator[LabelingSession]:
    """A logged-in session (a generator: use with contextlib.contextmanager or `next`)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            login(page, url, username, password)
            yield LabelingSession(page, url)
        finally:
            browser.close()
