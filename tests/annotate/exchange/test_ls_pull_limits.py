"""What a pull refuses to make gold, from a Label Studio export file (no server needed): two tasks of
one draft that disagree (reported, neither kept), and an annotation past its size limit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from annotate.review.size import MAX_FIELD_CHARS, MAX_QUERY_CHARS, size_problems
from annotate.stage2.senior import Stage2Files, run_stage2_pull
from annotate.tasks.single import choices_result, senior_task, textarea_result
from fcbench.sample import sample_to_dict
from ls_fixtures import drafts, travel_environment, travel_tools  # noqa: F401 (pytest fixtures)
from ls_helpers import read_lines, write_drafts, write_pipeline


def _task(task_id: int, draft, annotation_id: int, query: str | None = None, path: str | None = None,
          when: str = "2026-01-01T10:00:00Z", user: int = 1) -> dict[str, Any]:
    task = senior_task(draft)
    result = [dict(region) for region in task["predictions"][0]["result"]]
    if query is not None:
        result = [textarea_result("query", "draft", query) if region["from_name"] == "query" else region
                  for region in result]
    if path is not None:
        result = [textarea_result("path_json", "draft", path) if region["from_name"] == "path_json" else region
                  for region in result]
    result.append(choices_result("verdict", "draft", ["fix" if query or path else "accept"]))
    return {"id": task_id, "project": 7, "data": task["data"], "annotations": [{
        "id": annotation_id, "completed_by": user, "was_cancelled": False, "result": result, "lead_time": 5.0,
        "created_at": when, "updated_at": when}]}


def _pull(tmp_path: Path, drafts_used: list, tasks: list[dict[str, Any]], previous: list | None = None):
    pipeline = write_pipeline(tmp_path, name="limits")
    write_drafts(pipeline, drafts_used)
    files = Stage2Files.in_dir(pipeline.build_dir)
    if previous is not None:
        files.templates.write_text("".join(json.dumps(sample_to_dict(sample)) + "\n" for sample in previous))
    export = tmp_path / "export.json"
    export.write_text(json.dumps(tasks))
    report = run_stage2_pull(pipeline, from_export=export)
    summary = json.loads(files.summary.read_text())
    return report, summary, {row["id"] for row in read_lines(files.templates)}, read_lines(files.rejects)


def test_two_tasks_of_one_draft_with_different_gold_are_reported_and_neither_is_kept(drafts, tmp_path):
    sydney, rome = drafts["airports-sydney"], drafts["hotels-rome-wrong"]
    paris = drafts["hotels-paris"]
    tasks = [_task(1, sydney, 11), _task(2, sydney, 12, query="Which airports serve Sydney, Australia?"),
             _task(3, paris, 13), _task(4, paris, 14, when="2026-01-02T10:00:00Z"),  # the same gold twice
             _task(5, rome, 15)]
    # an earlier pull's template of the disputed draft must not come back either
    report, summary, gold, rejects = _pull(tmp_path, [sydney, paris, rome], tasks, previous=[sydney])
    # hotels-rome-wrong (its path searches Paris for a query about Rome) accepted as drafted is wrong
    # gold: its value has no source in the query, so the pull refuses it too
    assert summary["reasons"] == {"conflicting_gold": 2, "provenance_missing": 1}
    assert report.counts["rejected"] == 3
    assert "airports-sydney" not in gold and "hotels-rome-wrong" not in gold and "hotels-paris" in gold
    disputed = {row["label_studio_task_id"]: row for row in rejects if row["reason"] == "conflicting_gold"}
    assert set(disputed) == {1, 2}
    assert "in task 2" in disputed[1]["problems"][0]["message"] and "in task 1" in disputed[2]["problems"][0]["message"]
    assert disputed[2]["result"]  # the raw annotation is kept: nothing lost
    messages = " | ".join(summary["messages"])
    assert "draft airports-sydney: task 1 (annotation 11 by user 1), task 2 (annotation 12 by user 1) give " \
           "different gold; none is kept" in messages
    assert "draft hotels-paris: task 3 (annotation 13 by user 1), task 4 (annotation 14 by user 1) give the " \
           "same gold; it is kept once" in messages
    assert "sample airports-sydney has no gold in this pull" not in messages  # not silently kept from before


def test_an_annotation_past_its_size_limit_is_a_reject_never_gold(drafts, tmp_path):
    sydney, paris = drafts["airports-sydney"], drafts["hotels-paris"]
    huge_query = "Which airports serve Sydney? " + "x" * (10 * 1024 * 1024)  # a 10 MB query
    tasks = [_task(1, sydney, 11, query=huge_query), _task(2, paris, 12)]
    report, summary, gold, rejects = _pull(tmp_path, [sydney, paris], tasks)
    assert gold == {"hotels-paris"} and summary["reasons"]["annotation_too_large"] == 1
    (row,) = [row for row in rejects if row["id"] == "airports-sydney"]
    assert row["reason"] == "annotation_too_large"
    assert f"the query holds {len(huge_query):,} characters, more than the {MAX_QUERY_CHARS:,} allowed" in \
        row["problems"][0]["message"]
    assert report.failures[0]["task_id"] == 1  # and it is one the annotator can fix (sent back on --send-back)


def test_the_limits_name_the_field_and_count_every_string():
    at_limit = [textarea_result("query", "draft", "q" * MAX_QUERY_CHARS)]
    assert size_problems(at_limit) == []
    over = size_problems([textarea_result("query", "draft", "q" * (MAX_QUERY_CHARS + 1)),
                          textarea_result("path_json", "draft", "[" * (MAX_FIELD_CHARS + 1))])
    assert [problem.code.value for problem in over] == ["annotation_too_large"] * 2
    assert "the field 'path_json'" in over[1].message
    turns = json.dumps([{"user": "u" * (MAX_QUERY_CHARS + 5)}, {"agent": "fine"}])
    (turn,) = size_problems([textarea_result("conversation_json", "conversation", turns)])
    assert turn.message.startswith("turn 1: the user's text holds")
