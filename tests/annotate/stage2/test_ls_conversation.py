"""Stage2 for conversations through the real Label Studio server: push the drafted conversations
(label_config/stage2_conversation.xml, validated by the SDK and the server), annotate them through
the API as the editor does, pull: a good one becomes gold, an unknown tool and invalid JSON are sent
back with their reason (never lost), and the fixed annotation is gold on the next pull."""

from __future__ import annotations

import json
from pathlib import Path

from annotate.stage2.conversation import project_title, run_conversation_pull, run_conversation_push
from annotate.exchange.push import find_project, list_tasks
from annotate.tasks.single import choices_result
from fcbench.config import load_pipelines
from fcbench.pipeline.run import run_stage
from ls_fixtures import studio  # noqa: F401 (pytest fixture)

REPO = Path(__file__).resolve().parents[3]
TRAVEL = REPO / "datasets" / "travel"


def _annotate(studio, task, text: str | None, verdict: str = "accept") -> None:
    result = [dict(region) for region in studio.client.predictions.list(task=task.id)[0].result]
    for region in result:
        if text is not None and region["from_name"] == "conversation_json":
            region["value"] = {"text": [text]}
    result.append(choices_result("verdict", "conversation", [verdict]))
    studio.client.annotations.create(id=task.id, result=result, lead_time=30.0)


def test_conversation_round_trip_through_label_studio(studio, tmp_path) -> None:
    (tmp_path / "pipelines.yaml").write_text(
        "pipelines:\n"
        "  chatls:\n"
        "    kind: conversation\n"
        f"    dataset_dir: {tmp_path / 'chatls'}\n"
        "    seed: 3\n"
        f"    tools: {TRAVEL / 'tools.json'}\n"
        f"    environment: {{kind: python, module: {TRAVEL / 'tools.py'}, workers: 1}}\n"
        "    conversation: {offline: true, scenarios: 5, complexities: {underfilled_parameters: 1.0}, min_turns: 2,"
        f" value_pools: {TRAVEL / 'value_pools.json'}}}\n")
    pipeline = load_pipelines(tmp_path / "pipelines.yaml").get_pipeline("chatls")
    assert run_stage("stage1", pipeline, offline=True).counts["drafts"] >= 3
    pushed = run_conversation_push(pipeline, studio.connection, count=3)
    assert pushed.counts["create"] == 3 and pushed.counts["invalid"] == 0
    assert run_conversation_push(pipeline, studio.connection, count=3).counts["skip"] == 3  # idempotent
    project = find_project(studio.client, project_title(pipeline))
    tasks = sorted(list_tasks(studio.client, int(project.id)), key=lambda task: task.sample_id)
    good, unknown_tool, broken = tasks
    text = studio.client.predictions.list(task=unknown_tool.id)[0].result[0]["value"]["text"][0]
    _annotate(studio, good, None)
    first_call = next(turn for turn in json.loads(text) if turn.get("calls"))["calls"][0]
    name = (first_call[0] if isinstance(first_call, list) else first_call)["name"]
    _annotate(studio, unknown_tool, text.replace(f'"name": "{name}"', '"name": "Book_Spaceship"', 1))
    _annotate(studio, broken, '[{"user": "I need a hotel"}, {"agent": "Where?", "acts": ["agent_seek_information"]')

    report = run_conversation_pull(pipeline, send_back=True, connection=studio.connection)
    assert report.counts["gold"] == 1 and report.counts["rejected"] == 2 and report.counts["sent_back"] == 2
    assert report.reasons == {"bad_json": 1, "unknown_tool": 1}
    rejects = {json.loads(line)["id"]: json.loads(line)
               for line in (pipeline.build_dir / "templates.rejects.jsonl").read_text().splitlines()}
    assert "Book_Spaceship" in rejects[unknown_tool.sample_id]["problems"][0]["message"]
    assert rejects[broken.sample_id]["result"]  # the annotator's raw work is kept with the reject
    feedback = studio.client.tasks.get(id=unknown_tool.id).data["feedback_html"]
    assert "Book_Spaceship" in feedback  # shown at the top of the task for the annotator to fix
    gold = [json.loads(line) for line in (pipeline.build_dir / "templates.jsonl").read_text().splitlines()]
    assert [sample["id"] for sample in gold] == [good.sample_id]
    assert gold[0]["provenance"]["label_studio_task_id"] == good.id

    _annotate(studio, unknown_tool, None)  # fixed: the draft's calls again
    again = run_conversation_pull(pipeline, send_back=True, connection=studio.connection)
    assert again.counts["gold"] == 2 and again.reasons == {"bad_json": 1}
    assert studio.client.tasks.get(id=unknown_tool.id).data["feedback_html"] == ""
