"""Pushing tasks to a Label Studio project: create or reuse the project, then import only what is new.

Idempotent by construction: every task carries `sample_id` and `draft_hash` in its data, and the
project's tasks are listed before importing. A task already there is skipped; a task whose draft
changed since is updated only when no annotator has touched it (no annotation, no skipped
annotation, no saved draft), otherwise it is left alone and reported. Tasks are imported in
batches: if the server stops mid-push, the batches already imported are found on the next run.

Tasks are taken as a stream and imported in batches bounded by count and by bytes: tasks of
long-response drafts are up to ~1.3 MB of JSON each, and a push of 1,000 of them held at once (or
sent in one request) would take gigabytes on both sides.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Iterable, Sequence

from annotate.studio.client import Connection, raw_request, server_errors
from annotate.studio.label_configs import ConfigSpec, PredictionValidator, validated_config
from fcbench.runtime.progress import StageProgress

IMPORT_BATCH = 500  # tasks per import request: well under the server's 200 MB limit for drafts of a few KB
IMPORT_BATCH_BYTES = 16 * 2**20  # and at most this much task JSON per request (the server parses it whole)
LIST_PAGE = 500
PLAN_PAGE = 100  # tasks per page when listing for a push (each page carries the tasks' whole data)


class Action(str, Enum):
    CREATE = "create"
    SKIP = "skip"  # the same draft is already a task
    UPDATE = "update"  # the draft changed and nobody touched its task yet
    KEEP_TOUCHED = "keep_touched"  # the draft changed but an annotator already worked on the task


@dataclass(frozen=True)
class ExistingTask:
    id: int
    sample_id: str | None
    draft_hash: str | None
    touched: bool  # an annotation (submitted or skipped) or a saved draft exists
    data: dict[str, Any] = field(default_factory=dict, compare=False)
    annotations: int = field(default=0, compare=False)  # submitted and skipped


@dataclass(frozen=True)
class PlannedTask:
    action: Action
    task: dict[str, Any]
    existing: ExistingTask | None = None


@dataclass
class PushSummary:
    project_id: int
    project_title: str
    counts: dict[str, int] = field(default_factory=dict)
    invalid: list[dict[str, Any]] = field(default_factory=list)  # tasks whose prediction failed validation
    task_ids: list[int] = field(default_factory=list)  # tasks created by this push
    team: dict[str, Any] = field(default_factory=dict)  # annotators, overlap, tasks per annotator (no secret)

    def as_dict(self) -> dict[str, Any]:
        data = {"project_id": self.project_id, "project_title": self.project_title, "counts": self.counts,
                "invalid": self.invalid, "created_task_ids": self.task_ids}
        if self.team:
            data["team"] = self.team
        return data


def existing_from_api(item: dict[str, Any]) -> ExistingTask:
    data = item.get("data") or {}
    touched = bool(item.get("total_annotations") or item.get("cancelled_annotations") or item.get("drafts"))
    annotations = int(item.get("total_annotations") or 0) + int(item.get("cancelled_annotations") or 0)
    return ExistingTask(int(item["id"]), data.get("sample_id"), data.get("draft_hash"), touched, data, annotations)


class PushPlanner:
    """What to do with each task given the project's existing tasks (pure): the decision that makes
    pushing twice harmless. One task at a time, so a push can stream its tasks."""

    def __init__(self, existing: Iterable[ExistingTask]) -> None:
        self.by_key: dict[tuple[str | None, str | None], ExistingTask] = {}
        self.by_sample: dict[str | None, list[ExistingTask]] = {}
        for task in existing:
            self.by_key.setdefault((task.sample_id, task.draft_hash), task)
            self.by_sample.setdefault(task.sample_id, []).append(task)

    def plan(self, task: dict[str, Any]) -> PlannedTask:
        data = task["data"]
        key = (data["sample_id"], data["draft_hash"])
        if key in self.by_key:
            return PlannedTask(Action.SKIP, task, self.by_key[key])
        others = self.by_sample.get(data["sample_id"], [])
        if not others:
            return PlannedTask(Action.CREATE, task)
        if all(other.touched for other in others):
            return PlannedTask(Action.KEEP_TOUCHED, task, others[0])
        return PlannedTask(Action.UPDATE, task, next(other for other in others if not other.touched))


def plan_push(tasks: Sequence[dict[str, Any]], existing: Iterable[ExistingTask]) -> list[PlannedTask]:
    """What to do with each task (pure): the decision that makes pushing twice harmless."""
    planner = PushPlanner(existing)
    return [planner.plan(task) for task in tasks]


# --------------------------------------------------------------------------------------- server side
def find_project(client: Any, title: str) -> Any | None:
    for project in client.projects.list(title=title):
        if project.title == title:
            return project
    return None


def ensure_project(client: Any, title: str, xml: str, model_version: str) -> int:
    """The project with this title (its config brought up to date), created if missing."""
    project = find_project(client, title)
    if project is None:
        project = client.projects.create(title=title, label_config=xml, model_version=model_version,
                                          show_collab_predictions=True)
        return int(project.id)
    if project.label_config != xml or project.model_version != model_version:
        client.projects.update(id=project.id, label_config=xml, model_version=model_version,
                               show_collab_predictions=True)
    return int(project.id)


def list_tasks(client: Any, project_id: int, keep_data: bool = True, page_size: int = LIST_PAGE) -> list[ExistingTask]:
    """Every task of the project with what `plan_push` needs (one request per page); without
    `keep_data`, only the keys a push plans on are kept of each task's data (a project of
    long-response tasks holds gigabytes of data)."""
    tasks: list[ExistingTask] = []
    page = 1
    while True:
        response = raw_request(client, "GET", "api/tasks/", params={
            "project": project_id, "page": page, "page_size": page_size, "fields": "task_only",
            "include": "id,data,total_annotations,cancelled_annotations,drafts"})
        if response.status_code == 404:  # past the last page
            break
        response.raise_for_status()
        body = response.json()
        items = body.get("tasks", []) if isinstance(body, dict) else body
        page_count = len(items)
        total = body.get("total", len(tasks) + page_count) if isinstance(body, dict) else len(tasks) + page_count
        found = [existing_from_api(item) for item in items]
        tasks.extend(found if keep_data else (replace(task, data={}) for task in found))
        if not page_count or len(tasks) >= total:
            break
        page += 1
    return tasks


def push_tasks(connection: Connection, client: Any, title: str, spec: ConfigSpec, tasks: Iterable[dict[str, Any]],
               model_version: str, batch_size: int = IMPORT_BATCH, forms: str = "",
               batch_bytes: int = IMPORT_BATCH_BYTES) -> PushSummary:
    """Push the tasks. Every prediction is given `model_version`, the project's own: Label Studio
    pre-fills a task served by "Label All Tasks" only from predictions of the project's model
    version (opening a task from the list shows any prediction, which hid the difference).

    `tasks` is read once, as a stream: each task is checked and planned as it comes, new tasks are
    imported in batches of at most `batch_size` tasks and `batch_bytes` of JSON, in the order given,
    so memory holds one batch whatever the number of tasks."""
    with server_errors(connection, "checking the label config"):
        xml = validated_config(spec, client, forms=forms)
    validator = PredictionValidator(xml)
    with server_errors(connection, "preparing the project"):
        project_id = ensure_project(client, title, xml, model_version)
        planner = PushPlanner(list_tasks(client, project_id, keep_data=False, page_size=PLAN_PAGE))
    summary = PushSummary(project_id, title)
    counts = {action.value: 0 for action in Action}
    data_keys: set[str] = set()
    batch: list[dict[str, Any]] = []
    batch_size_bytes = 0

    def import_batch() -> None:
        nonlocal batch, batch_size_bytes
        if batch:
            with server_errors(connection, f"importing {len(batch)} tasks ({counts[Action.CREATE.value]} imported before)"):
                response = client.projects.import_tasks(id=project_id, request=batch, return_task_ids=True)
            summary.task_ids.extend(int(task_id) for task_id in (response.task_ids or []))
            counts[Action.CREATE.value] += len(batch)
        batch, batch_size_bytes = [], 0

    with StageProgress("push", None) as progress:  # counting also checks the memory ceiling
        for task in tasks:
            progress.advance()
            task = with_model_version(task, model_version)
            data_keys.update(task["data"])
            problems = [problem for prediction in task.get("predictions", []) for problem in validator.problems(prediction)]
            if problems:
                summary.invalid.append({"id": task["data"]["sample_id"], "reason": "invalid_prediction", "problems": problems})
                continue
            item = planner.plan(task)
            if item.action is Action.CREATE:
                size = len(json.dumps(task, ensure_ascii=False).encode("utf-8"))
                if batch and (len(batch) >= batch_size or batch_size_bytes + size > batch_bytes):
                    import_batch()
                batch.append(task)
                batch_size_bytes += size
            elif item.action is Action.UPDATE and item.existing is not None:
                with server_errors(connection, "updating changed drafts"):
                    replace_untouched_task(client, project_id, item.existing.id, item.task)
                counts[Action.UPDATE.value] += 1
            else:
                counts[item.action.value] += 1
    import_batch()
    counts["invalid"] = len(summary.invalid)
    with server_errors(connection, "setting up the task list"):
        ensure_task_view(client, project_id, data_keys)
    summary.counts = counts
    return summary


def with_model_version(task: dict[str, Any], model_version: str) -> dict[str, Any]:
    predictions = task.get("predictions")
    if not predictions or all(p.get("model_version") == model_version for p in predictions):
        return task
    return {**task, "predictions": [{**p, "model_version": model_version} for p in predictions]}


# ------------------------------------------------------------------------------ the task list view
VIEW_TITLE = "fcbench tasks"
# Data Manager columns worth sorting and filtering on (task data fields from annotate/tasks/single.py's
# listing_fields, plus the query and a team's assignment); every other data field is a payload
# for the labeling page (HTML, JSON, the draft) and is hidden, including those the checks add later.
VISIBLE_DATA = ("sample_id", "query", "domain", "n_calls", "n_steps", "n_warnings", "annotator", "verdict", "rework",
                "assigned_annotators")
NUMBER_DATA = ("n_calls", "n_steps", "n_warnings")
LATER_DATA = ("feedback_html", "live_checks", "rework_markers")  # written by the checks after the push
HIDDEN_BUILT_IN = ("tasks:inner_id", "tasks:annotations_results", "tasks:annotations_ids", "tasks:predictions_score",
                   "tasks:predictions_model_versions", "tasks:predictions_results", "tasks:file_upload",
                   "tasks:storage_filename", "tasks:updated_by", "tasks:comments", "tasks:comment_authors",
                   "tasks:unresolved_comment_count", "tasks:last_comment_updated_at", "tasks:draft_exists",
                   "tasks:avg_lead_time", "tasks:total_predictions", "tasks:created_at", "tasks:updated_at")
LABELING_VISIBLE = ("tasks:id", "tasks:data.sample_id", "tasks:data.verdict", "tasks:data.rework")


def task_view_data(data_keys: Iterable[str]) -> dict[str, Any]:
    """The view's settings (pure): which columns show, in the list and beside the labeling page."""
    hidden_data = sorted({f"tasks:data.{key}" for key in (*data_keys, *LATER_DATA) if key not in VISIBLE_DATA})
    explore = [*HIDDEN_BUILT_IN, *hidden_data]
    every = ["tasks:completed_at", "tasks:total_annotations", "tasks:cancelled_annotations", "tasks:annotators",
             *HIDDEN_BUILT_IN, *hidden_data,
             *(f"tasks:data.{key}" for key in VISIBLE_DATA)]
    labeling = [column for column in every if column not in LABELING_VISIBLE]
    return {"title": VIEW_TITLE, "type": "list", "target": "tasks",
            "hiddenColumns": {"explore": explore, "labeling": labeling},
            # Label Studio types a data column by the label config's use of it (none here: String);
            # counts filter and sort as numbers only when the view says so
            "columnsDisplayType": {f"tasks:data.{key}": "Number" for key in NUMBER_DATA},
            "filters": {"conjunction": "and", "items": []}, "ordering": ["tasks:id"]}


def ensure_task_view(client: Any, project_id: int, data_keys: Iterable[str]) -> int:
    """The project's fcbench view (first tab), created or brought up to date; its id. Columns the
    view already hides stay hidden (a later push may carry fewer fields)."""
    wanted = task_view_data(data_keys)
    response = raw_request(client, "GET", "api/dm/views/", params={"project": project_id})
    response.raise_for_status()
    views = [view for view in response.json() if isinstance(view, dict)]
    ours = next((view for view in views if (view.get("data") or {}).get("title") == VIEW_TITLE), None)
    if ours is None:
        created = raw_request(client, "POST", "api/dm/views/", json={"project": project_id, "data": wanted})
        created.raise_for_status()
        view_id = int(created.json()["id"])
        others = [int(view["id"]) for view in views]
        if others:  # ours first: it is the tab the Data Manager opens on
            raw_request(client, "POST", "api/dm/views/order/", json={"project": project_id, "ids": [view_id, *others]})
        return view_id
    current = ours.get("data") or {}
    hidden = current.get("hiddenColumns") or {}
    merged = {mode: sorted(set(wanted["hiddenColumns"][mode]) | set(hidden.get(mode) or [])
                           - ({f"tasks:data.{key}" for key in VISIBLE_DATA} if mode == "explore" else set(LABELING_VISIBLE)))
              for mode in ("explore", "labeling")}
    types = {**(current.get("columnsDisplayType") or {}), **wanted["columnsDisplayType"]}
    if (merged != {mode: sorted(hidden.get(mode) or []) for mode in ("explore", "labeling")}
            or types != current.get("columnsDisplayType")):
        updated = raw_request(client, "PATCH", f"api/dm/views/{ours['id']}/", json={
            "project": project_id, "data": {**current, "hiddenColumns": merged, "columnsDisplayType": types}})
        updated.raise_for_status()
    return int(ours["id"])


def replace_untouched_task(client: Any, project_id: int, task_id: int, task: dict[str, Any]) -> None:
    """Give an untouched task the new draft: new data, the old predictions replaced by the new."""
    client.tasks.update(id=str(task_id), data=task["data"])
    for prediction in client.predictions.list(task=task_id):
        client.predictions.delete(id=prediction.id)
    for prediction in task.get("predictions", []):
        client.predictions.create(task=task_id, result=prediction["result"],
                                  model_version=prediction.get("model_version"))


def update_task_data(client: Any, task_id: int, data: dict[str, Any]) -> None:
    client.tasks.update(id=str(task_id), data=data)
