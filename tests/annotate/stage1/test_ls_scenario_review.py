"""The scenario review before drafting, through the real Label Studio server: stage1 writes the
sampled scenarios and waits; `scenarios push` sends them (label_config/stage1_scenario_review.xml,
validated by the SDK and the server; pushing twice adds nothing); reviewers accept, edit, reject,
break the JSON, ask for an unplayable scenario or leave one alone; `scenarios pull --send-back`
keeps the good decisions, sends the broken ones back with their reason and counts the rest; stage1
then drafts exactly the accepted and edited scenarios, as edited. And the stage2 form's per-call
success/error choice through the same server: a draft's chosen errors come pre-ticked, and a tick
that breaks the scenario's type is sent back."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from annotate.exchange.push import find_project, list_tasks
from annotate.stage1.review import project_title, run_scenario_pull, run_scenario_push
from annotate.stage2.conversation import project_title as stage2_title, run_conversation_pull, run_conversation_push
from annotate.tasks.single import choices_result, textarea_result
from fcbench.cli import app
from fcbench.config import load_pipelines
from fcbench.conversation import chosen_errors_of, scenario_of
from fcbench.formats import read_samples
from fcbench.pipeline.run import run_stage
from ls_fixtures import studio  # noqa: F401 (pytest fixture)

REPO = Path(__file__).resolve().parents[3]
TRAVEL = REPO / "datasets" / "travel"


def _pipeline(tmp_path: Path, name: str, types: str, scenarios: int, review: bool) -> object:
    (tmp_path / "pipelines.yaml").write_text(
        "pipelines:\n"
        f"  {name}:\n"
        "    kind: conversation\n"
        f"    dataset_dir: {tmp_path / name}\n"
        "    seed: 11\n"
        f"    tools: {TRAVEL / 'tools.json'}\n"
        f"    environment: {{kind: python, module: {TRAVEL / 'tools.py'}, workers: 1}}\n"
        f"    conversation: {{offline: true, scenarios: {scenarios}, complexities: [{types}], min_turns: 2,"
        f" value_pools: {TRAVEL / 'value_pools.json'}, review: {{enabled: {str(review).lower()}}}}}\n")
    return load_pipelines(tmp_path / "pipelines.yaml").get_pipeline(name)


def _review(studio, task, verdict: str | None, settings: dict | None = None, description: str | None = None,
            raw_settings: str | None = None, notes: str = "") -> None:
    result = [dict(region) for region in studio.client.predictions.list(task=task.id)[0].result]
    for region in result:
        if region["from_name"] == "scenario_json" and (settings or raw_settings):
            text = raw_settings or json.dumps({**json.loads(region["value"]["text"][0]), **settings})
            region["value"] = {"text": [text]}
        if region["from_name"] == "description" and description is not None:
            region["value"] = {"text": [description]}
    if verdict:
        result.append(choices_result("verdict", "scenario", [verdict]))
    if notes:
        result.append(textarea_result("notes", "scenario", notes))
    studio.client.annotations.create(id=task.id, result=result, lead_time=20.0)


def test_scenarios_are_reviewed_in_label_studio_before_drafting(studio, tmp_path) -> None:
    pipeline = _pipeline(tmp_path, "review", "no_target, goal_stacking, follow_up", 6, review=True)
    file = str(tmp_path / "pipelines.yaml")
    waiting = CliRunner().invoke(app, ["stage1", "review", "--file", file])
    assert waiting.exit_code == 0 and "6 scenarios await review" in waiting.output, waiting.output
    assert not (pipeline.build_dir / "drafts.jsonl").exists()
    blocked = CliRunner().invoke(app, ["run", "review", "--offline", "--file", file])
    assert blocked.exit_code == 1 and "conversation.review.export_file" in blocked.output
    assert "Traceback" not in blocked.output

    pushed = run_scenario_push(pipeline, studio.connection)
    assert pushed.counts["create"] == 6 and pushed.counts["invalid"] == 0
    assert run_scenario_push(pipeline, studio.connection).counts["skip"] == 6  # idempotent
    project = find_project(studio.client, project_title(pipeline))
    tasks = {task.sample_id: task for task in list_tasks(studio.client, int(project.id))}
    scenarios = {task.sample_id: json.loads(json.dumps(studio.client.tasks.get(id=task.id).data["scenario"]))
                 for task in tasks.values()}
    ids = sorted(tasks)
    stacking = next(i for i in ids if scenarios[i]["complexities"] == ["goal_stacking"])
    others = [i for i in ids if i != stacking]
    accepted, edited, rejected, broken, pending = others
    kept_optional = scenarios[edited]["optional_apis"][:-1]
    _review(studio, tasks[accepted], "accept")
    _review(studio, tasks[edited], "edit", {"optional_apis": kept_optional, "min_turns": 3},
            description="You are planning a weekend away and want the details settled in one go.")
    _review(studio, tasks[rejected], "reject", notes="Nothing a traveller would ask.")
    _review(studio, tasks[broken], "edit", raw_settings='{"required_apis": ["Search_Taxi"')
    _review(studio, tasks[stacking], "edit", {"required_apis": scenarios[stacking]["required_apis"][:1]})

    report = run_scenario_pull(pipeline, send_back=True, connection=studio.connection)
    assert report.counts["accepted"] == 1 and report.counts["edited"] == 1 and report.counts["rejected_by_reviewer"] == 1
    assert report.counts["failed_checks"] == 2 and report.counts["pending"] == 1 and report.counts["sent_back"] == 2
    assert report.reasons == {"bad_json": 1, "bad_scenario": 1}
    assert "goal_stacking needs two goals" in str(report.failures)
    feedback = studio.client.tasks.get(id=tasks[broken].id).data["feedback_html"]
    assert "does not parse" in feedback  # shown at the top of the task for the reviewer to fix
    rows = [json.loads(line) for line in (pipeline.build_dir / "scenarios.review.rejects.jsonl").read_text().splitlines()]
    assert {row["id"] for row in rows} == {broken, stacking} and all(row["result"] for row in rows)  # raw work kept

    summary = run_stage("stage1", pipeline, offline=True)
    assert summary.counts["reviewed"] == 2 and summary.counts["awaiting_review"] == 3
    drafts = {draft.id: draft for draft in read_samples(pipeline.build_dir / "drafts.jsonl", "fcbench")}
    assert set(drafts) <= {accepted, edited} and edited in drafts
    drafted = scenario_of(drafts[edited])
    assert drafted.optional_apis == kept_optional and drafted.min_turns == 3
    assert drafted.description.startswith("You are planning a weekend away")
    assert {tool.name for tool in drafts[edited].tools} == set(drafted.required_apis) | set(kept_optional)
    reasons = {json.loads(line)["id"]: json.loads(line)["reason"]
               for line in (pipeline.build_dir / "drafts.rejects.jsonl").read_text().splitlines()}
    assert reasons[rejected] == "stage1.rejected_in_review"

    _review(studio, tasks[broken], "accept")  # fixed by the reviewer: the next pull keeps the others' decisions
    again = run_scenario_pull(pipeline, send_back=True, connection=studio.connection)
    assert again.counts["accepted"] == 2 and again.counts["feedback_cleared"] == 1
    assert run_stage("stage1", pipeline, offline=True).counts["awaiting_review"] == 2


def _annotate(studio, task, ticked: list[str] | None) -> None:
    result = [dict(region) for region in studio.client.predictions.list(task=task.id)[0].result]
    if ticked is not None:
        result = [region for region in result if region["from_name"] != "call_errors"]
        result.append(choices_result("call_errors", "conversation", ticked))
    result.append(choices_result("verdict", "conversation", ["accept" if ticked is None else "fix"]))
    studio.client.annotations.create(id=task.id, result=result, lead_time=30.0)


def test_authors_choose_success_or_error_per_call_in_the_stage2_form(studio, tmp_path) -> None:
    pipeline = _pipeline(tmp_path, "errors", "failed_conversation, follow_up", 4, review=False)
    assert run_stage("stage1", pipeline, offline=True).counts["drafts"] >= 2
    drafts = {draft.id: draft for draft in read_samples(pipeline.build_dir / "drafts.jsonl", "fcbench")}
    failed = next(d for d in drafts.values() if scenario_of(d).complexities == ["failed_conversation"])
    follow = next(d for d in drafts.values() if scenario_of(d).complexities == ["follow_up"])
    pushed = run_conversation_push(pipeline, studio.connection)
    assert pushed.counts["invalid"] == 0  # the form with its per-call choices passes the SDK and the server
    project = find_project(studio.client, stage2_title(pipeline))
    tasks = {task.sample_id: task for task in list_tasks(studio.client, int(project.id))}
    options = studio.client.tasks.get(id=tasks[failed.id].id).data["call_options"]
    assert [option["value"] for option in options] == [call.label for call in failed.all_calls()]
    prefilled = [r for r in studio.client.predictions.list(task=tasks[failed.id].id)[0].result
                 if r["from_name"] == "call_errors"]
    assert prefilled[0]["value"]["choices"] == list(chosen_errors_of(failed))
    _annotate(studio, tasks[failed.id], None)  # the draft's choice kept as pre-ticked
    goal = next(call.label for call in reversed(follow.all_calls()) if call.name in scenario_of(follow).required_apis)
    _annotate(studio, tasks[follow.id], [goal])  # the answered call made to fail: no answer left to follow up
    for sample_id, task in tasks.items():
        if sample_id not in (failed.id, follow.id):
            _annotate(studio, task, None)

    report = run_conversation_pull(pipeline, send_back=True, connection=studio.connection)
    assert report.reasons.get("type_missing") == 1 and report.counts["sent_back"] == 1
    assert any(f["id"] == follow.id and "requires follow_up" in f["problems"][0] for f in report.failures)
    gold = {sample.id: sample for sample in read_samples(pipeline.build_dir / "templates.jsonl", "fcbench")}
    assert chosen_errors_of(gold[failed.id]) == chosen_errors_of(failed)
    filtered = run_stage("filter", pipeline)
    assert filtered.counts["passed"] == len(gold) and filtered.reasons == {}  # the chosen errors reproduce
