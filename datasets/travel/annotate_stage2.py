"""How datasets/travel/annotations/stage2_export.json was made: six stage1 drafts of `travel` pushed
to a real, local Label Studio server (`stage2 push`), annotated through its API the way the labeling
editor submits an annotation (the prediction's regions, edited, plus the verdict) by two senior
annotators with accounts of their own, then exported as a snapshot (what `stage2 pull` reads from
the server). Nothing is written into the export by hand; re-running this script makes the same
decisions (the server's ids and times are its own).

The six tasks show what the pull must handle (tests/annotate/exchange/test_ls_bundled_export.py):
one draft accepted by both seniors (their agreement), one query rewritten, one draft fixed by
deleting four ambiguous response entries, one annotation whose path JSON is broken, one skipped
(cancelled), one not annotated yet.

  FCBENCH_STUDIO_VENV=/work/main/.venv-studio .venv/bin/python datasets/travel/annotate_stage2.py
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
EXPORT = REPO / "datasets" / "travel" / "annotations" / "stage2_export.json"

# the drafts pushed, in push order, and what each senior does with them (annotator 1, annotator 2)
PUSHED = ["travel-draft-0009", "travel-draft-0013", "travel-draft-0030", "travel-draft-0002", "travel-draft-0019",
          "travel-draft-0021"]
ACCEPT = {"verdict": "accept"}
DECISIONS: dict[str, list[tuple[int, dict[str, Any]]]] = {
    "travel-draft-0009": [(1, {**ACCEPT, "lead_time": 41.0}), (2, {**ACCEPT, "lead_time": 55.5})],
    "travel-draft-0013": [(1, {"verdict": "fix", "lead_time": 73.2, "error_flags": ["query_rewritten"],
                               "query": "Find taxi offers from Central Park to LaGuardia on March 15, 2026 at 06:30 with "
                                        "prices in SGD."})],
    # only the city among the destinations that match "Paris" (the other four entries make dest_id
    # ambiguous); the rooms in the hotels' currency, an argument the annotator added to the path
    # before stage1 carried a search's currency to what reads it, is the draft's own now
    "travel-draft-0030": [(1, {"verdict": "fix", "lead_time": 180.4, "error_flags": ["ambiguous_response"],
                               "delete": ["var_1.data[1]", "var_1.data[2]", "var_1.data[3]", "var_1.data[4]"],
                               "notes": "Rooms in GBP like the hotels (drafted so); only the city matches 'Paris'."})],
    # a slip: the path JSON loses a quote (the pull reports it, never guesses)
    "travel-draft-0002": [(2, {"verdict": "fix", "lead_time": 95.0, "error_flags": ["value_error"],
                               "path": lambda text: text.replace('{"query"', '{query"', 1)})],
    "travel-draft-0019": [(2, {"cancel": True, "lead_time": 4.0})],
}


def main() -> None:
    from annotate.exchange.pull import export_snapshot
    from annotate.exchange.push import find_project, list_tasks
    from annotate.stage2.senior import project_title, run_stage2_push
    from annotate.studio.client import Connection, open_client
    from annotate.studio.server import StudioConfig, free_port, read_credentials, start, stop
    from annotate.studio.team import ensure_annotators
    from annotate.tasks.single import choices_result, textarea_result
    from fcbench.config import load_pipelines
    from fcbench.jsonl import write_json
    from fcbench.pipeline.run import run_stage

    pipeline = load_pipelines(REPO / "pipelines.yaml").get_pipeline("travel")
    print("stage1", run_stage("stage1", pipeline, offline=True, force=True).counts)
    # push exactly the six drafts: a build folder of their own holding just their lines
    only = Path(tempfile.mkdtemp(prefix="travel-six-"))
    drafts = {json.loads(line)["id"]: line for line in (pipeline.build_dir / "drafts.jsonl").read_text().splitlines()}
    six = pipeline.model_copy(update={"dataset_dir": str(only)})
    six.build_dir.mkdir(parents=True, exist_ok=True)
    (six.build_dir / "drafts.jsonl").write_text("".join(drafts[draft_id] + "\n" for draft_id in PUSHED))
    config = StudioConfig(root=Path(tempfile.mkdtemp(prefix="travel-studio-")), port=free_port())
    start(config)
    try:
        connection = Connection(config.url, read_credentials(config).token)
        client = open_client(connection)
        print("pushed", run_stage2_push(six, connection, count=len(PUSHED)).counts)
        seniors = ensure_annotators(config, config.url, client, 2)
        as_senior = {number: open_client(Connection(config.url, member.token)) for number, member in
                     enumerate(seniors, start=1)}
        project = find_project(client, project_title(six))
        for task in sorted(list_tasks(client, int(project.id)), key=lambda task: PUSHED.index(task.sample_id)):
            for number, decision in DECISIONS.get(task.sample_id, []):
                prediction = client.predictions.list(task=task.id)[0]
                result = [dict(region) for region in prediction.result]
                to_name = result[0]["to_name"]
                if decision.get("cancel"):
                    as_senior[number].annotations.create(id=task.id, result=[], was_cancelled=True,
                                                         lead_time=decision["lead_time"])
                    print(task.sample_id, "skipped by senior", number)
                    continue
                for region in result:
                    if "query" in decision and region["from_name"] == "query":
                        region["value"] = {"text": [decision["query"]]}
                    if "path" in decision and region["from_name"] == "path_json":
                        region["value"] = {"text": [decision["path"](region["value"]["text"][0])]}
                result.append(choices_result("verdict", to_name, [decision["verdict"]]))
                if decision.get("delete"):
                    result.append(choices_result("delete_entries", to_name, decision["delete"]))
                if decision.get("error_flags"):
                    result.append(choices_result("error_flags", to_name, decision["error_flags"]))
                if decision.get("notes"):
                    result.append(textarea_result("notes", to_name, decision["notes"]))
                as_senior[number].annotations.create(id=task.id, result=result, lead_time=decision["lead_time"])
                print(task.sample_id, decision["verdict"], "by senior", number)
        snapshot = export_snapshot(connection, client, int(project.id))
        EXPORT.parent.mkdir(parents=True, exist_ok=True)
        write_json(EXPORT, sorted(snapshot, key=lambda task: task["id"]), indent=1)
        print(f"{len(snapshot)} tasks exported to {EXPORT}")
    finally:
        stop(config)
        shutil.rmtree(only, ignore_errors=True)


if __name__ == "__main__":
    main()
