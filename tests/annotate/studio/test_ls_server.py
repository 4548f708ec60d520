"""Integration with a real Label Studio server (started by the session fixture with annotate.studio.server).

Annotations are created through the API as the editor creates them (a `result` list, a lead time,
the annotator as `completed_by`), then pulled back with the project's own code.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from typer.testing import CliRunner

from annotate.studio.client import Connection, ServerError, raw_request
from annotate.stage3.junior import JuniorFiles, junior_project_title, run_junior_pull, run_junior_push
from annotate.exchange.pull import export_snapshot
from annotate.exchange.push import find_project, list_tasks
from annotate.stage2.senior import Stage2Files, project_title, run_stage2_pull, run_stage2_push
from annotate.tasks.single import choices_result, format_arguments_json, textarea_result
from fcbench.cli import app
from fcbench.jsonl import write_json_lines
from fcbench.sample import sample_to_dict
from ls_helpers import read_lines, write_drafts, write_pipeline
from ls_fixtures import drafts, studio, travel_environment, travel_tools  # noqa: F401 (pytest fixtures)


def _tasks(studio, title: str) -> dict[str, Any]:
    project = find_project(studio.client, title)
    return {task.sample_id: task for task in list_tasks(studio.client, int(project.id))}


def _annotate(studio, task, edits: dict[str, Any] | None = None, verdict: str | None = "accept", user: int | None = None,
              cancelled: bool = False) -> Any:
    """An annotation the way the editor makes one: the prediction's regions, edited, plus choices."""
    predictions = studio.client.predictions.list(task=task.id)
    result = [dict(region) for region in predictions[0].result]
    for region in result:
        if edits and region["from_name"] in edits:
            region["value"] = {"text": [edits[region["from_name"]]]}
    if verdict:
        to_name = result[0]["to_name"]
        result.append(choices_result("verdict", to_name, [verdict]))
    extra: dict[str, Any] = {"completed_by": user} if user else {}
    return studio.client.annotations.create(id=task.id, result=[] if cancelled else result, lead_time=12.5,
                                            was_cancelled=cancelled, **extra)


@pytest.fixture(scope="module")
def annotator(studio) -> Any:
    return studio.client.users.create(username="junior1", email="junior1@example.com", first_name="June")


def test_push_twice_adds_nothing_and_a_changed_draft_updates_only_an_untouched_task(studio, drafts, tmp_path) -> None:
    pipeline = write_pipeline(tmp_path)
    write_drafts(pipeline, list(drafts.values()))
    first = run_stage2_push(pipeline, studio.connection)
    assert first.counts["create"] == 4 and first.counts["invalid"] == 0 and len(first.task_ids) == 4
    again = run_stage2_push(pipeline, studio.connection)
    assert again.project_id == first.project_id
    assert again.counts["create"] == 0 and again.counts["skip"] == 4
    tasks = _tasks(studio, project_title(pipeline))
    assert len(tasks) == 4
    _annotate(studio, tasks["airports-sydney"])
    changed = {sample_id: sample.model_copy(update={"messages": [{"role": "user", "content": f"{sample_id}, reworded"}]})
               for sample_id, sample in drafts.items() if sample_id in ("airports-sydney", "two-cities")}
    write_drafts(pipeline, [changed.get(sample_id, sample) for sample_id, sample in drafts.items()])
    third = run_stage2_push(pipeline, studio.connection)
    assert third.counts == {"create": 0, "skip": 2, "update": 1, "keep_touched": 1, "invalid": 0, "already_gold": 0}
    after = _tasks(studio, project_title(pipeline))
    assert len(after) == 4
    assert after["two-cities"].data["query"] == "two-cities, reworded"  # untouched: new draft
    assert after["airports-sydney"].data["query"] == "Which airports serve Sydney?"  # annotated: left alone
    predictions = studio.client.predictions.list(task=after["two-cities"].id)
    assert len(predictions) == 1 and predictions[0].result[0]["value"]["text"] == ["two-cities, reworded"]


def test_pull_checks_sends_back_and_keeps_gold_across_pulls(studio, drafts, annotator, tmp_path) -> None:
    pipeline = write_pipeline(tmp_path)
    write_drafts(pipeline, list(drafts.values()))
    run_stage2_push(pipeline, studio.connection)
    title = project_title(pipeline)
    tasks = _tasks(studio, title)
    rome_path = tasks["hotels-rome-wrong"].data["path_json"].replace('"Paris"', '"Rome"')
    _annotate(studio, tasks["hotels-rome-wrong"], {"path_json": rome_path}, "fix", user=annotator.id)
    _annotate(studio, tasks["airports-sydney"])
    broken = _annotate(studio, tasks["hotels-paris"], {"path_json": '[[{"label": "var_1", "name": }]]'}, "fix")
    _annotate(studio, tasks["two-cities"], cancelled=True)

    report = run_stage2_pull(pipeline, send_back=True, connection=studio.connection)
    files = Stage2Files.in_dir(pipeline.build_dir)
    assert report.counts == {"tasks": 4, "gold": 2, "rejected": 1, "cancelled": 1, "pending": 0, "templates_written": 2,
                             "kept_from_previous_pull": 0, "sent_back": 1, "feedback_cleared": 0}
    assert report.reasons == {"bad_json": 1, "cancelled": 1}
    templates = {row["id"]: row for row in read_lines(files.templates)}
    assert set(templates) == {"hotels-rome-wrong", "airports-sydney"}
    rome = templates["hotels-rome-wrong"]
    assert rome["calls"][0][0]["arguments"] == {"query": "Rome"}
    assert rome["calls"][0][0]["response"]["data"][0]["name"] == "Rome"  # re-executed in the environment
    assert rome["provenance"]["annotator"] == "junior1@example.com"
    assert rome["provenance"]["label_studio_task_id"] == tasks["hotels-rome-wrong"].id
    assert rome["provenance"]["stage"] == "stage2" and rome["provenance"]["model"] == "gpt-4o-mini"
    assert rome["meta"]["label_studio"]["verdict"] == "fix" and rome["meta"]["label_studio"]["lead_time_s"] == 12.5
    rejects = {row["id"]: row for row in read_lines(files.rejects)}
    assert rejects["hotels-paris"]["reason"] == "bad_json"
    assert rejects["hotels-paris"]["problems"][0]["message"] == (
        "the path JSON is not valid JSON: Expecting value at line 1 column 30")
    assert rejects["hotels-paris"]["result"]  # the raw annotation is kept: nothing lost
    assert rejects["two-cities"]["reason"] == "cancelled"
    qa = json.loads(files.qa.read_text())
    assert qa["summary"]["corrected"] == 1 and qa["summary"]["samples_by_error_type"]["value_error"] == 1
    summary = json.loads(files.summary.read_text())
    assert summary["counts"]["gold"] == 2 and summary["reasons"] == {"bad_json": 1, "cancelled": 1}

    # the annotator sees the problem on the labeling page, fixes the annotation, and it passes
    sent_back = studio.client.tasks.get(id=str(tasks["hotels-paris"].id)).data["feedback_html"]
    assert "Expecting value at line 1 column 30" in sent_back and "please fix and submit again" in sent_back
    # marked in the task list, and back in the queue of its annotator (the admin here) until fixed
    paris = raw_request(studio.client, "GET", f"api/tasks/{tasks['hotels-paris'].id}").json()
    assert (paris["data"]["verdict"], paris["data"]["rework"]) == ("needs fixing", "yes") and not paris["is_labeled"]
    assert studio.client.tasks.get(id=str(tasks["airports-sydney"].id)).data["verdict"] == "passes"
    served = raw_request(studio.client, "GET", f"api/projects/{paris['project']}/next").json()
    # (skipped tasks now come back to their annotator too: two-cities, skipped, may be served first;
    # the sent-back one comes as the postponed draft holding their own annotation: annotate.studio.rework)
    queues = {tasks["hotels-paris"].id: "Postponed draft queue", tasks["two-cities"].id: "Skipped queue"}
    assert served["id"] in queues and served["queue"] == queues[served["id"]]
    fixed_result = [region for region in broken.result if region["from_name"] != "path_json"]
    fixed_result.append(textarea_result("path_json", "draft", tasks["hotels-paris"].data["path_json"]))
    studio.client.annotations.update(id=broken.id, result=fixed_result)
    second = run_stage2_pull(pipeline, send_back=True, connection=studio.connection)
    assert second.counts["gold"] == 3 and second.counts["feedback_cleared"] == 1 and second.counts["sent_back"] == 0
    assert studio.client.tasks.get(id=str(tasks["hotels-paris"].id)).data["feedback_html"] == ""
    paris = raw_request(studio.client, "GET", f"api/tasks/{tasks['hotels-paris'].id}").json()
    assert paris["is_labeled"] and paris["data"]["rework"] == "no" and [a["id"] for a in paris["annotations"]] == [broken.id]

    # a second annotation of one task: agreement by the shared scorer
    # (the second annotator asks for Melbourne in the query too: a path the query does not state is no gold)
    _annotate(studio, tasks["airports-sydney"], {"path_json": tasks["airports-sydney"].data["path_json"]
                                                 .replace('"Sydney"', '"Melbourne"'),
                                                 "query": "Which airports serve Melbourne?"}, "fix", user=annotator.id)
    third = run_stage2_pull(pipeline, connection=studio.connection)
    assert third.qa["agreements"][0]["id"] == "airports-sydney"
    assert third.qa["agreements"][0]["call_agreement"] == 0.0
    assert third.qa["summary"]["agreement"]["tasks_with_several_annotations"] == 1

    # a task deleted in the UI: its template from the previous pull stays
    studio.client.tasks.delete(id=str(tasks["hotels-rome-wrong"].id))
    fourth = run_stage2_pull(pipeline, connection=studio.connection)
    assert "hotels-rome-wrong" in {row["id"] for row in read_lines(files.templates)}
    assert fourth.messages == [f"task {tasks['hotels-rome-wrong'].id} of sample hotels-rome-wrong is no longer in the "
                               "project (deleted in the UI?): its template from the previous pull is kept"]

    # the same annotations from an export file, with no server, give the same templates
    export_file = tmp_path / "export.json"
    project = find_project(studio.client, title)
    export_file.write_text(json.dumps(export_snapshot(studio.connection, studio.client, int(project.id))))
    offline = write_pipeline(tmp_path / "offline")
    from_file = run_stage2_pull(offline, from_export=export_file)
    assert from_file.source == str(export_file)
    offline_rows = {row["id"]: row for row in read_lines(Stage2Files.in_dir(offline.build_dir).templates)}
    server_rows = {row["id"]: row for row in read_lines(files.templates) if row["id"] != "hotels-rome-wrong"}
    for rows in (offline_rows, server_rows):
        for row in rows.values():
            row["provenance"].pop("annotator")  # the file names users by id: no server to ask for emails
    assert set(offline_rows) == set(server_rows) == {"airports-sydney", "hotels-paris"}
    for sample_id, row in offline_rows.items():
        assert row == server_rows[sample_id], sample_id


def test_a_server_that_stops_answering_leaves_the_files_as_they_were(drafts, tmp_path) -> None:
    pipeline = write_pipeline(tmp_path)
    files = Stage2Files.in_dir(pipeline.build_dir)
    write_json_lines(files.templates, [sample_to_dict(drafts["airports-sydney"].model_copy(deep=True))])
    before = files.templates.read_bytes()
    dead = Connection("http://127.0.0.1:9", "t" * 40)  # nothing listens on the discard port
    with pytest.raises(ServerError, match="Label Studio at http://127.0.0.1:9 stopped answering while finding the "
                                          "project .*nothing was lost: re-run the command"):
        run_stage2_pull(pipeline, connection=dead)
    assert files.templates.read_bytes() == before and not files.rejects.exists()


def test_junior_filling_round_trip(studio, drafts, annotator, tmp_path) -> None:
    pipeline = write_pipeline(tmp_path, name="junior")
    files = JuniorFiles.in_dir(pipeline.build_dir)
    template = drafts["hotels-paris"]
    blank = template.calls[0][0].model_copy(update={"arguments": {}})
    candidate = template.model_copy(update={
        "id": "hotels-paris-v1", "calls": [[blank], template.calls[1]],
        "messages": [{"role": "user", "content": "A hotel in Rome from 2025-03-01 to 2025-03-03."}],
        "meta": {"stage3": {"needs_arguments": True}}})
    ready = drafts["airports-sydney"]
    write_json_lines(files.candidates, [sample_to_dict(candidate.model_copy(deep=True)),
                                        sample_to_dict(ready.model_copy(deep=True))])
    pushed = run_junior_push(pipeline, studio.connection)
    assert pushed.counts["create"] == 1 and pushed.counts["not_needing_arguments"] == 1
    task = _tasks(studio, junior_project_title(pipeline))["hotels-paris-v1"]
    filled = json.loads(format_arguments_json(candidate.calls, candidate.tools))
    filled["var_1"]["query"] = "Rome"
    studio.client.annotations.create(id=task.id, completed_by=annotator.id, result=[
        textarea_result("arguments_json", "variant", json.dumps(filled)), choices_result("verdict", "variant", ["filled"])])
    report = run_junior_pull(pipeline, connection=studio.connection)
    assert report.counts["filled"] == 1 and report.counts["candidates_updated"] == 1
    assert [row["id"] for row in read_lines(files.candidates)] == ["hotels-paris-v1", "airports-sydney"]
    assert read_lines(files.candidates)[0]["calls"][0][0]["arguments"] == {}  # stage3's file is left as it was
    rows = read_lines(files.filled)
    assert [row["id"] for row in rows] == ["hotels-paris-v1", "airports-sydney"]
    assert rows[0]["calls"][0][0]["arguments"] == {"query": "Rome"}
    assert rows[0]["calls"][1][0]["response"]["data"]["destination"]["name"] == "Rome"
    assert rows[0]["meta"]["stage3"] == {"needs_arguments": False, "filled_by": "annotators"}
    assert rows[0]["provenance"]["annotator"] == "junior1@example.com"
    assert rows[1] == sample_to_dict(ready.model_copy(deep=True))


def test_cli_commands_against_the_server(studio, drafts, tmp_path, monkeypatch) -> None:
    pipeline = write_pipeline(tmp_path, name="clipipe")
    write_drafts(pipeline, list(drafts.values()))
    token_file = tmp_path / "token"
    token_file.write_text(studio.connection.token)
    token_file.chmod(0o600)
    monkeypatch.setenv("FCBENCH_LS_URL", studio.connection.url)
    monkeypatch.setenv("FCBENCH_LS_TOKEN_FILE", str(token_file))
    monkeypatch.delenv("FCBENCH_LS_TOKEN", raising=False)
    runner = CliRunner()
    status = runner.invoke(app, ["studio", "status", "--dir", str(studio.config.root), "--json"])
    assert status.exit_code == 0 and json.loads(status.stdout)["healthy"] is True
    assert studio.connection.token not in status.stdout
    pushed = runner.invoke(app, ["stage2", "push", "clipipe", "--file", str(tmp_path / "pipelines.yaml"), "--count", "2", "--json"])
    assert pushed.exit_code == 0, pushed.output
    assert json.loads(pushed.stdout)["counts"]["create"] == 2
    pulled = runner.invoke(app, ["stage2", "pull", "clipipe", "--file", str(tmp_path / "pipelines.yaml")])
    assert pulled.exit_code == 0, pulled.output
    assert "stage2 pull clipipe: pulled from" in pulled.stdout and "pending" in pulled.stdout
    token_file.chmod(0o644)
    refused = runner.invoke(app, ["stage2", "pull", "clipipe", "--file", str(tmp_path / "pipelines.yaml")])
    assert refused.exit_code == 1 and "too open for a token" in refused.stderr
    assert os.environ["FCBENCH_LS_URL"] == studio.connection.url


def test_labeling_page_renders_the_task_readably(studio, drafts, tmp_path) -> None:
    from annotate.browser.screenshot import screenshot_task
    from annotate.studio.server import read_credentials

    pipeline = write_pipeline(tmp_path, name="shot")
    write_drafts(pipeline, [drafts["hotels-paris"]])
    pushed = run_stage2_push(pipeline, studio.connection)
    credentials = read_credentials(studio.config)
    page = screenshot_task(studio.connection.url, credentials.username, credentials.password, pushed.project_id,
                           pushed.task_ids[0], tmp_path / "task.png")
    assert page.path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and page.path.stat().st_size > 50_000
    # what the annotator reads: the query, the ambiguity flag, the path with indexed entries, the checkboxes
    assert "Find me a hotel in Paris from 2025-03-01 to 2025-03-03." in page.text
    assert "var_2.dest_id is taken from var_1.data[0]" in page.text
    assert '[2] {"dest_id": "300402"' in page.text
    assert "var_1.data[4] dest_id=300404" in page.text and "Search_Taxi" in page.text
    assert "1. Verdict" in page.text and "6. What was wrong in the draft" in page.text
    # the editable fields start from the draft (the prediction), ready to correct
    assert page.textareas[0] == "Find me a hotel in Paris from 2025-03-01 to 2025-03-03."
    assert json.loads(page.textareas[1])[1][0]["arguments"]["dest_id"] == "$var_1.data[0].dest_id$"
    provenance = next(text for text in page.textareas if text.startswith("# where each argument value comes from"))
    assert 'var_2.arrival_date: slot "2025-03-01"@30' in provenance.splitlines()


def test_an_annotator_corrects_a_provenance_and_it_reaches_the_template(studio, travel_tools, travel_environment,
                                                                        tmp_path) -> None:
    """The provenance field shows where each value comes from; a value no words state sends the
    task back naming the argument; the annotator's corrected line is the template's source."""
    from fcbench.environments.execution import execute_gold_paths
    from fcbench.sample import Call, Sample

    query = "Find me a hotel in Paris from 2025-03-01 to 2025-03-03 for my parents and me."
    plain = Sample(id="hotels-parents", domain="hotels", messages=[{"role": "user", "content": query}], tools=travel_tools,
                   calls=[[Call(label="var_1", name="Search_Hotel_Destination", arguments={"query": "Paris"})],
                          [Call(label="var_2", name="Search_Hotels", arguments={
                              "dest_id": "$var_1.data[0].dest_id$", "search_type": "$var_1.data[0].search_type$",
                              "arrival_date": "2025-03-01", "departure_date": "2025-03-03", "adults": 3})]])
    (executed,) = execute_gold_paths([plain], travel_environment)
    pipeline = write_pipeline(tmp_path)
    write_drafts(pipeline, [executed.sample])
    run_stage2_push(pipeline, studio.connection)
    task = _tasks(studio, project_title(pipeline))["hotels-parents"]
    prefilled = next(region["value"]["text"][0] for region in studio.client.predictions.list(task=task.id)[0].result
                     if region["from_name"] == "provenance")
    assert f'var_2.arrival_date: slot "2025-03-01"@{query.index("2025-03-01")}' in prefilled.splitlines()
    assert 'var_1.query: slot "Paris"@19' in prefilled.splitlines()
    assert not any(line.startswith("var_2.adults") for line in prefilled.splitlines())  # no words give 3

    annotation = _annotate(studio, task, verdict="accept")
    first = run_stage2_pull(pipeline, send_back=True, connection=studio.connection)
    assert first.counts["gold"] == 0 and first.reasons == {"provenance_missing": 1} and first.counts["sent_back"] == 1
    feedback = studio.client.tasks.get(id=str(task.id)).data["feedback_html"]
    assert "var_2.adults=3: nothing in the query states it" in feedback

    corrected = [dict(region) for region in annotation.result]
    for region in corrected:
        if region["from_name"] == "provenance":
            region["value"] = {"text": [prefilled + '\nvar_2.adults: annotator "my parents and me: three adults"']}
    studio.client.annotations.update(id=annotation.id, result=corrected)
    second = run_stage2_pull(pipeline, send_back=True, connection=studio.connection)
    assert second.counts["gold"] == 1 and second.counts["feedback_cleared"] == 1
    (template,) = read_lines(Stage2Files.in_dir(pipeline.build_dir).templates)
    sources = template["meta"]["provenance"]["var_2"]
    assert sources["adults"] == {"kind": "derived", "rule": "annotator", "note": "my parents and me: three adults"}
    assert sources["arrival_date"]["spans"] == [{"start": query.index("2025-03-01"), "end": query.index("2025-03-01") + 10,
                                                 "text": "2025-03-01"}]
