"""Sending a task back to the queue of the annotator who submitted it, until their annotation passes.

Label Studio's open-source queue ("Label All Tasks") has no rework state: a task someone annotated
is never served to them again, and it stays "completed". What it does have is a queue of skipped
tasks served back to the same annotator (project setting `skip_queue: REQUEUE_FOR_ME`), for tasks
not completed. So sending a task back to annotator A:
1. the project requeues skipped tasks to the same annotator;
2. the task's overlap is raised to (submitted annotations + markers), so it is not complete;
3. an empty skipped annotation by A is added: the marker. A is then served the task again, at the
   end of their queue; for anyone else the task counts as taken (their lock check counts A's
   submitted annotation and the marker), so nobody else is given A's rework.
Once A's latest annotation passes, the overlap is restored and the marker deleted (in that order:
Label Studio recomputes "completed" when an annotation is saved or deleted).
Side effect of step 1, from the first send-back on: a task an annotator skips comes back to them
too (at the end of their queue) instead of going to someone else.

`pull` ignores the marker: a skip only matters for a task with no submitted annotation, and the
marker exists only beside A's submitted one. The markers are listed in the task data
(`rework_markers`: the original overlap, and user id -> marker annotation id); a marker A
submitted over (it has a result, or is no longer a skip) is A's annotation and is never deleted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from annotate.studio.client import raw_request

REWORK_MARKERS_FIELD = "rework_markers"
SKIP_QUEUE_TO_SAME_ANNOTATOR = "REQUEUE_FOR_ME"


@dataclass
class ReworkChange:
    markers: dict[str, Any]  # the task data's new `rework_markers` ({} when nobody has rework)
    requeued_for: list[int] = field(default_factory=list)
    released_for: list[int] = field(default_factory=list)


def markers_of(data: Mapping[str, Any]) -> dict[str, Any]:
    markers = data.get(REWORK_MARKERS_FIELD)
    return markers if isinstance(markers, dict) else {}


def is_marker(annotation: Mapping[str, Any], markers: Mapping[str, Any]) -> bool:
    """Our empty skip, still as we made it (an annotator who submitted over it made it theirs)."""
    ids = set((markers.get("by_user") or {}).values())
    return annotation.get("id") in ids and bool(annotation.get("was_cancelled")) and not annotation.get("result")


def real_annotations(task: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The task's annotations without the markers."""
    markers = markers_of(task.get("data") or {})
    return [item for item in task.get("annotations") or [] if isinstance(item, dict) and not is_marker(item, markers)]


def sync_rework(client: Any, task: Mapping[str, Any], rework_users: set[int]) -> ReworkChange:
    """Make the task wait in exactly `rework_users`' queues. `task` is the server's task object
    (GET api/tasks/<id>: data, overlap, project and every annotation, skips included)."""
    task_id = int(task["id"])
    markers = markers_of(task.get("data") or {})
    by_user = {str(user): int(aid) for user, aid in (markers.get("by_user") or {}).items()}
    original = int(markers.get("overlap") or task.get("overlap") or 1)
    released = {user: aid for user, aid in by_user.items() if int(user) not in rework_users}
    added = [user_id for user_id in sorted(rework_users) if str(user_id) not in by_user]
    change = ReworkChange(dict(markers))
    if not released and not added:
        return change
    kept = len(by_user) - len(released) + len(added)
    submitted = sum(1 for item in task.get("annotations") or []
                    if isinstance(item, dict) and not item.get("was_cancelled"))
    overlap = submitted + kept if kept else original
    if added and isinstance(task.get("project"), int):
        raw_request(client, "PATCH", f"api/projects/{task['project']}",
                    json={"skip_queue": SKIP_QUEUE_TO_SAME_ANNOTATOR}).raise_for_status()
    if task.get("overlap") != overlap:
        raw_request(client, "PATCH", f"api/tasks/{task_id}", json={"overlap": overlap}).raise_for_status()
    still_markers = {item.get("id") for item in task.get("annotations") or []
                     if isinstance(item, dict) and is_marker(item, markers)}
    for user, annotation_id in released.items():
        del by_user[user]
        if annotation_id in still_markers:
            raw_request(client, "DELETE", f"api/annotations/{annotation_id}/")
        change.released_for.append(int(user))
    for user_id in added:
        marker = client.annotations.create(id=task_id, result=[], was_cancelled=True, completed_by=user_id, lead_time=0)
        by_user[str(user_id)] = int(marker.id)
        change.requeued_for.append(user_id)
    change.markers = {"overlap": original, "by_user": by_user} if by_user else {}
    return change


def server_task(client: Any, task_id: int) -> dict[str, Any] | None:
    """The task with all its annotations, skips included (the annotation list API leaves them out)."""
    response = raw_request(client, "GET", f"api/tasks/{task_id}")
    if response.status_code == 404:
        return None
    response.raise_for_status()
    task = response.json()
    return task if isinstance(task, dict) and isinstance(task.get("data"), dict) else None
