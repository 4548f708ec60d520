"""How datasets/travel-chat/annotations/stage2_export.json was made: the stage1 conversations
(`build-dataset stage1 travel-chat --offline`) pushed to a real, local Label Studio server
(`stage2 push`, label_config/stage2_conversation.xml), annotated through its API the way the
labeling editor submits an annotation (the prediction's regions, edited, plus the verdict), then
exported as a snapshot (what `stage2 pull` reads from the server). Nothing is written into the
export by hand; re-running this script gives the same decisions.

The script first drafts the conversations itself (`stage1 --offline`, deterministic) and forgets
any earlier gold of this build, so every draft is pushed.

The decisions below are an annotator's, taken by reading each drafted conversation: accept by
default; rewrite the rule-based agent's stiff summaries and users' turns into natural ones; reject
a conversation whose closing turns repeat themselves; and, as annotators do, one slip (a call's
date typed as "15/04/2026") that the pull's schema check sends back instead of losing.

  FCBENCH_STUDIO_VENV=/work/main/.venv-studio .venv/bin/python datasets/travel-chat/annotate_stage2.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
EXPORT = REPO / "datasets" / "travel-chat" / "annotations" / "stage2_export.json"

# conversation id -> (verdict, [(text in the conversation JSON, its replacement)], notes)
DECISIONS: dict[str, tuple[str, list[tuple[str, str]], str]] = {
    "travel-chat-conv-0001": ("fix", [("I found 5 options; the first has cabinclass ECONOMY, currency USD, total 2177.75, "
                                       "peradult 2177.75.",
                                       "I found 5 round trips from Tokyo to New York, out on July 1 and back on July 5; "
                                       "the best one is in economy for 2177.75 USD.")], "Reply rewritten."),
    "travel-chat-conv-0004": ("fix", [("I found 5 options; the first has name Fiat 500 or similar, group Mini, seats 4, "
                                       "doors 3.",
                                       "There are 5 cars for your rental from Girona Airport to Barcelona; the first is "
                                       "a Fiat 500 or similar (mini, 4 seats).")], "Reply rewritten."),
    "travel-chat-conv-0005": ("fix", [("I found 5 options; the first has name Fiat 500 or similar, group Mini, seats 4, "
                                       "doors 3.",
                                       "I found 5 cars from Queen Victoria Market to Fitzroy; the first is a Fiat 500 "
                                       "or similar.")], "Reply rewritten."),
    "travel-chat-conv-0006": ("fix", [("What is the requestedpickupdatetime of the first one?",
                                       "When exactly will the driver pick me up?"),
                                      ("The requestedpickupdatetime of the first one is 2025-08-20T23:10:00.",
                                       "The pick-up is booked for 2025-08-20T23:10:00, at Orchard.")],
                              "Follow-up made natural."),
    "travel-chat-conv-0010": ("fix", [("from a date I will give you to April 10, 2026",
                                       "until April 10, 2026 (I still need to check when I arrive)"),
                                      ("\"2026-04-03\"", "\"15/04/2026\"")],
                              "User turn rewritten; the arrival date typed by hand."),
    "travel-chat-conv-0011": ("reject", [], "The closing turns repeat themselves: not a natural conversation."),
    "travel-chat-conv-0014": ("fix", [("on a date I will give you at 09:00", "at 09:00, I am not sure which day yet")],
                              "User turn rewritten."),
}


def main() -> None:
    from annotate.studio.client import Connection, open_client
    from annotate.stage2.conversation import project_title, run_conversation_push
    from annotate.exchange.pull import export_snapshot
    from annotate.exchange.push import find_project, list_tasks
    from annotate.studio.server import StudioConfig, free_port, read_credentials, start, stop
    from annotate.tasks.single import choices_result, textarea_result
    from fcbench.config import load_pipelines
    from fcbench.jsonl import write_json
    from fcbench.pipeline.run import run_stage

    pipeline = load_pipelines(REPO / "pipelines.yaml").get_pipeline("travel-chat")
    (pipeline.build_dir / "templates.jsonl").unlink(missing_ok=True)  # earlier gold would not be pushed again
    print("stage1", run_stage("stage1", pipeline, offline=True, force=True).counts)
    config = StudioConfig(root=Path(tempfile.mkdtemp(prefix="travel-chat-studio-")), port=free_port())
    start(config)
    try:
        connection = Connection(config.url, read_credentials(config).token)
        client = open_client(connection)
        pushed = run_conversation_push(pipeline, connection)
        print("pushed", pushed.counts)
        project = find_project(client, project_title(pipeline))
        for task in sorted(list_tasks(client, int(project.id)), key=lambda task: task.sample_id or ""):
            verdict, edits, notes = DECISIONS.get(task.sample_id, ("accept", [], ""))
            prediction = client.predictions.list(task=task.id)[0]
            result = [dict(region) for region in prediction.result]
            to_name = result[0]["to_name"]
            for region in result:
                if edits and region["from_name"] == "conversation_json":
                    text = region["value"]["text"][0]
                    for old, new in edits:
                        assert old in text, (task.sample_id, old)
                        text = text.replace(old, new)
                    region["value"] = {"text": [text]}
            result.append(choices_result("verdict", to_name, [verdict]))
            if notes:
                result.append(textarea_result("notes", to_name, notes))
            client.annotations.create(id=task.id, result=result, lead_time=95.0)
            print(task.sample_id, verdict)
        snapshot = export_snapshot(connection, client, int(project.id))
        EXPORT.parent.mkdir(parents=True, exist_ok=True)
        write_json(EXPORT, sorted(snapshot, key=lambda task: task["id"]), indent=1)
        print(f"{len(snapshot)} tasks exported to {EXPORT}")
    finally:
        stop(config)


if __name__ == "__main__":
    main()
