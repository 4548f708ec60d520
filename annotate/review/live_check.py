"""Live checks of annotations (the webhook receiver's pure logic: no server, no threads).

Label Studio calls the receiver (annotate/webhook.py) when an annotation is created or updated.
This module says what such a call means and what the task should show afterwards:

- `parse_event`: a webhook body -> which project, task and annotation it is about. The payload is
  only a hint: the receiver reads the annotation back from the server before checking it, so a
  late, repeated or forged delivery can only cause a re-read, never a wrong result.
- `annotation_key`: an annotation's identity for a check result: its id plus a hash of what the
  annotator submitted (result, skipped or not). A result is attached to an annotation only while
  its key is still the annotation's current key: edited after its check, the annotation gets a new
  check and the old result is dropped; a webhook delivered twice finds the result already there.
- `LiveCheck`: one annotation's verdict, from the same `TaskOutcome` `pull` computes.
- `task_view`: what the task shows from the checks of its annotations: the feedback the annotator
  reads, and the Data Manager columns (verdict, rework, annotator). Rework is decided per annotator
  from their latest submitted annotation, as `pull` picks the latest one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

from annotate.tasks import render
from annotate.tasks.problems import NOT_ERRORS, ProblemCode
from annotate.tasks.single import ANNOTATOR_FIELD, REWORK_FIELD, VERDICT_FIELD

ACTIONS = ("ANNOTATION_CREATED", "ANNOTATION_UPDATED")
LIVE_CHECKS_FIELD = "live_checks"  # task data: annotation id -> LiveCheck (hidden from the Data Manager)


class BadEvent(ValueError):
    """A webhook body that names no annotation to check (answered 400, never queued)."""


@dataclass(frozen=True)
class WebhookEvent:
    action: str
    project_id: int | None
    task_id: int
    annotation_id: int


def parse_event(body: bytes) -> WebhookEvent:
    try:
        payload = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadEvent(f"the body is not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise BadEvent("the body is not a JSON object")
    action = payload.get("action")
    if action not in ACTIONS:
        raise BadEvent(f"action {action!r} is not one of {', '.join(ACTIONS)}")
    annotation = payload.get("annotation")
    if not isinstance(annotation, dict) or not _is_id(annotation.get("id")):
        raise BadEvent("the payload has no annotation id (register the webhook with send_payload)")
    task = payload.get("task")
    task_id = task.get("id") if isinstance(task, dict) else annotation.get("task")
    if not _is_id(task_id):
        raise BadEvent("the payload names no task")
    project = payload.get("project")
    project_id = project.get("id") if isinstance(project, dict) else annotation.get("project")
    return WebhookEvent(str(action), project_id if _is_id(project_id) else None, int(task_id), int(annotation["id"]))


def _is_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def annotation_key(annotation: Mapping[str, Any]) -> str:
    """`<id>:<hash of result and skip>`: changes whenever what the annotator submitted changes."""
    content = {"result": annotation.get("result") or [], "was_cancelled": bool(annotation.get("was_cancelled"))}
    text = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return f"{annotation.get('id')}:{hashlib.sha256(text.encode('utf-8')).hexdigest()[:16]}"


# Verdicts, worded for the Data Manager column (sortable: what needs a person sorts first).
PASSES = "passes"
NEEDS_FIXING = "needs fixing"
REJECTED_BY_ANNOTATOR = "rejected by annotator"
SKIPPED = "skipped"
REFUSED = "refused"  # a problem that is not the annotator's to fix (malformed task, missing draft)


@dataclass(frozen=True)
class LiveCheck:
    """One annotation's check: the key it was made for, and pull's status and problems."""

    key: str
    annotation_id: int
    user_id: int | None
    annotator: str
    updated_at: str | None
    status: str  # TaskOutcome.status: gold | rejected | cancelled
    codes: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    checked_at: str = ""

    @property
    def verdict(self) -> str:
        return verdict_of(self.status, self.codes)

    @property
    def needs_fixing(self) -> bool:
        return self.verdict == NEEDS_FIXING

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["codes"], data["problems"] = list(self.codes), list(self.problems)
        data["verdict"] = self.verdict
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "LiveCheck":
        return cls(str(data["key"]), int(data["annotation_id"]), data.get("user_id"), str(data.get("annotator", "")),
                   data.get("updated_at"), str(data["status"]), tuple(data.get("codes") or ()),
                   tuple(data.get("problems") or ()), str(data.get("checked_at", "")))


_NOT_ERRORS = frozenset(code.value for code in NOT_ERRORS)


def verdict_of(status: str, codes: Sequence[str]) -> str:
    """The verdict column's words for a pull status (gold, rejected, cancelled, pending...) and its
    problem codes: the same words whether the webhook or `pull --send-back` wrote them."""
    if status == "gold":
        return PASSES
    if status == "cancelled":
        return SKIPPED
    if status != "rejected":
        return status  # pending, adjudication: a state of the task, not of an annotation
    if any(code not in _NOT_ERRORS for code in codes):
        return NEEDS_FIXING
    if ProblemCode.REJECTED_BY_ANNOTATOR.value in codes:
        return REJECTED_BY_ANNOTATOR
    return REFUSED


def check_from_outcome(outcome: Any, annotation: Mapping[str, Any], annotator: str, checked_at: str) -> LiveCheck:
    """A `pull.TaskOutcome` of a task holding only this annotation, as a stored check."""
    author = annotation.get("completed_by")
    user_id = author.get("id") if isinstance(author, dict) else author
    problems = [problem for problem in outcome.problems if problem.code is not ProblemCode.CANCELLED]
    return LiveCheck(annotation_key(annotation), int(annotation["id"]), user_id if _is_id(user_id) else None,
                     annotator, annotation.get("updated_at"), outcome.status,
                     tuple(problem.code.value for problem in outcome.problems),
                     tuple(problem.message for problem in problems), checked_at)


def stored_checks(task_data: Mapping[str, Any]) -> dict[str, LiveCheck]:
    """The checks kept in a task's data, by key (unreadable entries are dropped: they are re-made)."""
    raw = task_data.get(LIVE_CHECKS_FIELD)
    checks: dict[str, LiveCheck] = {}
    if not isinstance(raw, dict):
        return checks
    for item in raw.values():
        try:
            check = LiveCheck.from_dict(item)
        except (KeyError, TypeError, ValueError):
            continue
        checks[check.key] = check
    return checks


@dataclass
class TaskView:
    """What a task shows after its annotations are checked (the fields written into its data)."""

    checks: list[LiveCheck]  # the current annotations' checks, latest first
    feedback_html: str = ""
    verdict: str = ""
    rework: str = ""  # "yes" while some annotator's latest submission needs fixing
    annotator: str = ""
    rework_users: list[int] = field(default_factory=list)  # who must fix their annotation
    rework_annotations: dict[int, int] = field(default_factory=dict)  # user id -> their annotation to fix

    def data_fields(self) -> dict[str, Any]:
        return {LIVE_CHECKS_FIELD: {str(check.annotation_id): check.as_dict() for check in self.checks},
                "feedback_html": self.feedback_html, VERDICT_FIELD: self.verdict, REWORK_FIELD: self.rework,
                ANNOTATOR_FIELD: self.annotator}


def task_view(checks: Sequence[LiveCheck]) -> TaskView:
    """The task's feedback and columns from the checks of its current annotations (markers excluded)."""
    ordered = sorted(checks, key=lambda check: (check.updated_at or "", check.annotation_id), reverse=True)
    latest_by_annotator: dict[str, LiveCheck] = {}
    for check in ordered:
        if check.status != "cancelled":
            latest_by_annotator.setdefault(check.annotator, check)
    view = TaskView(ordered)
    if not latest_by_annotator:
        view.verdict = SKIPPED if ordered else ""
        return view
    latest = list(latest_by_annotator.values())  # latest first, one per annotator
    failing = [check for check in latest if check.needs_fixing]
    view.verdict = NEEDS_FIXING if failing else latest[0].verdict
    view.rework = "yes" if failing else "no"
    view.annotator = ", ".join(check.annotator for check in latest)
    view.rework_users = [check.user_id for check in failing if check.user_id is not None]
    view.rework_annotations = {check.user_id: check.annotation_id for check in failing if check.user_id is not None}
    view.feedback_html = feedback_for(failing, several=len(latest) > 1)
    return view


def feedback_for(failing: Sequence[LiveCheck], several: bool) -> str:
    """The note at the top of the labeling page: each failing annotation's problems, named by
    annotator when several people annotated the task (so nobody fixes someone else's work)."""
    if not failing:
        return ""
    messages: list[str] = []
    for check in failing:
        prefix = f"{check.annotator} (annotation {check.annotation_id}): " if several else ""
        messages.extend(prefix + message for message in check.problems)
    return render.feedback_html(messages, failing[0].updated_at or "")
