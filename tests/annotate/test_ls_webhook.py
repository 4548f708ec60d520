"""The webhook receiver against the real Label Studio server: annotations made through the API (as
the editor makes them) are checked by the receiver process `build-dataset studio webhook` starts,
within seconds, with the verdicts `pull` gives; broken ones go back to their annotator's queue.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any, Callable

from typer.testing import CliRunner

from annotate.review.live_check import annotation_key
from annotate.exchange.push import VIEW_TITLE, find_project, list_tasks
from annotate.studio.client import raw_request
from annotate.stage2.senior import Stage2Files, project_title, run_stage2_pull, run_stage2_push
from annotate.stage3.junior import JuniorFiles, run_junior_push
from annotate.studio.server import read_credentials
from annotate.tasks.single import choices_result, textarea_result
from fcbench.jsonl import write_json_lines
from fcbench.sample import sample_to_dict
from annotate.webhook import SECRET_HEADER, WEBHOOK_PATH, read_receiver_state
from fcbench.cli import app
from ls_helpers import read_lines, write_drafts, write_pipeline
from ls_fixtures import drafts, studio, travel_environment, travel_tools  # noqa: F401 (pytest fixtures)

# A generous deadline for an outcome, never a duration asserted: how fast a verdict reaches the
# annotator is measured in bench/annotation_ui.py, not here (a loaded machine is slow, not wrong).
DEADLINE_S = 60.0


def _wait(probe: Callable[[], Any], timeout: float = DEADLINE_S) -> tuple[Any, float]:
    started = time.monotonic()
    while True:
        value = probe()
        elapsed = time.monotonic() - started
        if value or elapsed > timeout:
            return value, elapsed
        time.sleep(0.1)


def _annotate(studio, task, path_json: str | None = None, verdict: str = "accept", user: int | None = None) -> Any:
    result = [dict(region) for region in studio.client.predictions.list(task=task.id)[0].result]
    for region in result:
        if path_json is not None and region["from_name"] == "path_json":
            region["value"] = {"text": [path_json]}
    result.append(choices_result("verdict", "draft", [verdict]))
    extra = {"completed_by": user} if user else {}
    return studio.client.annotations.create(id=task.id, result=result, lead_time=3.0, **extra)


def _task(studio, task_id: int) -> dict[str, Any]:
    return raw_request(studio.client, "GET", f"api/tasks/{task_id}").json()


def _check_of(studio, task_id: int, annotation_id: int) -> dict[str, Any] | None:
    """The stored check of the annotation's CURRENT content (None until there is one)."""
    task = _task(studio, task_id)
    current = next(item for item in task["annotations"] if item["id"] == annotation_id)
    check = (task["data"].get("live_checks") or {}).get(str(annotation_id))
    return check if check and check["key"] == annotation_key(current) else None


def _health(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url.removesuffix(WEBHOOK_PATH) + "/health", timeout=5) as response:
        return json.loads(response.read())


def _post(url: str, body: dict[str, Any], secret: str | None) -> int:
    headers = {"Content-Type": "application/json", **({SECRET_HEADER: secret} if secret else {})}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_webhook_checks_like_pull_sends_broken_work_back_and_loses_nothing(studio, drafts, tmp_path) -> None:
    pipeline = write_pipeline(tmp_path, name="hook")
    write_drafts(pipeline, list(drafts.values()))
    pushed = run_stage2_push(pipeline, studio.connection)
    tasks = {task.sample_id: task for task in list_tasks(studio.client, pushed.project_id)}
    runner = CliRunner()
    cli = ["--file", str(tmp_path / "pipelines.yaml"), "--dir", str(studio.config.root)]
    started = runner.invoke(app, ["studio", "webhook", "hook", *cli, "--json"])
    assert started.exit_code == 0, started.output
    receiver = json.loads(started.stdout)
    try:
        assert receiver["running"] and receiver["healthy"] and receiver["url"].startswith("http://127.0.0.1:")
        hooks = studio.client.webhooks.list(project=pushed.project_id)
        assert [hook.url for hook in hooks] == [receiver["url"]]  # registered on the real server, once
        status = runner.invoke(app, ["studio", "status", "--dir", str(studio.config.root), "--json"])
        shown = json.loads(status.stdout)
        assert shown["webhook"]["running"] and shown["webhook"]["pipeline"] == "hook"
        credentials = read_credentials(studio.config)
        assert shown["login"] == {"url": f"{studio.connection.url}/user/login/", "username": credentials.username,
                                  "credentials": str(studio.config.credentials_file)}
        assert credentials.password not in status.stdout and credentials.token not in status.stdout

        # the push's view: the columns a lead sorts and filters on, the HTML payloads hidden
        views = raw_request(studio.client, "GET", "api/dm/views/", params={"project": pushed.project_id}).json()
        view = next(item for item in views if item["data"]["title"] == VIEW_TITLE)
        hidden = set(view["data"]["hiddenColumns"]["explore"])
        assert {"tasks:data.draft_html", "tasks:data.entry_options", "tasks:data.tool_options",
                "tasks:data.feedback_html", "tasks:data.live_checks"} <= hidden
        assert not {"tasks:data.domain", "tasks:data.n_calls", "tasks:data.verdict", "tasks:data.rework"} & hidden
        assert view["data"]["columnsDisplayType"]["tasks:data.n_calls"] == "Number"
        assert tasks["hotels-paris"].data["n_calls"] == 2 and tasks["hotels-paris"].data["n_steps"] == 2

        # every kind of verdict, each seen on its task within seconds
        good = _annotate(studio, tasks["airports-sydney"])
        rome = _annotate(studio, tasks["hotels-rome-wrong"],
                         tasks["hotels-rome-wrong"].data["path_json"].replace('"Paris"', '"Rome"'), "fix")
        broken = _annotate(studio, tasks["hotels-paris"], '[[{"label": "var_1", "name": }]]', "fix")
        dangling = _annotate(studio, tasks["two-cities"],
                             tasks["two-cities"].data["path_json"].replace('"Tokyo"', '"$var_9.data[0].name$"'), "fix")
        annotations = {"airports-sydney": good, "hotels-rome-wrong": rome, "hotels-paris": broken, "two-cities": dangling}
        live = {}
        for sample_id, annotation in annotations.items():
            check, waited = _wait(lambda: _check_of(studio, tasks[sample_id].id, annotation.id))
            assert check is not None, f"{sample_id}: no check after {waited:.1f} s"
            live[sample_id] = check
            print(f"{sample_id}: checked and shown on the task {waited:.2f} s after the annotation was saved")
        assert {sample_id: check["verdict"] for sample_id, check in live.items()} == {
            "airports-sydney": "passes", "hotels-rome-wrong": "passes", "hotels-paris": "needs fixing",
            "two-cities": "needs fixing"}

        # pull, the source of truth, gives the same verdicts with the same messages
        report = run_stage2_pull(pipeline, connection=studio.connection)
        rejects = {row["id"]: row for row in read_lines(Stage2Files.in_dir(pipeline.build_dir).rejects)}
        assert {row["id"] for row in read_lines(Stage2Files.in_dir(pipeline.build_dir).templates)} == {
            "airports-sydney", "hotels-rome-wrong"}
        assert report.counts["gold"] == 2 and report.counts["rejected"] == 2
        for sample_id in ("hotels-paris", "two-cities"):
            assert live[sample_id]["problems"] == [problem["message"] for problem in rejects[sample_id]["problems"]]
            assert live[sample_id]["codes"] == [problem["code"] for problem in rejects[sample_id]["problems"]]
        assert live["two-cities"]["codes"] == ["bad_reference"]

        # what the annotator and the lead see on a broken task, and the task back in the queue
        paris = _task(studio, tasks["hotels-paris"].id)
        assert "Expecting value at line 1 column 30" in paris["data"]["feedback_html"]
        assert paris["data"]["verdict"] == "needs fixing" and paris["data"]["rework"] == "yes"
        assert paris["data"]["annotator"] == "fcbench-admin@example.com"
        assert paris["is_labeled"] is False  # no longer "completed" in the task list
        assert _task(studio, tasks["airports-sydney"].id)["data"]["rework"] == "no"
        # a lead filters and sorts the task list by those columns (what the Data Manager asks the server)
        lead_view = {**view["data"], "title": "to fix", "ordering": ["-tasks:data.n_warnings"],
                     "filters": {"conjunction": "and", "items": [
                         {"filter": "filter:tasks:data.rework", "operator": "equal", "type": "String", "value": "yes"},
                         {"filter": "filter:tasks:data.n_warnings", "operator": "less", "type": "Number", "value": 5}]}}
        created = raw_request(studio.client, "POST", "api/dm/views/", json={"project": pushed.project_id, "data": lead_view})
        listed = raw_request(studio.client, "GET", "api/tasks/", params={"view": created.json()["id"], "fields": "task_only"})
        assert [task["data"]["sample_id"] for task in listed.json()["tasks"]] == ["hotels-paris", "two-cities"]
        served = raw_request(studio.client, "GET", f"api/projects/{pushed.project_id}/next").json()
        assert served["id"] in {tasks["hotels-paris"].id, tasks["two-cities"].id}  # every other task is done

        # a webhook delivered again (Label Studio with Redis retries): one result, nothing rewritten
        secret = read_receiver_state(studio.config)["secret"]
        before = _health(receiver["url"])
        payload = {"action": "ANNOTATION_UPDATED", "annotation": {"id": good.id}, "task": {"id": good.task},
                   "project": {"id": pushed.project_id}}
        assert _post(receiver["url"], payload, secret) == 200 and _post(receiver["url"], payload, secret) == 200
        assert _post(receiver["url"], payload, None) == 403  # only Label Studio knows the secret
        assert _post(receiver["url"], {"action": "PROJECT_CREATED"}, secret) == 400
        idle, _ = _wait(lambda: _health(receiver["url"])["idle"])
        after = _health(receiver["url"])
        assert idle and after["checked"] == before["checked"] and after["written"] == before["written"]
        assert list(_task(studio, good.task)["data"]["live_checks"]) == [str(good.id)]

        # fixed after its check: the result is for the new version only, and the task is released
        fixed = [region for region in broken.result if region["from_name"] != "path_json"]
        fixed.append({**next(region for region in broken.result if region["from_name"] == "path_json"),
                      "value": {"text": [tasks["hotels-paris"].data["path_json"]]}})
        studio.client.annotations.update(id=broken.id, result=fixed)
        check, waited = _wait(lambda: _check_of(studio, tasks["hotels-paris"].id, broken.id))
        assert check is not None and check["verdict"] == "passes", waited
        paris = _task(studio, tasks["hotels-paris"].id)
        assert paris["data"]["feedback_html"] == "" and paris["data"]["rework"] == "no"
        assert list(paris["data"]["live_checks"]) == [str(broken.id)]
        assert paris["is_labeled"] is True and paris["data"]["rework_markers"] == {}
        assert [item["id"] for item in paris["annotations"]] == [broken.id]  # the marker is gone, nothing else

        # two annotators on one task: each result on its own annotation, the rework only for its author
        second = studio.client.users.create(username="hook2", email="hook2@example.com")
        other = _annotate(studio, tasks["airports-sydney"], "[[", "fix", user=second.id)
        check, waited = _wait(lambda: _check_of(studio, tasks["airports-sydney"].id, other.id))
        assert check is not None and check["verdict"] == "needs fixing", waited
        sydney = _task(studio, tasks["airports-sydney"].id)
        assert sydney["data"]["live_checks"][str(good.id)]["verdict"] == "passes"
        assert sydney["data"]["live_checks"][str(other.id)]["annotator"] == "hook2@example.com"
        assert f"hook2@example.com (annotation {other.id})" in sydney["data"]["feedback_html"]
        assert list(sydney["data"]["rework_markers"]["by_user"]) == [str(second.id)]

        # a junior-fill project pushed after the receiver started: found, listed the same way, checked
        template = drafts["hotels-paris"]
        blank = template.calls[0][0].model_copy(update={"arguments": {}})
        candidate = template.model_copy(update={"id": "hotels-paris-v1", "calls": [[blank], template.calls[1]],
                                                "meta": {"stage3": {"needs_arguments": True}}})
        write_json_lines(JuniorFiles.in_dir(pipeline.build_dir).candidates, [sample_to_dict(candidate.model_copy(deep=True))])
        junior = run_junior_push(pipeline, studio.connection)
        views = raw_request(studio.client, "GET", "api/dm/views/", params={"project": junior.project_id}).json()
        assert "tasks:data.variant_html" in next(item for item in views if item["data"]["title"] == VIEW_TITLE)[
            "data"]["hiddenColumns"]["explore"]
        hooked, _ = _wait(lambda: studio.client.webhooks.list(project=junior.project_id), timeout=DEADLINE_S)
        assert [hook.url for hook in hooked] == [receiver["url"]]
        junior_task = studio.client.tasks.get(id=str(junior.task_ids[0]))
        unfilled = studio.client.annotations.create(id=junior_task.id, lead_time=2.0, result=[
            textarea_result("arguments_json", "variant", junior_task.data["arguments_json"]),
            choices_result("verdict", "variant", ["filled"])])
        check, waited = _wait(lambda: _check_of(studio, junior_task.id, unfilled.id))
        assert check is not None and check["verdict"] == "needs fixing", waited
        assert check["problems"] == ["call var_1: argument 'query' is still null"]

        # the receiver down: annotating still works at once, nothing is checked, pull still decides
        stopped = runner.invoke(app, ["studio", "webhook", "hook", *cli, "--stop"])
        assert stopped.exit_code == 0 and "stopped" in stopped.stdout
        # switched off on the way out: nothing is sent to a port another program may take later
        assert [hook.is_active for hook in studio.client.webhooks.list(project=pushed.project_id)] == [False]
        unchecked = _annotate(studio, tasks["two-cities"], tasks["two-cities"].data["path_json"], "accept")
        assert unchecked.id  # saved although the hook's receiver is gone (Label Studio gives up on it)
        time.sleep(1)
        assert _check_of(studio, tasks["two-cities"].id, unchecked.id) is None
        final = run_stage2_pull(pipeline, connection=studio.connection)
        assert final.counts["gold"] == 3 and final.counts["rejected"] == 1  # sydney's newest is hook2's broken one
        assert {row["id"] for row in read_lines(Stage2Files.in_dir(pipeline.build_dir).rejects)} == {"airports-sydney"}
        gold = {row["id"] for row in read_lines(Stage2Files.in_dir(pipeline.build_dir).templates)}
        assert {"hotels-paris", "two-cities"} <= gold  # (sydney's template from the first pull is kept)

        # started again with the studio (another port): the same webhook points at it, on again, none added
        restarted = runner.invoke(app, ["studio", "start", "--webhook", "hook", *cli, "--json"])
        assert restarted.exit_code == 0, restarted.output
        again = json.loads(restarted.stdout)["webhook"]
        assert again["running"] and again["url"] != receiver["url"]
        hooks = studio.client.webhooks.list(project=pushed.project_id)
        assert [(hook.url, hook.is_active) for hook in hooks] == [(again["url"], True)]
        # and it catches up on what was annotated while it was down
        caught, waited = _wait(lambda: _check_of(studio, tasks["two-cities"].id, unchecked.id), timeout=DEADLINE_S)
        assert caught is not None and caught["verdict"] == "passes", waited
    finally:
        runner.invoke(app, ["studio", "webhook", "hook", *cli, "--stop"])
    assert find_project(studio.client, project_title(pipeline)) is not None


def test_a_sent_back_task_comes_back_in_label_all_tasks_and_is_released_once_fixed(studio, drafts, tmp_path) -> None:
    """The annotator's side in the real UI (headless Chromium): after `pull --send-back`, "Label All
    Tasks" serves the sent-back task again with the problem on top; submitting it fixed completes it."""
    from playwright.sync_api import sync_playwright

    from annotate.browser.screenshot import CHROMIUM, CHROMIUM_ARGS, EDITOR_SELECTOR

    pipeline = write_pipeline(tmp_path, name="queue")
    # a draft of model "draft": "Label All Tasks" pre-fills only predictions of the project's model
    # version, which push sets to "draft" whatever the draft's model (that mismatch is fixed apart)
    draft = drafts["hotels-paris"]
    write_drafts(pipeline, [draft.model_copy(update={"provenance": draft.provenance.model_copy(update={"model": None})})])
    pushed = run_stage2_push(pipeline, studio.connection)
    task = list_tasks(studio.client, pushed.project_id)[0]
    broken = _annotate(studio, task, '[[{"label": "var_1", "name": }]]', "fix")
    sent = run_stage2_pull(pipeline, send_back=True, connection=studio.connection)
    assert sent.counts["sent_back"] == 1 and _task(studio, task.id)["is_labeled"] is False
    credentials = read_credentials(studio.config)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(f"{studio.connection.url}/user/login/")
            page.fill("input[name=email]", credentials.username)
            page.fill("input[name=password]", credentials.password)
            page.click("button[type=submit]")
            page.wait_for_load_state("networkidle")
            page.goto(f"{studio.connection.url}/projects/{pushed.project_id}/data")
            page.get_by_text("Label All Tasks").click()
            page.wait_for_selector(EDITOR_SELECTOR, timeout=60_000)
            shown = page.inner_text(EDITOR_SELECTOR)
            assert "Sent back by the checks" in shown and "Expecting value at line 1 column 30" in shown
            assert "hotels-paris" in shown
            page.get_by_text("accept").first.click()  # the draft as shown is right after all
            page.get_by_test_id("bottombar-submit-button").click()
            resubmitted, _ = _wait(lambda: len(_task(studio, task.id)["annotations"]) == 3, timeout=DEADLINE_S)
            assert resubmitted  # the broken annotation, the marker, and the new one: nothing lost
        finally:
            browser.close()
    fixed = run_stage2_pull(pipeline, send_back=True, connection=studio.connection)
    assert fixed.counts["gold"] == 1 and fixed.counts["feedback_cleared"] == 1, fixed.failures
    after = _task(studio, task.id)
    assert after["is_labeled"] is True and after["data"]["rework"] == "no" and after["data"]["feedback_html"] == ""
    assert len(after["annotations"]) == 2 and broken.id in {item["id"] for item in after["annotations"]}
