"""How datasets/amadeus/annotations/stage2_export.json was made: the stage1 drafts pushed to a real,
local Label Studio server (`stage2 push`), annotated through its API the way the labeling editor
submits an annotation (the prediction's regions, edited, plus the verdict), then exported as a
snapshot (what `stage2 pull` reads from the server). Nothing is written into the export by hand.

The decisions below are a senior annotator's, taken by reading each draft (datasets/amadeus/build/
drafts.jsonl after `build.py record stage1`): accept by default, rewrite some of the generic queries
the graph sampler phrases from operation summaries, fix a wrong link, reject meaningless drafts.

  FCBENCH_STUDIO_VENV=/work/main/.venv-studio .venv/bin/python datasets/amadeus/annotate_stage2.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
EXPORT = REPO / "datasets" / "amadeus" / "annotations" / "stage2_export.json"

# draft id -> (verdict, rewritten query or None, notes, path edits: text replaced in the path JSON)
DECISIONS = {
    "amadeus-draft-0001": ("fix", "Search for cities (CITY) matching the keyword MUC, then get the full details of the "
                                  "second result.", "Query rewritten in plain words.", {}),
    "amadeus-draft-0020": ("fix", "Look up the city PARIS, list the activities around it (its latitude and longitude), "
                                  "then show me the first activity in detail.", "Query rewritten in plain words.", {}),
    "amadeus-draft-0018": ("fix", "Find hotels in NYC with ratings 2 and get the offers of the first one for 3 adults "
                                  "with breakfast (BREAKFAST). Also list the SHOPPING points of interest in the box north "
                                  "48.91, west 2.25, south 48.8, east 2.41 and show me the third one.",
                           "Query rewritten; the path is right.", {}),
    "amadeus-draft-0028": ("fix", None, "A transfer starts at an airport code, not a country code: startLocationCode "
                                        "now reads the airport's iataCode.", {"address.countryCode": "iataCode"}),
    "amadeus-draft-0007": ("reject", None, "The transfer's start location is fed a hotel's country code.", {}),
    "amadeus-draft-0009": ("reject", None, "Four identical lookups and transfers from country codes: not one request.", {}),
}


def main() -> None:
    from annotate.studio.client import Connection, open_client
    from annotate.exchange.pull import export_snapshot
    from annotate.exchange.push import find_project, list_tasks
    from annotate.stage2.senior import project_title, run_stage2_push
    from annotate.studio.server import StudioConfig, free_port, read_credentials, start, stop
    from annotate.tasks.single import choices_result, textarea_result
    from fcbench.config import load_pipelines
    from fcbench.jsonl import write_json

    pipeline = load_pipelines(REPO / "pipelines.yaml").get_pipeline("amadeus")
    config = StudioConfig(root=Path(tempfile.mkdtemp(prefix="amadeus-studio-")), port=free_port())
    start(config)
    try:
        connection = Connection(config.url, read_credentials(config).token)
        client = open_client(connection)
        pushed = run_stage2_push(pipeline, connection)
        print("pushed", pushed.counts)
        project = find_project(client, project_title(pipeline))
        for task in list_tasks(client, int(project.id)):
            verdict, query, notes, path_edits = DECISIONS.get(task.sample_id, ("accept", None, "", {}))
            prediction = client.predictions.list(task=task.id)[0]
            result = [dict(region) for region in prediction.result]
            to_name = result[0]["to_name"]
            for region in result:
                if query and region["from_name"] == "query":
                    region["value"] = {"text": [query]}
                if path_edits and region["from_name"] == "path_json":
                    text = region["value"]["text"][0]
                    for old, new in path_edits.items():
                        assert old in text, (task.sample_id, old)
                        text = text.replace(old, new)
                    region["value"] = {"text": [text]}
            result.append(choices_result("verdict", to_name, [verdict]))
            if notes:
                result.append(textarea_result("notes", to_name, notes))
            client.annotations.create(id=task.id, result=result, lead_time=40.0)
            print(task.sample_id, verdict)
        snapshot = export_snapshot(connection, client, int(project.id))
        EXPORT.parent.mkdir(parents=True, exist_ok=True)
        write_json(EXPORT, snapshot, indent=1)
        print(f"{len(snapshot)} tasks exported to {EXPORT}")
    finally:
        stop(config)


if __name__ == "__main__":
    main()
