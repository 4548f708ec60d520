"""Speed of the Label Studio stages against the server's own import and export (the floor).

Starts a Label Studio server with `annotate.studio.server` (or uses --dir, a studio folder whose server is
already running or can be restarted: a fresh database spends half a minute on migrations), then:

- push: `annotate.exchange.push.push_tasks` sends N senior tasks (config checked by SDK and server, every
  prediction validated, the project's tasks listed for idempotence, batched imports). Floor: one
  `import_tasks` call of the same task payload into another project.
- pull: N annotated tasks (imported with their annotations, as the editor would have saved them)
  are pulled by `annotate.exchange.pull.export_snapshot` + `process_tasks` (each annotation converted to a
  gold sample and checked: references, schemas, kept responses) + the stage2 output files. Floor:
  the server's own snapshot export of the same project (create, wait, download).

Drafts are real: the travel world's hotel and flight paths over its 10 cities, executed by the
python environment, replicated to N with distinct ids. Each measure is the best of --repeat (the
machine runs other work). The LAST line is the worse of the two ratios (ours / floor). Run:
    .venv/bin/python bench/label_studio.py [--tasks 1000] [--repeat 3] [--dir STUDIO_DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from annotate.studio.client import Connection, open_client  # noqa: E402
from annotate.studio.label_configs import SENIOR, validated_config  # noqa: E402
from annotate.exchange.pull import export_snapshot, process_tasks, senior_builder  # noqa: E402
from annotate.exchange.push import push_tasks  # noqa: E402
from annotate.stage2.senior import Stage2Files, write_pull_outputs  # noqa: E402
from annotate.studio.server import StudioConfig, free_port, read_credentials, start, status, stop  # noqa: E402
from annotate.tasks.single import STAGE2_KIND, ToolCatalog, choices_result, senior_task  # noqa: E402
from fcbench.catalog import load_tools_file  # noqa: E402
from fcbench.environments.python_env import PythonEnvironment  # noqa: E402
from fcbench.environments.execution import execute_gold_paths  # noqa: E402
from fcbench.sample import Call, Sample  # noqa: E402

TRAVEL = REPO / "datasets" / "travel"
CITIES = ["Sydney", "Melbourne", "London", "Paris", "New York", "Tokyo", "Rome", "Barcelona", "Berlin", "Singapore"]


def travel_drafts(count: int) -> list[Sample]:
    tools = load_tools_file(TRAVEL / "tools.json")
    bases = []
    for city in CITIES:
        hotels = [[Call(label="var_1", name="Search_Hotel_Destination", arguments={"query": city})],
                  [Call(label="var_2", name="Search_Hotels", arguments={
                      "dest_id": "$var_1.data[0].dest_id$", "search_type": "$var_1.data[0].search_type$",
                      "arrival_date": "2025-05-02", "departure_date": "2025-05-05"})]]
        bases.append(Sample(id=f"hotels-{city}", tools=tools, calls=hotels,
                            messages=[{"role": "user", "content": f"A hotel in {city}, May 2 to 5."}]))
        airports = [[Call(label="var_1", name="Search_Flight_Location", arguments={"query": city})]]
        bases.append(Sample(id=f"airports-{city}", tools=tools, calls=airports,
                            messages=[{"role": "user", "content": f"Airports of {city}?"}]))
    with PythonEnvironment(TRAVEL / "tools.py", tools, workers=1) as environment:
        executed = [result.sample for result in execute_gold_paths(bases, environment)]
    drafts = []
    for index in range(count):
        base = executed[index % len(executed)]
        query = f"{base.messages[0]['content']} (request {index})"
        drafts.append(base.model_copy(update={"id": f"{base.id}-{index}",
                                              "messages": [{"role": "user", "content": query}]}))
    return drafts


def best_of(repeat: int, run: Callable[[int], float]) -> float:
    return min(run(attempt) for attempt in range(repeat))


def timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def annotated(task: dict[str, Any]) -> dict[str, Any]:
    """The task as the server holds it once a senior accepted the pre-filled draft."""
    result = task["predictions"][0]["result"] + [choices_result("verdict", "draft", ["accept"])]
    return {**task, "annotations": [{"result": result, "lead_time": 30.0}]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="studio folder to reuse (default: a fresh temp one)")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="fcbench-bench-ls-"))
    config = StudioConfig(root=args.dir or scratch / "studio", port=free_port())
    already_running = status(config).healthy
    started = time.perf_counter()
    if not already_running:
        start(config)
        print(f"server started in {time.perf_counter() - started:.1f} s")
    try:
        connection = Connection(status(config).url or config.url, read_credentials(config).token)
        client = open_client(connection)
        drafts = travel_drafts(args.tasks)
        catalog = ToolCatalog(load_tools_file(TRAVEL / "tools.json"))  # as `stage2 push` does: tools by hash
        build = time.perf_counter()
        tasks = [senior_task(draft, catalog=catalog) for draft in drafts]
        build = time.perf_counter() - build
        payload_mb = len(json.dumps(tasks)) / 1e6
        print(f"{args.tasks} tasks, {payload_mb:.1f} MB of task JSON, built in {build:.2f} s")
        xml = validated_config(SENIOR, client)
        stamp = f"{int(time.time())}"

        def floor_push(attempt: int) -> float:
            project = client.projects.create(title=f"bench floor push {stamp}-{attempt}", label_config=xml)
            return timed(lambda: client.projects.import_tasks(id=project.id, request=tasks, return_task_ids=True))

        def our_push(attempt: int) -> float:
            title = f"bench push {stamp}-{attempt}"
            return timed(lambda: push_tasks(connection, client, title, SENIOR, tasks, "draft"))

        push_floor = best_of(args.repeat, floor_push)
        push_ours = best_of(args.repeat, our_push)
        print(f"push   ours {push_ours:6.2f} s   floor (one import_tasks) {push_floor:6.2f} s   "
              f"ratio {push_ours / push_floor:.2f}")

        project = client.projects.create(title=f"bench pull {stamp}", label_config=xml)
        client.projects.import_tasks(id=project.id, request=[annotated(task) for task in tasks])
        files = Stage2Files.in_dir(scratch / "build")

        def floor_pull(attempt: int) -> float:
            def export_only() -> None:
                export = client.projects.exports.create(id=project.id, title="floor")
                while client.projects.exports.get(id=project.id, export_pk=export.id).status != "completed":
                    time.sleep(0.1)
                chunks = client.projects.exports.download(id=project.id, export_pk=export.id, export_type="JSON")
                body = b"".join(chunks)
                client.projects.exports.delete(id=project.id, export_pk=export.id)
                assert body
            return timed(export_only)

        parts: dict[str, float] = {}

        def our_pull(attempt: int) -> float:
            marks = [time.perf_counter()]
            exported = export_snapshot(connection, client, project.id)
            marks.append(time.perf_counter())
            outcomes = process_tasks(exported, STAGE2_KIND, senior_builder, lambda: None, catalog=catalog)
            marks.append(time.perf_counter())
            assert sum(outcome.status == "gold" for outcome in outcomes) == args.tasks
            write_pull_outputs(files, outcomes, "bench")
            marks.append(time.perf_counter())
            total = marks[-1] - marks[0]
            if not parts or total < sum(parts.values()):
                parts.update(zip(("export", "convert and check", "write files"),
                                 (later - earlier for earlier, later in zip(marks, marks[1:]))))
            return total

        pull_floor = best_of(args.repeat, floor_pull)
        pull_ours = best_of(args.repeat, our_pull)
        print(f"pull   ours {pull_ours:6.2f} s   floor (snapshot export) {pull_floor:6.2f} s   "
              f"ratio {pull_ours / pull_floor:.2f}")
        print("       ours = " + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in parts.items()))
        ratio = max(push_ours / push_floor, pull_ours / pull_floor)
    finally:
        if not already_running:
            stop(config)
        shutil.rmtree(scratch, ignore_errors=True)  # the temp studio (unless --dir) and the pulled files
    print(f"ratio {ratio:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
