"""How soon the live checks show their verdict: from an annotation's save to its verdict on the task.

The webhook receiver (`build-dataset studio webhook`, annotate/webhook.py) promises a verdict
within seconds of a submission; the tests only wait for the verdict (a loaded machine is slower),
so the latency is measured here. Starts a Label Studio server (or uses --dir), pushes --tasks travel
drafts (bench/label_studio.py's), starts the receiver process, then saves one annotation per task
through the API, as the editor saves it, alternating a correct one and a broken one (a path JSON
that does not parse: checked, flagged and sent back to its annotator), and polls each task until
its verdict for that very annotation is on it. Prints the latency of every annotation (median,
90th percentile, largest); the LAST line is the median latency over the 5 s promise (below 1: kept).

    .venv/bin/python bench/webhook_latency.py [--tasks 20] [--dir STUDIO_DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from label_studio import travel_drafts  # noqa: E402 (bench/label_studio.py: the same drafts)

from annotate.review.live_check import annotation_key  # noqa: E402
from annotate.studio.client import Connection, open_client, raw_request  # noqa: E402
from annotate.studio.server import StudioConfig, free_port, read_credentials, start, status, stop  # noqa: E402
from annotate.stage2.senior import run_stage2_push  # noqa: E402
from annotate.tasks.single import choices_result  # noqa: E402
from annotate.exchange.push import list_tasks  # noqa: E402
from fcbench.config import load_pipelines  # noqa: E402
from fcbench.jsonl import write_json_lines  # noqa: E402
from fcbench.sample import sample_to_dict  # noqa: E402

PROMISE_S = 5.0
DEADLINE_S = 120.0


def _verdict(client: Any, task_id: int, annotation_id: int) -> tuple[str | None, float | None]:
    task = raw_request(client, "GET", f"api/tasks/{task_id}").json()
    annotation = next(item for item in task["annotations"] if item["id"] == annotation_id)
    saved = datetime.fromisoformat(annotation["created_at"].replace("Z", "+00:00")).timestamp()
    check = (task["data"].get("live_checks") or {}).get(str(annotation_id))
    return (check["verdict"] if check and check["key"] == annotation_key(annotation) else None), saved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--dir", type=Path, help="a studio folder (its server started if needed)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fcbench-webhook-bench."))
    studio = StudioConfig(root=args.dir or work / "studio", port=free_port())
    started_here = not (args.dir and status(studio).running)
    if started_here:
        start(studio)
    studio = StudioConfig(root=studio.root, port=int(status(studio).url.rsplit(":", 1)[1]))
    connection = Connection(studio.url, read_credentials(studio).token)
    client = open_client(connection)
    pipelines = work / "pipelines.yaml"
    pipelines.write_text(f"pipelines:\n  hooked:\n    dataset_dir: {work / 'dataset'}\n    seed: 1\n"
                         f"    tools: {REPO / 'datasets' / 'travel' / 'tools.json'}\n"
                         f"    environment: {{kind: python, module: {REPO / 'datasets' / 'travel' / 'tools.py'}, "
                         f"timeout_s: 5, workers: 1}}\n"
                         f"    stages:\n      stage2: {{select: {args.tasks}, project_title: hooked {work.name}}}\n")
    pipeline = load_pipelines(pipelines).get_pipeline("hooked")
    write_json_lines(pipeline.build_dir / "drafts.jsonl", [sample_to_dict(d) for d in travel_drafts(args.tasks)])
    pushed = run_stage2_push(pipeline, connection)
    tasks = list_tasks(client, pushed.project_id)
    env = {**os.environ, "FCBENCH_LS_URL": connection.url, "FCBENCH_LS_TOKEN": connection.token}
    hook = [sys.executable, "-m", "fcbench.cli", "studio", "webhook", "hooked", "--file", str(pipelines),
            "--dir", str(studio.root)]
    subprocess.run(hook, check=True, env=env, cwd=REPO, capture_output=True)
    latencies: list[float] = []
    try:
        for index, task in enumerate(tasks):
            result = [dict(region) for region in client.predictions.list(task=task.id)[0].result]
            if index % 2:  # a broken one: flagged and sent back to its annotator
                result = [{**region, "value": {"text": ['[[{"label": "var_1", "name": }]]']}}
                          if region["from_name"] == "path_json" else region for region in result]
            result.append(choices_result("verdict", "draft", ["fix" if index % 2 else "accept"]))
            annotation = client.annotations.create(id=task.id, result=result, lead_time=3.0)
            began = time.monotonic()
            verdict, saved = _verdict(client, task.id, annotation.id)
            while verdict is None and time.monotonic() - began < DEADLINE_S:
                time.sleep(0.05)
                verdict, saved = _verdict(client, task.id, annotation.id)
            if verdict is None:
                raise SystemExit(f"task {task.id}: no verdict within {DEADLINE_S:g} s")
            latencies.append(time.time() - saved)
            print(f"task {task.id}: {verdict!r} {latencies[-1]:.2f} s after the save")
    finally:
        subprocess.run([*hook, "--stop"], env=env, cwd=REPO, capture_output=True)
        if started_here:
            stop(studio)
        shutil.rmtree(work, ignore_errors=True)
    ordered = sorted(latencies)
    median = statistics.median(ordered)
    print(f"{len(ordered)} annotations: median {median:.2f} s, 90th percentile "
          f"{ordered[int(0.9 * (len(ordered) - 1))]:.2f} s, largest {ordered[-1]:.2f} s")
    print("load average (1, 5, 15 min): " + ", ".join(f"{load:.2f}" for load in os.getloadavg()))
    print(f"median save-to-verdict latency / {PROMISE_S:g} s promise: {median / PROMISE_S:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
