"""How datasets/amadeus/annotations/stage2_export.json was made: the stage1 drafts pushed to a real,
local Label Studio server (`stage2 push`), annotated through its API the way the labeling editor
submits an annotation (the prediction's regions, edited, plus the verdict), then exported as a
snapshot (what `stage2 pull` reads from the server). Nothing is written into the export by hand.

The decisions below are a senior annotator's, taken by reading each draft (datasets/amadeus/build/
drafts.jsonl after `build.py record stage1`) against its calls and the recorded answers: accept by
default (the offline query writer asks as a traveller does, datasets/amadeus/phrases.txt), rewrite
the queries whose references read convoluted ("the first point of interest of the first search"
where "the first one" says it).

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
    "amadeus-draft-0004": ("fix", "List the points of interest between latitudes 41.394582 and 41.397158 and longitudes "
                                  "2.160873 and 2.177181, give me the details of the first one, then find the sights and "
                                  "places to go near it.",
                           "Query rewritten: the second search is around the point whose details were asked.", {}),
    "amadeus-draft-0007": ("fix", "Please search for airports whose name or code starts with LON, then give me the full "
                                  "details of the second location. Could you also look up the hotel with the Amadeus "
                                  "code ACPAR419 and show me what guests say about it?",
                           "Query rewritten: 'the first hotel' after looking up one hotel by its code.", {}),
    "amadeus-draft-0008": ("fix", "Find the 2-star hotels in London (city code LON), then list the 2-star hotels with a "
                                  "restaurant around the second of them.",
                           "Query rewritten: 'hotels in LON' is an API code, not what a traveller writes.", {}),
    "amadeus-draft-0012": ("fix", "Look up the city PARIS, then list the 5-star hotels with a casino around the first city it "
                                  "finds, the tours and activities around the first hotel, and the details of the first "
                                  "activity. Also look up the city PARIS in country FR, showing at most 10 results, find "
                                  "things to do near the first city of that search, and list the hotels around the first "
                                  "activity found there.",
                           "Query rewritten: the references said 'of the first search' five times.", {}),
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
    (pipeline.build_dir / "templates.jsonl").unlink(missing_ok=True)  # earlier gold would not be pushed again
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
