"""Annotating in the real Label Studio UI: call forms vs the raw-JSON fallback, and a 500 kB task.

One Label Studio server (annotate.studio.server, its own folder), headless Chromium (annotate.browser.labeling_ui).
The same three drafts of the travel world are pushed to two projects, and the same scripted fixes
are made through "Label All Tasks" in each:
- hotels-rome-wrong: the draft searched "Paris"; change that argument to "Rome";
- hotels-paris: the query says Montmartre: point `dest_id` and `search_type` of Search_Hotels at the
  third destination (`$var_1.data[2].dest_id$`, `$var_1.data[2].search_type$`) and add `adults: 2`;
- airports-sydney: accept as shown.
"forms" edits through the call forms (a click and the value; a reference from the picker);
"raw" edits the raw JSON as a person does (one click to put the caret or select the old text, then
every character typed). Counted: clicks and key presses (`actions`), and seconds per task from the
task shown to the next task shown (render + edits + submit). Both projects are pulled and must give
the same gold, so the two ways really made the same fixes.

Then one draft whose responses hold 500 kB (Search_Hotels' list grown with distinct hotels) is
opened in the labeling page: seconds to render, whether the long response is folded (<details>),
whether the browser's find-in-page (what Ctrl+F drives) finds a hotel that is only in the folded
part, opens the fold and shows the match (and how long that takes; `window.find` for comparison),
and whether the fold closes again from its summary, which stays on screen beside the match.

LAST line: the ratio of actions per task, raw / forms. Run:
    .venv/bin/python bench/annotation_ui.py [--dir STUDIO_DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from annotate.studio.client import Connection  # noqa: E402
from annotate.browser.labeling_ui import LabelingSession, browser_session  # noqa: E402
from annotate.stage2.senior import run_stage2_pull, run_stage2_push  # noqa: E402
from annotate.studio.server import StudioConfig, free_port, read_credentials, start, stop  # noqa: E402
from fcbench.catalog import load_tools_file  # noqa: E402
from fcbench.config import load_pipelines  # noqa: E402
from fcbench.environments.python_env import PythonEnvironment  # noqa: E402
from fcbench.environments.execution import execute_gold_paths  # noqa: E402
from fcbench.jsonl import write_json_lines  # noqa: E402
from fcbench.sample import Call, Sample, sample_to_dict  # noqa: E402

TRAVEL = REPO / "datasets" / "travel"
DATES = {"arrival_date": "2025-03-01", "departure_date": "2025-03-03"}
BIG_BYTES = 500_000


def drafts() -> list[Sample]:
    tools = load_tools_file(TRAVEL / "tools.json")
    hotels = {"dest_id": "$var_1.data[0].dest_id$", "search_type": "$var_1.data[0].search_type$", **DATES}
    paths = {
        "hotels-paris": ("Find me a hotel in Montmartre, Paris from 2025-03-01 to 2025-03-03 for two adults.", "Paris"),
        "hotels-rome-wrong": ("Find a hotel in Rome from 2025-03-01 to 2025-03-03.", "Paris"),
    }
    samples = [Sample(id=sample_id, domain="hotels", tools=tools, messages=[{"role": "user", "content": query}],
                      calls=[[Call(label="var_1", name="Search_Hotel_Destination", arguments={"query": city})],
                             [Call(label="var_2", name="Search_Hotels", arguments=dict(hotels))]])
               for sample_id, (query, city) in paths.items()]
    samples.append(Sample(id="airports-sydney", domain="flights", tools=tools,
                          messages=[{"role": "user", "content": "Which airports serve Sydney?"}],
                          calls=[[Call(label="var_1", name="Search_Flight_Location", arguments={"query": "Sydney"})]]))
    with PythonEnvironment(TRAVEL / "tools.py", tools, workers=1, timeout=10) as environment:
        results = execute_gold_paths(samples, environment)
    for result in results:
        if not result.ok:
            raise SystemExit(f"a bench draft does not execute: {result.failure}")
    return [result.sample for result in results]


def big_draft(base: Sample) -> tuple[Sample, str]:
    """`base` with Search_Hotels' list grown to about BIG_BYTES of distinct hotels; the name of
    the last one (what find-in-page must reach)."""
    response = json.loads(json.dumps(base.calls[1][0].response))
    template = response["data"]["hotels"][0]
    hotels, number = [], 0
    while len(json.dumps(hotels)) < BIG_BYTES:
        number += 1
        hotels.append({**template, "hotel_id": 9_000_000 + number, "name": f"Bench Hotel {number:05d}"})
    response["data"]["hotels"] = hotels
    calls = [base.calls[0], [base.calls[1][0].model_copy(update={"response": response})]]
    return base.model_copy(update={"id": "hotels-paris-500kb", "calls": calls}), hotels[-1]["name"]


def write_pipeline(root: Path, name: str, samples: list[Sample]) -> Any:
    text = (f"pipelines:\n  {name}:\n    dataset_dir: {root / name}\n    seed: 3\n    tools: {TRAVEL / 'tools.json'}\n"
            f"    environment:\n      kind: python\n      module: {TRAVEL / 'tools.py'}\n      timeout_s: 10\n"
            f"      workers: 1\n    stages:\n      stage2:\n        select: 10\n        project_title: bench {name}\n")
    (root / f"{name}.yaml").write_text(text, encoding="utf-8")
    pipeline = load_pipelines(root / f"{name}.yaml").get_pipeline(name)
    write_json_lines(pipeline.build_dir / "drafts.jsonl", [sample_to_dict(s.model_copy(deep=True)) for s in samples])
    return pipeline


def fix_with_forms(ui: LabelingSession, sample_id: str) -> None:
    if sample_id == "airports-sydney":
        ui.choose_verdict("accept")
        return
    ui.choose_verdict("fix")
    if sample_id == "hotels-rome-wrong":
        ui.set_form_argument(1, "query", "Rome")
    elif sample_id == "hotels-paris":
        ui.pick_reference(2, 2, "dest_id", "var_1.data[2].dest_id")
        ui.pick_reference(2, 1, "search_type", "var_1.data[2].search_type")  # an enum: its reference is in a picker
        ui.set_form_argument(2, "adults", "2")


def fix_raw(ui: LabelingSession, sample_id: str) -> None:
    if sample_id == "airports-sydney":
        ui.choose_verdict("accept")
        return
    ui.choose_verdict("fix")
    if sample_id == "hotels-rome-wrong":
        ui.edit_raw_path("Paris", "Rome")
    elif sample_id == "hotels-paris":
        ui.edit_raw_path("data[0].dest_id", "data[2].dest_id")
        ui.edit_raw_path("data[0].search_type", "data[2].search_type")
        ui.edit_raw_path('"departure_date": "2025-03-03"', '"departure_date": "2025-03-03", "adults": 2')


def play(url: str, username: str, password: str, project_id: int, fixer: Any) -> dict[str, Any]:
    per_task: dict[str, dict[str, float]] = {}
    with contextmanager(browser_session)(url, username, password) as ui:
        sample_id = ui.open_queue(project_id)
        while sample_id is not None:
            started, before = time.monotonic(), ui.actions
            fixer(ui, sample_id)
            following = ui.submit()
            per_task[sample_id] = {"actions": ui.actions - before, "seconds": round(time.monotonic() - started, 2),
                                   "render_s": round(ui.render_seconds[0 if len(per_task) == 0 else -1], 2)}
            sample_id = following
    return per_task


def open_big(url: str, username: str, password: str, project_id: int, task_id: int, needle: str) -> dict[str, Any]:
    """The 500 kB task: render, then search a hotel that is only in the folded part, as an annotator
    does (Ctrl+F: the browser's find-in-page, through the DevTools protocol) and as `window.find`
    does (which skips folded text: recorded to show why the test uses the real find), then fold it again."""
    with contextmanager(browser_session)(url, username, password) as ui:
        ui.open_task(project_id, task_id)
        render = ui.render_seconds[-1]
        page = ui.page
        fold = page.locator(".lsf-main-view details.fold").first
        closed_before = fold.count() > 0 and not fold.evaluate("e => e.open")
        window_find_folded = page.evaluate("(n) => window.find(n)", needle)
        find_s = ui.find_in_page(needle)  # raises unless the match ends up on screen
        opened_by_find = fold.evaluate("e => e.open")
        box = fold.locator("summary").bounding_box()
        summary_on_screen = box is not None and 0 <= box["y"] <= page.viewport_size["height"] - box["height"]
        started = time.monotonic()
        fold.locator("summary").click()
        page.wait_for_function("() => !document.querySelector('.lsf-main-view details.fold').open")
        fold_again_s = time.monotonic() - started
        # the page stays usable: the verdict can still be chosen
        started = time.monotonic()
        ui.choose_verdict("accept")
        click_s = time.monotonic() - started
        page_bytes = len(page.content())
    return {"render_s": round(render, 2), "folded": closed_before, "window_find_while_folded": window_find_folded,
            "find_in_page_while_folded_s": round(find_s, 2), "opened_by_find": opened_by_find,
            "summary_on_screen_at_match": summary_on_screen, "fold_again_s": round(fold_again_s, 2),
            "verdict_click_s": round(click_s, 2), "page_kb": page_bytes // 1000}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None, help="a studio folder (default: a fresh temporary one)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fcbench-ui-bench-"))
    config = StudioConfig(root=args.dir or work / "studio", port=free_port())
    try:
        start(config)
        credentials = read_credentials(config)
        connection = Connection(config.url, credentials.token)
        samples = drafts()
        forms = write_pipeline(work, "forms", samples)
        raw = write_pipeline(work, "raw", samples)
        big, needle = big_draft(next(s for s in samples if s.id == "hotels-paris"))
        large = write_pipeline(work, "large", [big])
        response_kb = len(json.dumps(big.calls[1][0].response)) // 1000
        pushed = {name: run_stage2_push(pipeline, connection)
                  for name, pipeline in (("forms", forms), ("raw", raw), ("large", large))}
        login = (config.url, credentials.username, credentials.password)
        results = {"forms": play(*login, pushed["forms"].project_id, fix_with_forms),
                   "raw": play(*login, pushed["raw"].project_id, fix_raw)}
        gold = {}
        for name, pipeline in (("forms", forms), ("raw", raw)):
            report = run_stage2_pull(pipeline, connection=connection)
            rows = [json.loads(line) for line in (pipeline.build_dir / "templates.jsonl").read_text().splitlines()]
            gold[name] = {row["id"]: [[(c["name"], c["arguments"]) for c in step] for step in row["calls"]]
                          for row in rows}
            print(f"pull {name}: {report.counts['gold']} gold, {report.counts['rejected']} rejected {report.failures}")
        same_gold = gold["forms"] == gold["raw"] and len(gold["forms"]) == 3
        large_result = open_big(*login, pushed["large"].project_id, pushed["large"].task_ids[0], needle)
    finally:
        stop(config)
        shutil.rmtree(work, ignore_errors=True)

    print(f"{'task':<20} {'forms actions':>13} {'raw actions':>11} {'forms s':>8} {'raw s':>7}")
    for sample_id in sorted(results["forms"]):
        f, r = results["forms"][sample_id], results["raw"].get(sample_id, {})
        print(f"{sample_id:<20} {f['actions']:>13} {r.get('actions', '-'):>11} {f['seconds']:>8} {r.get('seconds', '-'):>7}")
    totals = {name: (sum(t["actions"] for t in tasks.values()), sum(t["seconds"] for t in tasks.values()) / len(tasks))
              for name, tasks in results.items()}
    print(f"actions per task: forms {totals['forms'][0] / 3:.1f}, raw {totals['raw'][0] / 3:.1f}; "
          f"seconds per task: forms {totals['forms'][1]:.1f}, raw {totals['raw'][1]:.1f}")
    print(f"both ways gave the same gold: {same_gold}")
    print(f"500 kB task ({response_kb} kB response): {json.dumps(large_result)}")
    print(f"ratio actions raw/forms: {totals['raw'][0] / max(totals['forms'][0], 1):.2f}")
    return 0 if same_gold else 1


if __name__ == "__main__":
    raise SystemExit(main())
