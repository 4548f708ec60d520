"""How datasets/travel-chat/annotations/stage2_export.json was made: the stage1 conversations
(`build-dataset stage1 travel-chat --offline`) pushed to a real, local Label Studio server
(`stage2 push`, label_config/stage2_conversation.xml), annotated through its API the way the
labeling editor submits an annotation (the prediction's regions, edited, plus the verdict), then
exported as a snapshot (what `stage2 pull` reads from the server). Nothing is written into the
export by hand; re-running this script gives the same decisions.

The script first drafts the conversations itself (`stage1 --offline`, deterministic) and forgets
any earlier gold of this build, so every draft is pushed.

The decisions below are an annotator's, taken by reading each drafted conversation against its
calls and answers: accept by default; make a rule-based reply or follow-up natural where it reads
like a record dump ("cabin class: economy, total: 2177.75" -> "the best one is in economy for
2177.75 USD"); reject a conversation whose search found nothing (the agent's answer cannot be
checked against any result); and, as annotators do, one slip (a call's date typed "15/11/2025")
that the pull's schema check sends back instead of losing.

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
    "travel-chat-conv-0001": ("fix", [("I found 5 options; the first has cabin class: economy, total: 2177.75, per adult: "
                                       "2177.75.",
                                       "I found 5 round trips from Tokyo to New York, out on July 1 and back on July 5; "
                                       "the best one is in economy for 2177.75 USD.")], "Reply rewritten."),
    "travel-chat-conv-0003": ("fix", [("What is its amount?", "How much does the ticket cost?"),
                                      ("Its amount is 28.64.", "It costs 28.64 USD.")], "Follow-up made natural."),
    "travel-chat-conv-0004": ("fix", [("\"pick_up_date\": \"2025-11-15\"", "\"pick_up_date\": \"15/11/2025\"")],
                              "The pick-up date typed by hand."),
    "travel-chat-conv-0006": ("fix", [("What is the supplier name of the first one?", "Which company runs the first one?"),
                                      ("The supplier name of the first one is Swift Chauffeurs.",
                                       "The first one is run by Swift Chauffeurs.")], "Follow-up made natural."),
    "travel-chat-conv-0010": ("reject", [], "The search found nothing: the agent's answer cannot be checked against a "
                                            "result."),
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
