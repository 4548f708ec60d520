"""`stage2 push` and `stage2 pull` of ~1,000 long-response travel-full drafts against a real Label
Studio server: wall time and peak RSS of our process, and the server's peak RSS beside it.

The travel-full pipeline is copied with its datasets into a temporary folder (the repository's own
build is never touched), its stage1 is asked for --tasks queries (default 1,007, the size of the
full build; stage2 selects as many), and `build-dataset stage1 --offline` writes the drafts: real
travel-full drafts, responses up to ~480 kB. A fresh studio (SQLite) is started in the folder
(start-up not timed), then, each a `build-dataset` subprocess measured as bench/cfb_scale.py does
(wall time, `wait4`'s ru_maxrss of the stage process, the peak of its process tree sampled every
0.1 s from /proc) while the server's process tree is sampled every 0.2 s:

- push: `build-dataset stage2 push travel-full --count N` into the pipeline's project;
- pull: every pushed task with one accepting annotation (the prediction's result plus the verdict
  "accept", as the editor saves a senior's accept; copied from the pushed tasks into the
  pipeline's project, with the pushed project renamed: creating 1,000 annotations one request at a
  time took 13 min on this server), then `build-dataset stage2 pull travel-full`, whose summary must
  count every task as gold.

The LAST line is the largest of the three peaks (stage process tree) against the 2,048 MB ceiling of
issue 17 (below 1 is within it). Run:
    .venv/bin/python bench/studio_long.py [--tasks 1007] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from cfb_scale import GOAL_RSS_MB, StageRun, _descendants, _rss_kb, copy_pipeline, run_stage  # noqa: E402

from annotate.studio.client import Connection, open_client, raw_request  # noqa: E402
from annotate.exchange.push import IMPORT_BATCH_BYTES, find_project  # noqa: E402
from annotate.studio.server import StudioConfig, free_port, read_credentials, start, stop  # noqa: E402
from annotate.tasks.single import choices_result  # noqa: E402

PIPELINE = "travel-full"
COPY_PAGE = 50  # tasks per page when copying the pushed tasks (each carries its whole data)


class TreeSampler:
    """The peak RSS of a process and its descendants, sampled in a thread while a block runs."""

    def __init__(self, pid: int, every: float = 0.2) -> None:
        self.pid, self.every, self.peak_kb = pid, every, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            total = _rss_kb(self.pid) + sum(_rss_kb(child) for child in _descendants(self.pid))
            self.peak_kb = max(self.peak_kb, total)
            self._stop.wait(self.every)

    def __enter__(self) -> "TreeSampler":
        self.peak_kb = 0
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak_mb(self) -> float:
        return self.peak_kb / 1024


def sized_pipelines(pipelines: Path, tasks: int) -> None:
    """travel-full's stage1 asked for `tasks` queries and its stage2 selecting as many."""
    text = pipelines.read_text(encoding="utf-8")
    start_at = text.index(f"  {PIPELINE}:")
    head, block = text[:start_at], text[start_at:]
    block, queries = re.subn(r"(\n\s+queries: )\d+", rf"\g<1>{tasks}", block, count=1)
    block, select = re.subn(r"(\n\s+select: )\d+", rf"\g<1>{tasks}", block, count=1)
    if not (queries and select):
        raise SystemExit(f"pipelines.yaml: {PIPELINE} has no stage1 queries or stage2 select to resize")
    pipelines.write_text(head + block, encoding="utf-8")


def pushed_tasks(client: Any, project_id: int) -> Iterator[dict[str, Any]]:
    """The project's tasks with their data and predictions, one page at a time."""
    page = 1
    while True:
        response = raw_request(client, "GET", "api/tasks/", params={
            "project": project_id, "page": page, "page_size": COPY_PAGE, "fields": "all"})
        if response.status_code == 404:
            return
        response.raise_for_status()
        body = response.json()
        items = body.get("tasks", []) if isinstance(body, dict) else body
        if not items:
            return
        yield from items
        page += 1


def accepted(task: dict[str, Any]) -> dict[str, Any]:
    """The task as the server holds it once a senior accepted the pre-filled draft."""
    prediction = task["predictions"][0]
    result = list(prediction["result"]) + [choices_result("verdict", "draft", ["accept"])]
    return {"data": task["data"], "annotations": [{"result": result, "lead_time": 30.0}]}


def copy_with_annotations(client: Any, source: int, title: str) -> int:
    """A project titled `title` (the source's config) holding the source's tasks, each accepted."""
    config = client.projects.get(id=source).label_config
    target = int(client.projects.create(title=title, label_config=config).id)
    batch: list[dict[str, Any]] = []
    size = 0
    for task in pushed_tasks(client, source):
        item = accepted(task)
        item_size = len(json.dumps(item))
        if batch and size + item_size > IMPORT_BATCH_BYTES:
            client.projects.import_tasks(id=target, request=batch)
            batch, size = [], 0
        batch.append(item)
        size += item_size
    if batch:
        client.projects.import_tasks(id=target, request=batch)
    return target


def report(run: StageRun, server_mb: float) -> None:
    print(f"{run.name:12s} {run.seconds:7.1f} s   peak RSS {run.rss_mb:7,.0f} MB (stage), {run.tree_rss_mb:7,.0f} MB "
          f"(with workers)   server peak {server_mb:7,.0f} MB   exit {run.exit_code}", flush=True)
    if run.exit_code != 0:
        raise SystemExit(f"{run.name} failed: {run.tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=1007)
    parser.add_argument("--keep", type=Path, help="work in this folder (kept) instead of a temporary one")
    args = parser.parse_args()

    root = args.keep or Path(tempfile.mkdtemp(prefix="fcbench-studio-long."))
    root.mkdir(parents=True, exist_ok=True)
    pipelines = copy_pipeline(root, PIPELINE)
    sized_pipelines(pipelines, args.tasks)
    studio = StudioConfig(root=root / "studio", port=free_port())
    tool = str(Path(sys.executable).with_name("build-dataset"))
    env = {**os.environ, "FCBENCH_PROGRESS": "0", "FCBENCH_STUDIO_DIR": str(studio.root)}
    for name in ("FCBENCH_LS_URL", "FCBENCH_LS_TOKEN", "FCBENCH_LS_TOKEN_FILE"):
        env.pop(name, None)  # the bench's own studio, never another server
    common = ["--file", str(pipelines)]
    build = root / "datasets" / PIPELINE / "build"
    try:
        stage1 = run_stage("stage1", [tool, "stage1", PIPELINE, "--offline", *common], root, env)
        if stage1.exit_code != 0:
            raise SystemExit(f"stage1 failed: {stage1.tail}")
        drafts_mb = (build / "drafts.jsonl").stat().st_size / 1e6
        longest = max(len(line) for line in open(build / "drafts.jsonl", "rb")) / 1e3
        print(f"stage1: {args.tasks} queries -> {drafts_mb:.0f} MB of drafts (longest line {longest:,.0f} kB) "
              f"in {stage1.seconds:.0f} s", flush=True)
        began = time.perf_counter()
        server = start(studio)
        print(f"server started in {time.perf_counter() - began:.0f} s (pid {server.pid})", flush=True)
        sampler = TreeSampler(server.pid or 0)
        with sampler:
            push = run_stage("stage2 push", [tool, "stage2", "push", PIPELINE, "--count", str(args.tasks), *common],
                             root, env)
        report(push, sampler.peak_mb)

        client = open_client(Connection(studio.url, read_credentials(studio).token))
        from fcbench.config import load_pipelines

        title = load_pipelines(pipelines).pipelines[PIPELINE].stages.stage2.project_title or f"{PIPELINE} stage2"
        project = find_project(client, title)
        pushed = client.projects.get(id=project.id).task_number
        if pushed != args.tasks:
            raise SystemExit(f"the push made {pushed} tasks, not {args.tasks}")
        client.projects.update(id=project.id, title=f"{title} (pushed)")
        began = time.perf_counter()
        copy_with_annotations(client, int(project.id), title)
        print(f"(pushed tasks copied with an accepting annotation each in {time.perf_counter() - began:.0f} s; "
              "not timed)", flush=True)
        with sampler:
            pull = run_stage("stage2 pull", [tool, "stage2", "pull", PIPELINE, *common], root, env)
        report(pull, sampler.peak_mb)
        with sampler:  # pulling again: the same gold, the earlier templates merged in
            again = run_stage("pull again", [tool, "stage2", "pull", PIPELINE, *common], root, env)
        report(again, sampler.peak_mb)
        summary = json.loads((build / "stage2.summary.json").read_text(encoding="utf-8"))
        gold = summary["counts"]["gold"]
        templates_mb = (build / "templates.jsonl").stat().st_size / 1e6
        print(f"pushed {pushed} tasks; pulled {gold} gold of {summary['counts']['tasks']} tasks, "
              f"{templates_mb:.0f} MB of templates", flush=True)
        if gold != args.tasks:
            raise SystemExit(f"pull made {gold} gold templates, not {args.tasks}: {summary}")
        print("load average (1, 5, 15 min): " + ", ".join(f"{load:.2f}" for load in os.getloadavg()))
        worst = max((push, pull, again), key=lambda run: run.tree_rss_mb)
        print(f"largest: {worst.name} {worst.tree_rss_mb:,.0f} MB of {args.tasks} tasks over {drafts_mb:.0f} MB of "
              f"drafts; ratio peak RSS / {GOAL_RSS_MB} MB ceiling: {worst.tree_rss_mb / GOAL_RSS_MB:.2f}")
    finally:
        stop(studio)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
