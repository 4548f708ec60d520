"""How datasets/workspace/annotations/stage2_export.json.gz was made: the stage1 drafts pushed to a real,
local Label Studio server (`stage2 push`), annotated through its API the way the labeling editor
submits an annotation (the prediction's regions, edited, plus the verdict), then exported as a
snapshot (what `stage2 pull` reads from the server), gzip-compressed without a time stamp (every
draft carries the 24 tool specs it was offered). Nothing is written into the export by hand.

The decisions below are a senior annotator's, taken by reading each of the 60 drafts
(datasets/workspace/build/drafts.jsonl after `build.py record stage1`). The guideline of this
benchmark: a request must pass a value from one server to another (a converted time into a file, a
file's text into memory, a colleague's time zone from memory into the time server); drafts where
no value crosses servers are rejected. The others are accepted, a few with the query reworded.

  FCBENCH_STUDIO_VENV=/work/main/.venv-studio .venv/bin/python datasets/workspace/annotate_stage2.py
"""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
EXPORT = REPO / "datasets" / "workspace" / "annotations" / "stage2_export.json.gz"

SAME_SERVER = "No value passes from one server to another: the workspace benchmark keeps cross-server requests."
# draft id -> (verdict, rewritten query or None, notes)
DECISIONS = {
    **{draft: ("reject", None, SAME_SERVER) for draft in (
        "workspace-draft-0002", "workspace-draft-0009", "workspace-draft-0010", "workspace-draft-0026",
        "workspace-draft-0027", "workspace-draft-0030", "workspace-draft-0039", "workspace-draft-0045",
        "workspace-draft-0055", "workspace-draft-0060")},
    "workspace-draft-0001": ("fix", "What time is it now in Farah's time zone? And convert 14:00 in Erik's time zone to "
                                    "America/Los_Angeles time, then remember Friday recap as a new note, noting the "
                                    "converted time.", "Query reworded; the path is right."),
    "workspace-draft-0012": ("fix", "Save the first thing you remember about Carol to docs/handover.md, and remember "
                                    "Mail digest as a new digest, noting the text of docs/brief.md.",
                             "Query reworded as one request; the path is right."),
    "workspace-draft-0033": ("fix", "Add the text of drafts/plan.md to what you remember about Erik, and copy the text "
                                    "of todo.txt into drafts/next-steps.md.", "Query reworded; the path is right."),
    "workspace-draft-0048": ("fix", "Add the current time in Erik's time zone to what you remember about Cygnus, and "
                                    "tell me what time it is in Gita's time zone.", "Query reworded; the path is right."),
}


def main() -> None:
    from annotate.exchange.pull import export_snapshot
    from annotate.exchange.push import find_project, list_tasks
    from annotate.stage2.senior import project_title, run_stage2_push
    from annotate.studio.client import Connection, open_client
    from annotate.studio.server import StudioConfig, free_port, read_credentials, start, stop
    from annotate.tasks.single import choices_result, textarea_result
    from fcbench.config import load_pipelines

    pipeline = load_pipelines(REPO / "pipelines.yaml").get_pipeline("workspace")
    config = StudioConfig(root=Path(tempfile.mkdtemp(prefix="workspace-studio-")), port=free_port())
    start(config)
    try:
        connection = Connection(config.url, read_credentials(config).token)
        client = open_client(connection)
        pushed = run_stage2_push(pipeline, connection)
        print("pushed", pushed.counts)
        project = find_project(client, project_title(pipeline))
        for task in list_tasks(client, int(project.id)):
            verdict, query, notes = DECISIONS.get(task.sample_id, ("accept", None, ""))
            prediction = client.predictions.list(task=task.id)[0]
            result = [dict(region) for region in prediction.result]
            to_name = result[0]["to_name"]
            for region in result:
                if query and region["from_name"] == "query":
                    region["value"] = {"text": [query]}
            result.append(choices_result("verdict", to_name, [verdict]))
            if notes:
                result.append(textarea_result("notes", to_name, notes))
            client.annotations.create(id=task.id, result=result, lead_time=35.0)
            print(task.sample_id, verdict)
        snapshot = export_snapshot(connection, client, int(project.id))
        EXPORT.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(snapshot, ensure_ascii=False, indent=1) + "\n"
        with open(EXPORT, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as out:
            out.write(text.encode("utf-8"))
        print(f"{len(snapshot)} tasks exported to {EXPORT}")
    finally:
        stop(config)


if __name__ == "__main__":
    main()
