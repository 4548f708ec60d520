"""The webhook receiver's logic without a Label Studio server: payloads, keys, verdicts, what a
task shows, and the receiver's queue (a real HTTP endpoint on loopback, a scripted server behind)."""

from __future__ import annotations

import copy
import json
import threading
import time
from typing import Any

import pytest

from annotate import webhook
from annotate.review.live_check import (BadEvent, LiveCheck, annotation_key, parse_event, stored_checks, task_view,
                                 verdict_of)
from annotate.exchange.push import task_view_data
from annotate.tasks.single import choices_result, listing_fields, senior_task, textarea_result
from annotate.webhook import LiveChecker, Receiver
from fcbench.jsonl import write_json_lines
from fcbench.sample import sample_to_dict
from ls_helpers import write_pipeline
from ls_fixtures import drafts, travel_environment, travel_tools  # noqa: F401 (pytest fixtures)


# ------------------------------------------------------------------------------------ payloads
def _body(**overrides: Any) -> bytes:
    payload = {"action": "ANNOTATION_CREATED", "annotation": {"id": 7, "task": 3, "result": []},
               "task": {"id": 3}, "project": {"id": 2}}
    payload.update(overrides)
    return json.dumps(payload).encode()


def test_an_event_names_project_task_and_annotation() -> None:
    event = parse_event(_body())
    assert (event.action, event.project_id, event.task_id, event.annotation_id) == ("ANNOTATION_CREATED", 2, 3, 7)
    without_task = parse_event(_body(task=None, project=None))  # the annotation's own fields then
    assert (without_task.task_id, without_task.project_id) == (3, None)


@pytest.mark.parametrize("body, reason", [
    (b"\xff", "not JSON"), (b"[1]", "not a JSON object"), (_body(action="TASKS_CREATED"), "is not one of"),
    (_body(annotation={"id": True}), "no annotation id"), (_body(annotation={"id": 7}, task=None), "names no task"),
])
def test_a_body_that_names_no_annotation_is_refused_with_its_reason(body: bytes, reason: str) -> None:
    with pytest.raises(BadEvent, match=reason):
        parse_event(body)


def test_the_key_changes_with_what_was_submitted_and_only_with_it() -> None:
    region = {"from_name": "path_json", "to_name": "draft", "type": "textarea", "value": {"text": ["[]"]}}
    annotation = {"id": 5, "result": [region], "was_cancelled": False, "updated_at": "2026-01-01T00:00:00Z"}
    same = {"updated_at": "later", "was_cancelled": False, "result": [dict(reversed(list(region.items())))], "id": 5}
    assert annotation_key(annotation) == annotation_key(same)  # key order and timestamps aside
    assert annotation_key(annotation).startswith("5:")
    edited = copy.deepcopy(annotation)
    edited["result"][0]["value"]["text"] = ["[[]]"]
    assert annotation_key(edited) != annotation_key(annotation)
    assert annotation_key({**annotation, "was_cancelled": True}) != annotation_key(annotation)
    assert annotation_key({**annotation, "id": 6}) != annotation_key(annotation)


# ------------------------------------------------------------------------------------ verdicts
def _check(annotation_id: int, annotator: str, status: str, codes: tuple[str, ...] = (), when: str = "2026-01-01",
           user_id: int | None = None, problems: tuple[str, ...] = ()) -> LiveCheck:
    return LiveCheck(f"{annotation_id}:x", annotation_id, user_id, annotator, when, status, codes, problems)


def test_verdict_words_follow_pulls_status_and_codes() -> None:
    assert verdict_of("gold", ()) == "passes"
    assert verdict_of("cancelled", ("cancelled",)) == "skipped"
    assert verdict_of("rejected", ("bad_json",)) == "needs fixing"
    assert verdict_of("rejected", ("rejected_by_annotator",)) == "rejected by annotator"
    assert verdict_of("rejected", ("stale_draft",)) == "refused"  # not the annotator's to fix
    assert verdict_of("pending", ()) == "pending"


def test_two_annotators_each_get_their_own_result_and_only_the_failing_one_reworks() -> None:
    passing = _check(1, "a@x", "gold", when="2026-01-02", user_id=10)
    failing = _check(2, "b@x", "rejected", ("bad_json",), when="2026-01-01", user_id=20,
                     problems=("the path JSON is not valid JSON",))
    view = task_view([failing, passing])
    assert view.verdict == "needs fixing" and view.rework == "yes" and view.rework_users == [20]
    assert view.annotator == "a@x, b@x"
    assert "b@x (annotation 2): the path JSON is not valid JSON" in view.feedback_html and "a@x" not in view.feedback_html
    fields = view.data_fields()
    assert set(fields["live_checks"]) == {"1", "2"} and fields["live_checks"]["2"]["verdict"] == "needs fixing"


def test_an_annotators_newer_passing_annotation_ends_their_rework_and_skips_do_not_count() -> None:
    older = _check(1, "a@x", "rejected", ("bad_reference",), when="2026-01-01", user_id=10, problems=("bad",))
    newer = _check(2, "a@x", "gold", when="2026-01-03", user_id=10)
    skip = _check(3, "a@x", "cancelled", ("cancelled",), when="2026-01-04", user_id=10)
    view = task_view([older, newer, skip])
    assert view.verdict == "passes" and view.rework == "no" and view.feedback_html == "" and view.rework_users == []
    alone = task_view([older])
    assert alone.feedback_html.count("<li>bad</li>") == 1 and "annotation 1" not in alone.feedback_html  # one author
    assert task_view([skip]).verdict == "skipped" and task_view([skip]).rework == ""
    assert task_view([]).verdict == ""


def test_stored_checks_round_trip_and_unreadable_entries_are_dropped() -> None:
    check = _check(4, "a@x", "rejected", ("bad_json",), user_id=1, problems=("broken",))
    data = {"live_checks": {"4": check.as_dict(), "5": {"annotation_id": "x"}, "6": "junk"}}
    assert stored_checks(data) == {check.key: check}
    assert stored_checks({"live_checks": "junk"}) == {}


# --------------------------------------------------------------------------------- task columns
def test_tasks_carry_plain_columns_and_the_view_hides_every_payload(drafts) -> None:
    task = senior_task(drafts["hotels-paris"])
    assert task["data"]["n_calls"] == 2 and task["data"]["n_steps"] == 2 and task["data"]["domain"] == "hotels"
    assert task["data"]["n_warnings"] == len(task["data"]["ambiguity"]) > 0
    assert listing_fields(drafts["two-cities"])["n_calls"] == 2 and listing_fields(drafts["two-cities"])["n_steps"] == 1
    view = task_view_data(task["data"])
    explore = set(view["hiddenColumns"]["explore"])
    assert {"tasks:data.draft_html", "tasks:data.entry_options", "tasks:data.tool_options", "tasks:data.draft",
            "tasks:data.feedback_html", "tasks:data.live_checks", "tasks:data.rework_markers"} <= explore
    shown = {f"tasks:data.{key}" for key in ("sample_id", "domain", "n_calls", "n_steps", "n_warnings", "annotator",
                                             "verdict", "rework")}
    assert not shown & explore and "tasks:id" not in explore


# ------------------------------------------------------------------------ the checker, scripted
class _Response:
    def __init__(self, status: int, body: Any = None) -> None:
        self.status_code, self._body = status, body

    def json(self) -> Any:
        return self._body

    def raise_for_status(self) -> None:
        assert self.status_code < 400, self.status_code


class _Server:
    """Just enough of Label Studio for LiveChecker: tasks with annotations, task updates, users.
    `on_read` runs before each task read (to edit an annotation in the middle of a check)."""

    def __init__(self, task: dict[str, Any]) -> None:
        self.task = task
        self.updates: list[dict[str, Any]] = []
        self.reads = 0
        self.on_read = lambda reads: None
        server = self

        class HttpClient:
            def request(self, path: str, method: str = "GET", **kwargs: Any) -> _Response:
                if method == "GET" and path == f"api/tasks/{server.task['id']}":
                    server.reads += 1
                    server.on_read(server.reads)
                    return _Response(200, copy.deepcopy(server.task))
                if method == "PATCH" and path == f"api/tasks/{server.task['id']}":
                    server.task.update(kwargs["json"])
                    return _Response(200, server.task)
                if method == "PATCH" and path == f"api/projects/{server.task['project']}":
                    server.project_settings.update(kwargs["json"])
                    return _Response(200, {})
                raise AssertionError(f"unexpected {method} {path}")

        class Wrapper:
            httpx_client = HttpClient()

        class Tasks:
            def update(self, id: str, data: dict[str, Any]) -> None:  # noqa: A002 (the SDK's name)
                server.updates.append(data)
                server.task["data"] = data

        class Annotations:
            def create(self, id: int, **fields: Any) -> Any:  # noqa: A002 (the SDK's name)
                marker = {"id": 100 + len(server.task["annotations"]), **fields}
                server.task["annotations"].append(marker)
                return type("Created", (), {"id": marker["id"]})()

        class User:
            id, email, username = 1, "a@example.com", "a"

        class Users:
            def list(self) -> list[Any]:
                return [User()]

        self.project_settings: dict[str, Any] = {}
        self._client_wrapper, self.tasks, self.users, self.annotations = Wrapper(), Tasks(), Users(), Annotations()


def _annotation(annotation_id: int, path_json: str, verdict: str = "accept") -> dict[str, Any]:
    return {"id": annotation_id, "completed_by": 1, "was_cancelled": False, "updated_at": "2026-01-01T00:00:00Z",
            "lead_time": 1.0, "result": [textarea_result("query", "draft", "Which airports serve Sydney?"),
                                         textarea_result("path_json", "draft", path_json),
                                         choices_result("verdict", "draft", [verdict])]}


@pytest.fixture
def scripted(drafts, tmp_path):
    pipeline = write_pipeline(tmp_path, with_environment=False)
    task = {"id": 9, "project": 1, "overlap": 1, **senior_task(drafts["airports-sydney"])}
    task["annotations"] = [_annotation(4, task["data"]["path_json"])]
    server = _Server(task)
    return LiveChecker(pipeline, connection=None, client=server), server  # type: ignore[arg-type]


def test_a_check_is_written_once_and_a_repeated_delivery_writes_nothing(scripted) -> None:
    checker, server = scripted
    first = checker.check_task(9)
    assert (first.checked, first.written) == (1, True)
    assert server.task["data"]["live_checks"]["4"]["verdict"] == "passes"
    again = checker.check_task(9)
    assert (again.checked, again.reused, again.written) == (0, 1, False) and len(server.updates) == 1


def test_an_annotation_edited_during_its_check_gets_no_result_until_checked_again(scripted) -> None:
    checker, server = scripted

    def edit_after_first_read(reads: int) -> None:
        if reads == 1:
            return
        server.task["annotations"][0] = _annotation(4, "[[", "fix")  # saved while the old version was checked

    server.on_read = edit_after_first_read
    stale = checker.check_task(9)
    assert stale.changed_meanwhile and not stale.written and server.updates == []
    server.on_read = lambda reads: None
    fresh = checker.check_task(9)
    check = server.task["data"]["live_checks"]["4"]
    assert fresh.written and check["key"] == annotation_key(server.task["annotations"][0])
    assert check["verdict"] == "needs fixing" and check["codes"] == ["bad_json"]
    # sent back to its annotator: an empty skip by them, the task incomplete, skips requeued to them
    marker = server.task["annotations"][1]
    assert marker["was_cancelled"] is True and marker["result"] == [] and marker["completed_by"] == 1
    assert server.task["overlap"] == 2 and server.project_settings == {"skip_queue": "REQUEUE_FOR_ME"}
    assert server.task["data"]["rework_markers"] == {"overlap": 1, "by_user": {"1": marker["id"]}}
    assert checker.check_task(9).written is False  # the marker is not an annotation to check


# ------------------------------------------------------------------------------- the receiver
class _CountingChecker:
    def __init__(self, fail_first: int = 0) -> None:
        self.calls: list[int] = []
        self.fail_first = fail_first
        self.release = threading.Event()

        class Pipeline:
            name = "p"

        self.pipeline = Pipeline()
        self.client = None

    def check_task(self, task_id: int) -> webhook.CheckRound:
        self.release.wait(5)
        self.calls.append(task_id)
        if len(self.calls) <= self.fail_first:
            raise ConnectionError("the server is restarting")
        return webhook.CheckRound(task_id, checked=1)


def _receiver(checker: _CountingChecker) -> Receiver:
    receiver = Receiver(checker, "s3cret", [], port=0, log=lambda line: None)  # type: ignore[arg-type]
    receiver.register = lambda: None  # type: ignore[method-assign] (no server to register with)
    receiver.registered = {2: "p stage2"}
    return receiver


def test_the_receiver_answers_at_once_and_checks_a_task_delivered_twice_once() -> None:
    checker = _CountingChecker()
    receiver = _receiver(checker)
    receiver.start()
    try:
        assert receiver.receive(_body(), "wrong") [0] == 403 and receiver.receive(_body(), None)[0] == 403
        assert receiver.receive(b"{}", "s3cret")[0] == 400
        assert receiver.receive(_body(project={"id": 99}), "s3cret") == (
            200, {"queued": False, "ignored": "not a project of this pipeline"})
        assert receiver.receive(_body(), "s3cret") == (200, {"queued": True})  # answered before any check ran
        assert receiver.receive(_body(), "s3cret") == (200, {"queued": False})  # the same task already waits
        checker.release.set()
        deadline = time.monotonic() + 60  # an outcome awaited, never a duration asserted
        while not receiver.idle() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert checker.calls == [3] and receiver.counters["duplicates"] == 1 and receiver.counters["refused"] == 3
    finally:
        receiver.stop()


def test_a_check_that_fails_on_a_server_error_is_tried_again(monkeypatch) -> None:
    monkeypatch.setattr(webhook, "RETRY_DELAYS_S", (0.05, 0.05))
    checker = _CountingChecker(fail_first=1)
    checker.release.set()
    receiver = _receiver(checker)
    receiver.start()
    try:
        receiver.receive(_body(), "s3cret")
        deadline = time.monotonic() + 60  # an outcome awaited, never a duration asserted
        while len(checker.calls) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert checker.calls == [3, 3] and receiver.counters["retried"] == 1
    finally:
        receiver.stop()


def test_an_annotation_of_a_draft_that_is_no_longer_current_is_refused_as_pull_refuses_it(scripted, drafts) -> None:
    checker, server = scripted
    other = drafts["two-cities"].model_copy(deep=True)
    write_json_lines(checker.drafts_file, [sample_to_dict(other)])  # another stage1 run: sydney is gone
    checker.check_task(9)
    check = server.task["data"]["live_checks"]["4"]
    assert check["verdict"] == "refused" and check["codes"] == ["stale_draft"]
    assert server.task["data"]["rework"] == "no"  # not the annotator's to fix: nothing sent back
