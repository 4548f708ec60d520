"""Which drafts are pushed (selection) and what a push does with each (plan), without a server."""

from __future__ import annotations

from annotate.tasks.ambiguity import find_ambiguities
from annotate.exchange.push import Action, ExistingTask, existing_from_api, plan_push
from annotate.tasks.select import completeness, select_drafts, shape_key
from annotate.tasks.single import senior_task
from fcbench.sample import path_shape
from ls_fixtures import drafts, travel_environment, travel_tools  # noqa: F401 (pytest fixtures)


def test_selection_covers_every_shape_before_repeating_one(drafts) -> None:
    pool = list(drafts.values())
    picked = select_drafts(pool, 3)
    shapes = [shape_key(path_shape(sample)) for sample in picked]
    assert len(set(shapes)) == 3  # nested, single and parallel: one each
    assert {shape[0] for shape in shapes} == {"nested", "single", "multiple"}
    assert [sample.id for sample in select_drafts(pool, 10)] == [sample.id for sample in select_drafts(pool[::-1], 10)]
    assert len(select_drafts(pool, 10)) == 4


def test_complete_drafts_come_before_drafts_missing_responses(drafts) -> None:
    complete = drafts["hotels-paris"]
    no_response = drafts["airports-sydney"].model_copy(
        update={"calls": [[drafts["airports-sydney"].calls[0][0].model_copy(update={}, deep=True)]]})
    stripped = no_response.model_dump(exclude={"calls"})
    stripped["calls"] = [[{"label": "var_1", "name": "Search_Flight_Location", "arguments": {"query": "Sydney"}}]]
    from fcbench.sample import sample_from_dict

    missing = sample_from_dict(stripped)
    assert completeness(missing).responses_fraction == 0.0
    assert [sample.id for sample in select_drafts([missing, complete], 1)] == ["hotels-paris"]


def test_overlapping_tools_are_flagged(drafts) -> None:
    draft = drafts["airports-sydney"]
    twin = draft.tools[0].model_copy(update={"name": "Find_Flight_Location"})
    flags = find_ambiguities(draft.model_copy(update={"tools": draft.tools + [twin]}))
    overlap = [flag for flag in flags if flag.kind == "overlapping_tools"]
    assert len(overlap) == 1 and overlap[0].tools == ("Search_Flight_Location", "Find_Flight_Location")


def _existing(task: dict, touched: bool, task_id: int = 1) -> ExistingTask:
    data = task["data"]
    return ExistingTask(task_id, data["sample_id"], data["draft_hash"], touched)


def test_push_plan_creates_skips_updates_and_keeps_touched_tasks(drafts) -> None:
    tasks = {sample_id: senior_task(sample) for sample_id, sample in drafts.items()}
    changed = senior_task(drafts["two-cities"].model_copy(update={"messages": [{"role": "user", "content": "Both?"}]}))
    changed_touched = senior_task(drafts["hotels-paris"].model_copy(update={"messages": [{"role": "user", "content": "Hm"}]}))
    existing = [_existing(tasks["airports-sydney"], touched=True, task_id=1),
                _existing(tasks["two-cities"], touched=False, task_id=2),
                _existing(tasks["hotels-paris"], touched=True, task_id=3)]
    plan = plan_push([tasks["airports-sydney"], changed, changed_touched, tasks["hotels-rome-wrong"]], existing)
    assert [(item.action, item.existing.id if item.existing else None) for item in plan] == [
        (Action.SKIP, 1), (Action.UPDATE, 2), (Action.KEEP_TOUCHED, 3), (Action.CREATE, None)]


def test_a_task_is_touched_by_any_annotation_skip_or_saved_draft() -> None:
    base = {"id": 7, "data": {"sample_id": "s", "draft_hash": "h"}}
    assert not existing_from_api({**base, "total_annotations": 0, "cancelled_annotations": 0, "drafts": []}).touched
    assert existing_from_api({**base, "total_annotations": 1}).touched
    assert existing_from_api({**base, "cancelled_annotations": 1}).touched
    assert existing_from_api({**base, "drafts": [{"id": 3}]}).touched
