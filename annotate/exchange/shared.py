"""What the senior (stage2) and junior (stage3) annotation stages share, one floor below both:
reading canonical files, the pipeline's catalog and environment for the checks, fetching tasks
from the server or an export, checking them, sending broken ones back, and the pull report."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from annotate.tasks import render
from annotate.studio.client import Connection, open_client, resolve_connection, server_errors
from annotate.tasks.problems import Problem, ProblemCode
from annotate.exchange.export_stream import ExportTasks
from annotate.exchange.pull import TaskOutcome, download_snapshot, process_tasks, user_emails
from annotate.exchange.push import find_project, update_task_data
from annotate.review.live_check import verdict_of
from annotate.studio.rework import REWORK_MARKERS_FIELD, annotator_sessions, markers_of, server_task, sync_rework
from annotate.tasks.single import ANNOTATOR_FIELD, REWORK_FIELD, VERDICT_FIELD, ToolCatalog, draft_of
from fcbench.config import PipelineConfig
from fcbench.stage import pipeline_catalog
from fcbench.environments import Environment
from fcbench.errors import UserError
from fcbench.formats import Rejected, read_samples
from fcbench.sample import Sample, sample_to_dict


def read_canonical(path: Path, what: str) -> tuple[list[Sample], list[Rejected]]:
    if not path.is_file():
        raise UserError(f"{path}: no such file ({what})")
    items = list(read_samples(path, "fcbench"))
    return [item for item in items if isinstance(item, Sample)], [item for item in items if isinstance(item, Rejected)]


# ------------------------------------------------------------------------------------ stale drafts
SHOWN_DRAFT = ("messages", "tools", "calls")  # what an annotator saw of a draft (not provenance)
SHOWN_CONVERSATION = (*SHOWN_DRAFT, "meta")  # a conversation's scenario is in its meta


def draft_fingerprint(draft: Sample, shown: tuple[str, ...] = SHOWN_DRAFT) -> str:
    """The hash of what an annotator saw of a draft."""
    fields = sample_to_dict(draft)
    return hashlib.sha256(json.dumps({key: fields.get(key) for key in shown},
                                     sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def draft_fingerprints(drafts_file: Path, shown: tuple[str, ...] = SHOWN_DRAFT) -> dict[str, str] | None:
    """Id -> fingerprint of the current drafts; None without a drafts file (nothing to compare with)."""
    if not drafts_file.is_file():
        return None
    return {draft.id: draft_fingerprint(draft, shown) for draft in read_samples(drafts_file, "fcbench")
            if isinstance(draft, Sample)}


def refuse_stale_drafts(outcomes: Sequence[TaskOutcome], drafts_file: Path,
                        current: dict[str, str] | None = None, catalog: ToolCatalog | None = None,
                        shown: tuple[str, ...] = SHOWN_DRAFT) -> None:
    """Turn every gold outcome whose task's draft is not in the current drafts (by id and content)
    into a `stale_draft` reject. No drafts file at all: nothing to compare with, nothing refused.
    `current` (from `draft_fingerprints`) saves reading the file again; `catalog` unpacks the tools
    a task carries by hash; `shown` is what of a draft the fingerprint covers. A task whose draft
    cannot be rebuilt cannot be compared: refused too."""
    current = current if current is not None else draft_fingerprints(drafts_file, shown)
    if current is None:
        return
    for outcome in outcomes:
        if outcome.status != "gold":
            continue
        try:
            annotated = draft_of(outcome.task_data, catalog)
        except ValueError as exc:
            outcome.status, outcome.sample = "rejected", None
            outcome.problems = [Problem(ProblemCode.STALE_DRAFT, f"the task's draft cannot be rebuilt to compare it with "
                                                                 f"{drafts_file.name} ({exc}); push again")]
            continue
        if annotated is None:
            continue
        if annotated.id not in current:
            why = f"draft {annotated.id} is not in {drafts_file.name} (annotations of another stage1 run)"
        elif current[annotated.id] != draft_fingerprint(annotated, shown):
            why = f"draft {annotated.id} changed since it was pushed (another stage1 run)"
        else:
            continue
        outcome.status, outcome.sample = "rejected", None
        outcome.problems = [Problem(ProblemCode.STALE_DRAFT, f"{why}; push again, or pull with --allow-stale")]


# ------------------------------------------------------------------------------------------- push
def annotation_catalog(pipeline: PipelineConfig) -> ToolCatalog:
    """The pipeline's tool catalog for tasks (empty when it names none): tools identical to a
    catalog tool travel in tasks by hash."""
    return ToolCatalog(pipeline_catalog(pipeline) or [])


@dataclass
class PullReport:
    source: str
    counts: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, int] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)  # {task, sample, problems} per failing task
    outputs: dict[str, str] = field(default_factory=dict)
    qa: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "counts": self.counts, "reasons": self.reasons, "messages": self.messages,
                "failures": self.failures, "outputs": self.outputs, "qa": self.qa}


class LazyEnvironment:
    """The pipeline's environment, opened on first use and closed at the end."""

    def __init__(self, opener: Callable[[], Environment | None]) -> None:
        self._opener = opener
        self._environment: Environment | None = None
        self._opened = False

    def __call__(self) -> Environment | None:
        if not self._opened:
            self._opened = True
            self._environment = self._opener()
        return self._environment

    def close(self) -> None:
        if self._environment is not None:
            self._environment.close()


def pipeline_environment(pipeline: PipelineConfig, samples: Callable[[], Iterable[Sample]]) -> LazyEnvironment:
    """`samples` gives the drafts whose tools the environment offers when the pipeline names no
    catalog; it is iterated once and only then (a pull of long-response tasks never holds them)."""
    def opener() -> Environment | None:
        if pipeline.environment is None:
            return None  # no environment: kept responses are checked for consistency instead
        from fcbench.environments.from_config import open_environment

        return open_environment(pipeline, samples())

    return LazyEnvironment(opener)


@dataclass
class FetchedTasks:
    """The tasks of a project, from the server or from an export file, and what a send-back needs.
    `tasks` is an export read as a stream (`annotate.exchange.export_stream`): it can be iterated again,
    and never holds every task at once."""

    tasks: Iterable[Any]
    source: str
    connection: Connection | None = None
    client: Any = None
    project_id: int | None = None
    users: dict[int, str] = field(default_factory=dict)


def fetch_tasks(title: str, from_export: Path | None, connection: Connection | None) -> FetchedTasks:
    if from_export is not None:
        return FetchedTasks(ExportTasks(from_export), str(from_export), connection)
    connection = connection or resolve_connection()
    client = open_client(connection)
    project_id = existing_project_id(connection, client, title)
    return FetchedTasks(download_snapshot(connection, client, project_id), f"{connection.url} project {project_id}",
                        connection, client, project_id, user_emails(connection, client))


def check_tasks(pipeline: PipelineConfig, fetched: FetchedTasks, kind: str, builder: Any, stage: str,
                on_outcome: Callable[[TaskOutcome], None] | None = None) -> list[TaskOutcome]:
    """Convert and check every task's annotation, re-executing paths in the pipeline's environment;
    `on_outcome` as in `process_tasks`."""
    catalog = annotation_catalog(pipeline)
    environment = pipeline_environment(pipeline, lambda: iter_drafts_in_tasks(fetched.tasks, catalog))
    try:
        return process_tasks(fetched.tasks, kind, builder, environment, fetched.users, stage, fetched.project_id,
                             catalog, on_outcome)
    finally:
        environment.close()


# What a task carries only to be shown (and to rebuild its draft, done once the outcome is made and
# checked against the current drafts): dropped from outcomes kept for the whole pull, so its memory
# does not hold every task's responses twice. Kept when tasks are sent back (their data is written
# back to the server whole).
DISPLAY_ONLY_FIELDS = ("draft", "tools", "draft_html", "entry_options", "ref_options", "form_slots")


def drop_display_fields(outcome: TaskOutcome) -> None:
    outcome.task_data = {key: value for key, value in outcome.task_data.items() if key not in DISPLAY_ONLY_FIELDS}


def send_back_to_annotators(fetched: FetchedTasks, outcomes: Sequence[TaskOutcome], report: "PullReport") -> None:
    """Show each failing annotation's problems to its annotator (pulling from a file still needs the server)."""
    connection = fetched.connection or resolve_connection()
    client = fetched.client or open_client(connection)
    sent = send_back_feedback(connection, client, outcomes)
    report.counts["sent_back"], report.counts["feedback_cleared"] = sent.sent, sent.cleared
    report.messages += [f"task {task_id}: sent back through the task list only (no API token here for "
                        f"{annotator} to put it back in their Label All Tasks queue)" for task_id, annotator in sent.list_only]


def existing_project_id(connection: Connection, client: Any, title: str) -> int:
    with server_errors(connection, "finding the project"):
        project = find_project(client, title)
    if project is None:
        raise UserError(f"Label Studio at {connection.url} has no project titled {title!r}; run stage2 push first")
    return int(project.id)


def drafts_in_tasks(tasks: Iterable[Any], catalog: ToolCatalog | None = None) -> list[Sample]:
    return list(iter_drafts_in_tasks(tasks, catalog))


def iter_drafts_in_tasks(tasks: Iterable[Any], catalog: ToolCatalog | None = None) -> Iterator[Sample]:
    for task in tasks:
        data = task.get("data") if isinstance(task, dict) else None
        if not isinstance(data, dict):
            continue  # a malformed task: process_tasks reports it
        try:
            draft = draft_of(data, catalog)
        except ValueError:
            continue
        if draft is not None:
            yield draft


@dataclass
class SentBack:
    sent: int = 0
    cleared: int = 0
    list_only: list[tuple[int, str]] = field(default_factory=list)  # (task, annotator) not requeued


def send_back_feedback(connection: Connection, client: Any, outcomes: Sequence[TaskOutcome]) -> SentBack:
    """Show each failing task's problems at the top of its labeling page (the open-source server has
    no comments or review API, both answer 404: the task data's `feedback_html` is what the config
    displays), clear the note on tasks with nothing left to fix, fill the verdict and rework columns
    of the task list, and send each task that needs fixing back to the annotator who submitted it,
    opening on their own last annotation (`annotate.studio.rework`; released once it passes)."""
    done = SentBack()
    as_user = annotator_sessions(connection, client)
    with server_errors(connection, "sending tasks back"):
        for outcome in outcomes:
            data = dict(outcome.task_data)
            if outcome.needs_fixing:
                when = outcome.annotation.updated_at if outcome.annotation else ""
                data["feedback_html"] = render.feedback_html([problem.message for problem in outcome.problems
                                                              if problem.code is not ProblemCode.CANCELLED], when or "")
                done.sent += 1
            elif data.get("feedback_html"):  # passes now, or the annotator rejected or skipped it
                data["feedback_html"] = ""
                done.cleared += 1
            data.update(_list_columns(outcome))
            annotation = outcome.annotation
            rework = ({annotation.user_id: annotation.annotation_id} if outcome.needs_fixing and annotation is not None
                      and annotation.user_id is not None and annotation.annotation_id is not None else {})
            if rework or markers_of(data):
                task = server_task(client, outcome.task_id)
                if task is not None:
                    change = sync_rework(client, task, rework, as_user)
                    data[REWORK_MARKERS_FIELD] = change.markers
                    if change.marked_for and annotation is not None:
                        done.list_only.append((outcome.task_id, annotation.annotator))
            if data != outcome.task_data:
                update_task_data(client, outcome.task_id, data)
    return done


def _list_columns(outcome: TaskOutcome) -> dict[str, str]:
    """The task list's verdict, rework and annotator columns from pull's outcome (the webhook
    receiver writes the same words from the same checks)."""
    return {VERDICT_FIELD: verdict_of(outcome.status, [problem.code.value for problem in outcome.problems]),
            REWORK_FIELD: "yes" if outcome.needs_fixing else ("no" if outcome.annotation is not None else ""),
            ANNOTATOR_FIELD: outcome.annotation.annotator if outcome.annotation is not None else ""}
