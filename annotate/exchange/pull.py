"""Pulling annotations back: a Label Studio JSON export (from the server, or a file) becomes gold
samples, each checked; failures are listed with the exact problem and can be sent back.

One code path for both sources: the server's snapshot export (every task, annotated or not) and an
export file a user downloaded give the same list of task objects, processed by `process_tasks`.
Nothing is written until everything is read, so a server that stops mid-pull leaves the previous
files untouched; a re-run redoes the pull from scratch (pulling is idempotent).

Which annotation is the gold one: the most recently updated submitted (not skipped) annotation of
the task. Other submitted annotations of the same task are compared with it for agreement.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from itertools import combinations
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from annotate.review.agreement import ACCEPT, REJECT, PairAgreement, UnitAgreement
from annotate.review.checks import CheckOutcome, check_correction
from annotate.review.size import size_problems
from annotate.studio.client import Connection, ServerError, server_errors
from annotate.exchange.export_stream import ExportTasks, SpooledExport
from annotate.tasks.problems import NOT_ERRORS, Problem, ProblemCode
from annotate.review.qa import Agreement, SampleDiff, agreement, diff_sample
from annotate.tasks.render import last_user_text
from annotate.tasks.single import (Correction, JuniorAnswer, SeniorAnswer, ToolCatalog, build_junior_correction,
                            build_senior_correction, draft_of)
from annotate.studio.team import ASSIGNED_FIELD, ASSIGNED_IDS_FIELD, OVERLAP_FIELD
from fcbench.environments import Environment
from fcbench.runtime.progress import StageProgress
from fcbench.sample import Sample, sample_to_dict

EXPORT_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class AnnotationInfo:
    task_id: int
    annotation_id: int | None
    annotator: str
    created_at: str | None
    updated_at: str | None
    lead_time: float | None
    was_cancelled: bool
    result: list[Any]
    user_id: int | None = None  # Label Studio's id of the annotator (an export file names users by id only)


@dataclass
class TaskOutcome:
    task_id: int
    sample_id: str | None
    status: str  # gold | rejected | pending | cancelled | adjudication (a team disagreed)
    task_data: dict[str, Any]
    sample: Sample | None = None
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    annotation: AnnotationInfo | None = None
    correction: Correction | None = None
    diff: SampleDiff | None = None
    agreements: list[tuple[AnnotationInfo, Agreement]] = field(default_factory=list)
    team: UnitAgreement | None = None  # a task assigned to several annotators: their agreement
    team_paths: dict[str, Any] = field(default_factory=dict)  # annotator -> decision and path (adjudication)

    @property
    def needs_fixing(self) -> bool:
        """Problems the annotator can fix (not a skip, not their own reject)."""
        return self.status == "rejected" and any(problem.code not in NOT_ERRORS for problem in self.problems)

    def reject_row(self) -> dict[str, Any]:
        """One line of the rejects file: the reason, every problem, and the raw annotation (nothing lost)."""
        reason = self.problems[0].code.value if self.problems else self.status
        row: dict[str, Any] = {"id": self.sample_id, "reason": reason,
                               "problems": [problem.as_dict() for problem in self.problems],
                               "label_studio_task_id": self.task_id}
        if self.annotation is not None:
            row.update({"label_studio_annotation_id": self.annotation.annotation_id,
                        "annotator": self.annotation.annotator, "updated_at": self.annotation.updated_at,
                        "result": self.annotation.result})
        return row


# ------------------------------------------------------------------------------------ reading tasks
def annotations_of(task: dict[str, Any], users: dict[int, str]) -> list[AnnotationInfo]:
    infos = []
    for annotation in task.get("annotations") or []:
        author = annotation.get("completed_by")
        if isinstance(author, dict):  # some exports expand the user
            annotator = str(author.get("email") or author.get("id"))
        else:
            annotator = users.get(author, f"user {author}") if author is not None else "unknown"
        user_id = author.get("id") if isinstance(author, dict) else author
        infos.append(AnnotationInfo(
            task_id=int(task["id"]), annotation_id=annotation.get("id"), annotator=annotator,
            created_at=annotation.get("created_at"), updated_at=annotation.get("updated_at"),
            lead_time=annotation.get("lead_time"), was_cancelled=bool(annotation.get("was_cancelled")),
            result=list(annotation.get("result") or []), user_id=user_id if isinstance(user_id, int) else None))
    return infos


def _latest_first(annotations: Sequence[AnnotationInfo]) -> list[AnnotationInfo]:
    return sorted(annotations, key=lambda info: (info.updated_at or "", info.annotation_id or 0), reverse=True)


Builder = Callable[[Sample, Sequence[Any]], Correction]


def senior_builder(draft: Sample, result: Sequence[Any]) -> Correction:
    return build_senior_correction(draft, SeniorAnswer.from_result(result))


def junior_builder(candidate: Sample, result: Sequence[Any]) -> Correction:
    return build_junior_correction(candidate, JuniorAnswer.from_result(result))


def process_tasks(tasks: Iterable[dict[str, Any]], kind: str, builder: Builder,
                  environment: Callable[[], Environment | None], users: dict[int, str] | None = None,
                  stage: str = "stage2", project_id: int | None = None,
                  catalog: ToolCatalog | None = None,
                  on_outcome: Callable[[TaskOutcome], None] | None = None) -> list[TaskOutcome]:
    """Every task of `kind` turned into an outcome. `environment` is called only when a submitted
    annotation needs checking (opening a tool pool for a project with no annotation is waste).
    `on_outcome` sees each outcome as soon as it is made, before the next task is read: a pull of
    a streamed export finishes with each task there (and may drop what it no longer needs)."""
    outcomes: list[TaskOutcome] = []
    with StageProgress(f"{stage} pull", None) as progress:  # counting also checks the memory ceiling
        for position, task in enumerate(tasks):
            progress.advance()
            outcome = _outcome_of(task, position, kind, builder, environment, users, stage, project_id, catalog)
            if outcome is None:
                continue
            if on_outcome is not None:
                on_outcome(outcome)
            outcomes.append(outcome)
    return outcomes


def _outcome_of(task: Any, position: int, kind: str, builder: Builder, environment: Callable[[], Environment | None],
                users: dict[int, str] | None, stage: str, project_id: int | None,
                catalog: ToolCatalog | None) -> TaskOutcome | None:
    """One task's outcome (None: a task of another kind, not this pull's)."""
    data = task.get("data") if isinstance(task, dict) else None
    task_id = task.get("id") if isinstance(task, dict) else None
    if not isinstance(task_id, int) or not isinstance(data, dict):
        # One broken task in an export is that task's reject, never the whole pull's failure.
        return _malformed(task_id, position, "the task has no integer id or no data object")
    if data.get("kind") != kind:
        return None
    try:
        return _process_task(task, data, builder, environment, users or {}, stage, project_id, catalog)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        return _malformed(task_id, position, f"{type(exc).__name__}: {exc}", data)


def _malformed(task_id: Any, position: int, detail: str, data: dict[str, Any] | None = None) -> TaskOutcome:
    """A task the pull cannot read, kept as a reject with its id (or its place in the export)."""
    where = f"task {task_id}" if isinstance(task_id, int) else f"entry {position + 1} of the export"
    outcome = TaskOutcome(task_id if isinstance(task_id, int) else -(position + 1),
                          (data or {}).get("sample_id") if isinstance(data, dict) else None, "rejected", data or {})
    outcome.problems = [Problem(ProblemCode.MALFORMED_TASK, f"{where} is malformed: {detail}")]
    return outcome


def open_task(task: dict[str, Any], data: dict[str, Any], users: dict[int, str], catalog: ToolCatalog | None,
              what: str = "draft") -> tuple[TaskOutcome, Sample | None, list[AnnotationInfo]]:
    """What every kind of task starts with: its submitted annotations (latest first) and the draft
    it was made from. Without the draft the outcome is already decided: pending (no annotation),
    cancelled (every annotation skipped) or rejected (an annotation past its size limit, no draft in
    the task data, or one that cannot be rebuilt)."""
    outcome = TaskOutcome(int(task["id"]), data.get("sample_id"), "pending", data)
    annotations = annotations_of(task, users)
    submitted = _latest_first([info for info in annotations if not info.was_cancelled])
    if not annotations:
        return outcome, None, submitted
    if not submitted:
        outcome.status = "cancelled"
        outcome.annotation = _latest_first(annotations)[0]
        outcome.problems = [Problem(ProblemCode.CANCELLED, "the annotator skipped the task")]
        return outcome, None, submitted
    outcome.annotation = submitted[0]  # until a gold annotation is chosen
    oversized = [(info, problem) for info in submitted for problem in size_problems(info.result)]
    if oversized:  # never gold, and never parsed further (annotate/review/size.py)
        outcome.status = "rejected"
        outcome.annotation = oversized[0][0]
        several = len(submitted) > 1
        outcome.problems = [problem if not several else
                            Problem(problem.code, f"annotation {info.annotation_id} by {info.annotator}: {problem.message}")
                            for info, problem in oversized]
        return outcome, None, submitted
    try:
        draft = draft_of(data, catalog)
    except ValueError as exc:  # DraftUnavailable, or a draft that is not a valid sample
        outcome.status = "rejected"
        outcome.problems = [Problem(ProblemCode.MISSING_DRAFT, f"the task's {what} cannot be rebuilt: {exc}")]
        return outcome, None, submitted
    if draft is None:
        outcome.status = "rejected"
        outcome.problems = [Problem(ProblemCode.MISSING_DRAFT, f"the task data holds no fcbench {what}")]
    return outcome, draft, submitted


def _process_task(task: dict[str, Any], data: dict[str, Any], builder: Builder,
                  environment: Callable[[], Environment | None], users: dict[int, str], stage: str,
                  project_id: int | None, catalog: ToolCatalog | None) -> TaskOutcome:
    outcome, draft, submitted = open_task(task, data, users, catalog)
    if draft is None:
        return outcome
    assigned = data.get(ASSIGNED_FIELD)
    if isinstance(assigned, list) and assigned:
        return _team_outcome(outcome, task, data, submitted, draft, builder, environment, stage, project_id)
    return _gold_outcome(outcome, task, data, draft, submitted[0], submitted[1:], builder, environment, stage,
                         project_id)


def _gold_outcome(outcome: TaskOutcome, task: dict[str, Any], data: dict[str, Any], draft: Sample,
                  gold_annotation: AnnotationInfo, others: Sequence[AnnotationInfo], builder: Builder,
                  environment: Callable[[], Environment | None], stage: str, project_id: int | None) -> TaskOutcome:
    """The task's gold from one annotation, checked; the others are compared with it."""
    outcome.annotation = gold_annotation
    correction = builder(draft, gold_annotation.result)
    outcome.correction = correction
    needs_environment = correction.sample is not None and not correction.problems
    checked: CheckOutcome = check_correction(correction, environment() if needs_environment else None)
    outcome.notes.extend(checked.notes)
    if not checked.ok:
        outcome.status = "rejected"
        outcome.problems = checked.problems
        return outcome
    outcome.status = "gold"
    project = task.get("project") if isinstance(task.get("project"), int) else project_id  # exports name it
    outcome.sample = with_provenance(checked.sample, gold_annotation, stage, data, correction, project)
    outcome.diff = diff_sample(draft, checked.sample, sum(len(paths) for paths in correction.deletions.values()),
                               correction.dropped_tools)
    for other in others:
        second = builder(draft, other.result)
        if second.sample is not None and not second.problems:
            outcome.agreements.append((other, agreement(correction.sample, second.sample)))
    return outcome


def _team_outcome(outcome: TaskOutcome, task: dict[str, Any], data: dict[str, Any],
                  submitted: Sequence[AnnotationInfo], draft: Sample, builder: Builder,
                  environment: Callable[[], Environment | None], stage: str, project_id: int | None) -> TaskOutcome:
    """A task assigned to several annotators: gold only when their annotations agree (same
    decision, and exactly the same path when they accept); otherwise it waits for adjudication,
    which is an annotation by someone outside the assignment (the latest such one is the gold)."""
    assigned = [str(email) for email in data[ASSIGNED_FIELD]]
    required = int(data.get(OVERLAP_FIELD) or len(assigned))
    # an export file names annotators by user id only: the task data maps the assigned ids back
    email_of = {int(user_id): email for email, user_id in zip(assigned, data.get(ASSIGNED_IDS_FIELD) or [])
                if isinstance(user_id, int)}
    submitted = [info if info.annotator in assigned or info.user_id not in email_of
                 else replace(info, annotator=email_of[info.user_id]) for info in submitted]
    latest_by: dict[str, AnnotationInfo] = {}
    for info in submitted:  # latest first: an annotator's newest annotation counts
        latest_by.setdefault(info.annotator, info)
    team = [latest_by[email] for email in assigned if email in latest_by]
    unit, paths = team_unit(outcome.task_id, outcome.sample_id, draft, team, builder)
    outcome.team, outcome.team_paths = unit, paths
    adjudications = [info for info in submitted if info.annotator not in assigned]
    if adjudications:
        outcome.notes.append(f"adjudicated by {adjudications[0].annotator}")
        return _gold_outcome(outcome, task, data, draft, adjudications[0], (), builder, environment, stage,
                             project_id)
    if len(team) < required:
        outcome.notes.append(f"{len(team)} of {required} assigned annotations submitted")
        return outcome  # pending
    if unit.disputed:
        outcome.status = "adjudication"
        outcome.annotation = team[0]
        return outcome
    latest = [info for info in submitted if info in team]
    return _gold_outcome(outcome, task, data, draft, latest[0], latest[1:], builder, environment, stage, project_id)


def team_unit(task_id: int, sample_id: str | None, draft: Sample, team: Sequence[AnnotationInfo],
              builder: Builder) -> tuple[UnitAgreement, dict[str, Any]]:
    """The team's decisions and pairwise agreement on one task, and each annotator's path (for
    the adjudication queue)."""
    corrections = {info.annotator: builder(draft, info.result) for info in team}
    decisions = {email: (REJECT if correction.verdict == "reject" else ACCEPT)
                 for email, correction in corrections.items()}
    unit = UnitAgreement(task_id, sample_id, decisions)
    for first, second in combinations(sorted(corrections), 2):
        a, b = corrections[first], corrections[second]
        same = decisions[first] == decisions[second]
        if same and decisions[first] == ACCEPT and a.sample is not None and b.sample is not None:
            result = agreement(a.sample, b.sample)
            unit.pairs.append(PairAgreement((first, second), True, result.exact_path, result.call_agreement))
        else:
            unit.pairs.append(PairAgreement((first, second), same))
    paths: dict[str, Any] = {}
    for info in team:
        correction, sample = corrections[info.annotator], corrections[info.annotator].sample
        paths[info.annotator] = {
            "decision": decisions[info.annotator], "annotation_id": info.annotation_id,
            "query": last_user_text(sample) if sample is not None else None,
            "calls": [[call.model_dump(exclude_none=True) for call in step] for step in sample.calls] if sample else None,
            "problems": [problem.message for problem in correction.problems]}
    return unit, paths


def with_provenance(sample: Sample, annotation: AnnotationInfo, stage: str, data: dict[str, Any],
                    correction: Correction, project_id: int | None) -> Sample:
    provenance = sample.provenance.model_copy(update={
        "stage": stage, "annotator": annotation.annotator, "label_studio_task_id": annotation.task_id,
        "label_studio_annotation_id": annotation.annotation_id, "created_at": annotation.updated_at})
    meta = dict(sample.meta)
    meta["label_studio"] = {
        "project_id": project_id, "task_id": annotation.task_id, "annotation_id": annotation.annotation_id,
        "annotation_created_at": annotation.created_at, "annotation_updated_at": annotation.updated_at,
        "lead_time_s": annotation.lead_time, "draft_hash": data.get("draft_hash"), "verdict": correction.verdict,
        "flags": list(correction.flags), "notes": correction.notes}
    return sample.model_copy(update={"provenance": provenance, "meta": meta})


# ------------------------------------------------------------------------------------ export sources
def read_export_file(path: Path) -> list[dict[str, Any]]:
    """A Label Studio JSON export (a list of task objects), as downloaded from the UI or the API, or
    gzipped, as a list. A pull reads it as a stream instead (`annotate.exchange.export_stream.ExportTasks`)."""
    return list(ExportTasks(path))  # a malformed task among good ones is that task's reject (process_tasks)


def export_snapshot(connection: Connection, client: Any, project_id: int,
                    timeout: float = EXPORT_TIMEOUT_S) -> list[dict[str, Any]]:
    """Every task of the project with its annotations, as a list (a pull streams `download_snapshot`)."""
    return list(download_snapshot(connection, client, project_id, timeout))


def download_snapshot(connection: Connection, client: Any, project_id: int,
                      timeout: float = EXPORT_TIMEOUT_S) -> SpooledExport:
    """Every task of the project with its annotations. The synchronous export only returns annotated
    tasks; a snapshot returns all, so pending and deleted tasks can be told apart. The download is
    written to a temporary file chunk by chunk and read back one task at a time."""
    with server_errors(connection, "exporting the annotations"):
        export = client.projects.exports.create(id=project_id, title="fcbench pull")
        deadline = time.monotonic() + timeout
        while True:
            status = client.projects.exports.get(id=project_id, export_pk=export.id).status
            if status == "completed":
                break
            if status == "failed" or time.monotonic() > deadline:
                raise ServerError(f"Label Studio at {connection.url}: the export of project {project_id} "
                                  f"{'failed' if status == 'failed' else 'did not finish in time'}")
            time.sleep(0.1)
        spooled = SpooledExport(client.projects.exports.download(id=project_id, export_pk=export.id,
                                                                 export_type="JSON"),
                                f"the export of project {project_id} from {connection.url}")
        client.projects.exports.delete(id=project_id, export_pk=export.id)  # keep the server's media dir tidy
    return spooled


def user_emails(connection: Connection, client: Any) -> dict[int, str]:
    with server_errors(connection, "listing users"):
        return {int(user.id): user.email or user.username or f"user {user.id}" for user in client.users.list()}


# ------------------------------------------------------------------- one draft, several tasks
def _gold_content(sample: Sample) -> str:
    """What makes two gold samples the same gold: everything but where they came from."""
    record = sample_to_dict(sample)
    record.pop("provenance", None)
    record.pop("meta", None)
    return json.dumps(record, sort_keys=True, ensure_ascii=False)


def refuse_conflicting_gold(outcomes: Sequence[TaskOutcome], what: str = "draft") -> tuple[set[str], list[str]]:
    """Two tasks of one draft (a draft imported twice, two projects in one export) whose gold
    differs: each becomes a reject (`conflicting_gold`) naming the other tasks, and neither is
    kept, nor an earlier template of that draft (the pull cannot tell which is right; a lead keeps
    one task and pulls again). Tasks that agree stay gold (the latest is kept) and are mentioned.
    Returns the sample ids whose gold was refused, and the messages for the pull's report."""
    by_sample: dict[str, list[TaskOutcome]] = {}
    for outcome in outcomes:
        if outcome.status == "gold" and outcome.sample is not None and outcome.sample_id is not None:
            by_sample.setdefault(outcome.sample_id, []).append(outcome)
    refused: set[str] = set()
    messages: list[str] = []
    for sample_id, golds in by_sample.items():
        tasks = sorted({outcome.task_id for outcome in golds})
        if len(tasks) < 2:
            continue
        named = ", ".join(f"task {outcome.task_id}" + (f" (annotation {outcome.annotation.annotation_id} by "
                                                        f"{outcome.annotation.annotator})" if outcome.annotation else "")
                          for outcome in golds)
        if len({_gold_content(outcome.sample) for outcome in golds if outcome.sample is not None}) == 1:
            messages.append(f"{what} {sample_id}: {named} give the same gold; it is kept once")
            continue
        refused.add(sample_id)
        messages.append(f"{what} {sample_id}: {named} give different gold; none is kept")
        for outcome in golds:
            others = ", ".join(f"task {task}" for task in tasks if task != outcome.task_id)
            outcome.status = "rejected"
            outcome.problems = [Problem(ProblemCode.CONFLICTING_GOLD,
                                        f"{what} {sample_id} has different gold in this task and in {others}: none is "
                                        "kept; keep the right one (delete the other task, or its annotation) and pull again")]
            outcome.sample = None
            outcome.diff = None
    return refused, messages
