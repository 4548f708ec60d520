"""Sending a task back to the annotator who submitted it, until their annotation passes: the task
opens on their own last annotation, with the checks' note above it, from the task list and from
"Label All Tasks" alike.

What Label Studio 1.23 offers (read from its code: projects/functions/next_task.py, the editor's
setAnnotation): "Label All Tasks" serves a task an annotator already annotated only from their
postponed drafts (task not completed) or their skips (project setting `skip_queue: REQUEUE_FOR_ME`),
and it never loads a task's annotations: what it shows is an unsaved draft of the annotator's if
they have one, else a new annotation from the prediction (the LLM draft). The task list shows the
task's annotations, and an annotator's unsaved draft in front of them. So sending a task back to
annotator A, whose annotation N needs fixing:

1. a draft of A's holding exactly N's result, postponed (`was_postponed`), is made AS A (drafts
   belong to whoever makes them: the API takes no other owner), so both ways of opening the task
   start from A's own last work, the note (`feedback_html`) above it; submitting it makes A's
   new annotation (Label Studio deletes the draft), which the next pull (or the webhook) checks;
2. the task's overlap is raised to (submitted annotations + markers) so it is not complete, and
   the project requeues skipped tasks to their annotator;
3. a marker is added: an empty skip by A, dated just before N (so it is listed after N, never in
   front of it, and never the one shown). A's own skips do not count against A, and count as taken
   for everyone else (Label Studio's lock rule under REQUEUE_FOR_ME), so nobody else is served A's
   rework. `pull` ignores the marker (a skip only counts on a task with no submitted annotation).

Once A's latest annotation passes, the overlap is restored, the marker and any draft left deleted.
A's annotation N itself is never touched: it stays in the task, and in pull's rejects.

Acting as A needs A's API token: the connection's own user (one person annotating on the local
studio), or an annotator account `stage2 push --annotators` made (tokens in the studio's
credentials file). For anyone else the task is only marked not completed (no draft, no marker: a
marker with nothing in front of it would be what the task list shows): it opens from the task list
on A's annotation N with the note above it, and "Label All Tasks" does not serve it to A again
(`pull --send-back` says so).

The task data lists what was done (`rework_markers`): the original overlap and, per user id, the
marker annotation, the draft and the annotation it was made from. A marker A submitted over (it
has a result, or is no longer a skip) is A's annotation and is never deleted.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Callable, Mapping

from annotate.studio.client import raw_request

REWORK_MARKERS_FIELD = "rework_markers"
SKIP_QUEUE_TO_SAME_ANNOTATOR = "REQUEUE_FOR_ME"

# user id -> a client acting as that user (None: no token for them)
AsUser = Callable[[int], Any]


def nobody(user_id: int) -> Any:
    """No client for anyone: sending back marks tasks only."""
    return None


@dataclass
class ReworkChange:
    markers: dict[str, Any]  # the task data's new `rework_markers` ({} when nobody has rework)
    requeued_for: list[int] = field(default_factory=list)  # given a draft of their work (and a marker)
    marked_for: list[int] = field(default_factory=list)  # no token: the task only marked not completed
    released_for: list[int] = field(default_factory=list)


def markers_of(data: Mapping[str, Any]) -> dict[str, Any]:
    markers = data.get(REWORK_MARKERS_FIELD)
    return markers if isinstance(markers, dict) else {}


def _entries(markers: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """user id -> {"marker", "draft", "annotation", "content"} (an older task lists a marker id alone)."""
    entries = {}
    for user, entry in (markers.get("by_user") or {}).items():
        if isinstance(entry, dict):
            entries[str(user)] = dict(entry)
        elif isinstance(entry, int):
            entries[str(user)] = {"marker": entry}
    return entries


def is_marker(annotation: Mapping[str, Any], markers: Mapping[str, Any]) -> bool:
    """Our empty skip, still as we made it (an annotator who submitted over it made it theirs)."""
    ids = {entry.get("marker") for entry in _entries(markers).values()}
    return annotation.get("id") in ids and bool(annotation.get("was_cancelled")) and not annotation.get("result")


def real_annotations(task: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The task's annotations without the markers."""
    markers = markers_of(task.get("data") or {})
    return [item for item in task.get("annotations") or [] if isinstance(item, dict) and not is_marker(item, markers)]


def content_of(annotation: Mapping[str, Any]) -> str:
    """A short hash of what an annotation holds (a draft is made again when it changes)."""
    text = json.dumps(annotation.get("result") or [], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def sync_rework(client: Any, task: Mapping[str, Any], rework: Mapping[int, int], as_user: AsUser = nobody
                ) -> ReworkChange:
    """Make the task wait for exactly the users in `rework` (user id -> id of their annotation to
    fix, their latest submitted one), each starting from that annotation. `task` is the server's
    task object (GET api/tasks/<id>: data, overlap, project, is_labeled and every annotation,
    skips included); `client` acts for fcbench (markers, overlap), `as_user(id)` as that annotator."""
    task_id = int(task["id"])
    annotations = {item.get("id"): item for item in task.get("annotations") or [] if isinstance(item, dict)}
    markers = markers_of(task.get("data") or {})
    entries = _entries(markers)
    original = int(markers.get("overlap") or task.get("overlap") or 1)
    change = ReworkChange(dict(markers))
    wanted = {str(user): annotation_id for user, annotation_id in rework.items() if annotation_id in annotations}
    released = [user for user in entries if user not in wanted]
    current = {user: entry for user, entry in entries.items() if user in wanted}
    stale = [user for user, annotation_id in wanted.items() if user in current and (
        current[user].get("annotation") != annotation_id
        or current[user].get("content") != content_of(annotations[annotation_id]))]
    added = [user for user in wanted if user not in current]
    if not released and not added and not stale:
        return change
    still_markers = {item_id for item_id, item in annotations.items() if is_marker(item, markers)}
    # released first: restore the overlap, then delete (Label Studio recomputes "completed" on delete)
    for user in released:
        entry = entries[user]
        if entry.get("draft") is not None:
            raw_request(client, "DELETE", f"api/drafts/{entry['draft']}/")  # gone already if submitted: fine
        change.released_for.append(int(user))
    # the rework of each user who has one: a draft of their work, a marker, or only a mark
    sessions = {user: as_user(int(user)) for user in {*added, *stale}}
    for user in [*stale, *added]:
        entry = dict(current.get(user) or {})
        annotation = annotations[wanted[user]]
        session = sessions[user]
        if entry.get("draft") is not None:  # a draft of an older version: replaced
            raw_request(client, "DELETE", f"api/drafts/{entry['draft']}/")
            entry["draft"] = None
        if session is not None:
            entry["draft"] = _postponed_draft(session, task_id, annotation)
            if entry.get("marker") not in still_markers:
                entry["marker"] = _marker(client, task_id, int(user), annotation)
            change.requeued_for.append(int(user))
        else:
            entry.setdefault("marker", None)
            entry["draft"] = None
            change.marked_for.append(int(user))
        entry["annotation"], entry["content"] = wanted[user], content_of(annotation)
        current[user] = entry
    kept_markers = [entry["marker"] for entry in current.values() if entry.get("marker") is not None]
    submitted = sum(1 for item in annotations.values() if not item.get("was_cancelled"))
    overlap = submitted + len(kept_markers) if kept_markers else original
    if any(entry.get("marker") is not None for user, entry in current.items() if user in added) and \
            isinstance(task.get("project"), int):
        raw_request(client, "PATCH", f"api/projects/{task['project']}",
                    json={"skip_queue": SKIP_QUEUE_TO_SAME_ANNOTATOR}).raise_for_status()
    fields: dict[str, Any] = {}
    if task.get("overlap") != overlap:
        fields["overlap"] = overlap
    if current:
        # not complete while someone has rework. Label Studio recomputes this only when an
        # annotation is saved or deleted (the marker was saved before the overlap changed), so it
        # is said directly; without a marker the others' lock rule still counts the annotations:
        # the task is served to nobody else, and listed as not completed
        fields["is_labeled"] = False
    elif task.get("is_labeled") is False and submitted >= original:
        fields["is_labeled"] = True  # nobody's rework left: complete again, as Label Studio counts it
    if fields:
        raw_request(client, "PATCH", f"api/tasks/{task_id}", json=fields).raise_for_status()
    for user in released:
        marker = entries[user].get("marker")
        if marker in still_markers:
            raw_request(client, "DELETE", f"api/annotations/{marker}/")
    change.markers = {"overlap": original, "by_user": current} if current else {}
    return change


def _postponed_draft(session: Any, task_id: int, annotation: Mapping[str, Any]) -> int:
    """As the annotator: an unsaved draft holding their annotation's result, waiting in their
    "Label All Tasks" queue (what both the queue and the task list open on)."""
    response = raw_request(session, "POST", f"api/tasks/{task_id}/drafts",
                           json={"result": annotation.get("result") or [], "lead_time": 0, "was_postponed": True})
    response.raise_for_status()
    return int(response.json()["id"])


def _marker(client: Any, task_id: int, user_id: int, annotation: Mapping[str, Any]) -> int:
    """The empty skip by the annotator, dated a second before their annotation: the editor lists
    annotations by that date, so the marker comes after theirs and is never the one shown."""
    body: dict[str, Any] = {"result": [], "was_cancelled": True, "completed_by": user_id, "lead_time": 0}
    before = _a_second_before(annotation.get("created_at"))
    if before:
        body["draft_created_at"] = before
    response = raw_request(client, "POST", f"api/tasks/{task_id}/annotations/", json=body)
    response.raise_for_status()
    return int(response.json()["id"])


def _a_second_before(when: Any) -> str | None:
    if not isinstance(when, str):
        return None
    try:
        moment = datetime.fromisoformat(when.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (moment - timedelta(seconds=1)).isoformat().replace("+00:00", "Z")


def server_task(client: Any, task_id: int) -> dict[str, Any] | None:
    """The task with all its annotations, skips included (the annotation list API leaves them out)."""
    response = raw_request(client, "GET", f"api/tasks/{task_id}")
    if response.status_code == 404:
        return None
    response.raise_for_status()
    task = response.json()
    return task if isinstance(task, dict) and isinstance(task.get("data"), dict) else None


def annotator_sessions(connection: Any, client: Any, studio: Any = None) -> AsUser:
    """Who fcbench can act as on this server: the connection's own user, and the annotator accounts
    of the local studio (`stage2 push --annotators`; their tokens in its credentials file, used
    only when that studio is the server connected to, and read again for a user not seen yet).
    Clients are opened once per user."""
    from annotate.studio.client import Connection, open_client

    opened: dict[int, Any] = {}
    own: list[int | None] = []

    def as_user(user_id: int) -> Any:
        if not own:
            response = raw_request(client, "GET", "api/current-user/whoami")
            own.append(response.json().get("id") if response.status_code == 200 else None)
        if user_id == own[0]:
            return client
        if user_id not in opened:
            token = _team_tokens(connection, studio).get(user_id)
            if token is None:
                return None
            opened[user_id] = open_client(Connection(connection.url, token))
        return opened[user_id]

    return as_user


def _team_tokens(connection: Any, studio: Any) -> dict[int, str]:
    """user id -> API token of the local studio's annotator accounts ({} for another server)."""
    try:
        from annotate.studio.server import StudioConfig, read_state
        from annotate.studio.team import stored_annotators

        studio = studio or StudioConfig()
        state = read_state(studio) or {}
        if str(state.get("url", "")).rstrip("/") != str(connection.url).rstrip("/"):
            return {}
        return {annotator.user_id: annotator.token for annotator in stored_annotators(studio).values()}
    except (OSError, ValueError, KeyError):  # no local studio, or an unreadable credentials file
        return {}
