"""`build-dataset stage2 push|pull PIPELINE` for `kind: conversation` pipelines: authoring and review
of the drafted conversations in Label Studio (label_config/stage2_conversation.xml).

Files under `<dataset_dir>/build/`:
    drafts.jsonl              read: stage1's conversations
    templates.jsonl           written by pull: the gold conversations
    templates.rejects.jsonl   written by pull: {"id", "reason", "problems", task/annotation ids, raw result}
    stage2.summary.json       written by pull: {"counts", "reasons", ...}
Nothing is lost: a conversation that fails a check goes to the rejects file with the annotator's
raw result, and `--send-back` shows the problems on the task; a gold conversation from an earlier
pull is kept when this pull has no newer gold for it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Callable, Sequence

from annotate.studio.client import Connection, open_client, resolve_connection
from annotate.studio.label_configs import CONVERSATION
from annotate.tasks.conversation import (CONVERSATION_KIND, ConversationAnswer, build_conversation,
                                         conversation_qa, conversation_task)
from annotate.exchange.files import sample_lines, write_lines
from annotate.tasks.problems import Problem, ProblemCode
from annotate.exchange.pull import TaskOutcome, open_task, with_provenance
from annotate.exchange.shared import (SHOWN_CONVERSATION, PullReport, annotation_catalog, fetch_tasks, pipeline_environment,
                              read_canonical, refuse_stale_drafts, send_back_to_annotators)
from annotate.exchange.push import PushSummary, push_tasks
from annotate.studio.server import StudioConfig
from annotate.tasks.single import draft_of
from fcbench.config import PipelineConfig
from fcbench.stage import DRAFTS, TEMPLATES
from fcbench.environments import Environment
from fcbench.formats import read_samples
from fcbench.jsonl import write_json, write_json_lines
from fcbench.sample import Sample
from fcbench.stage import PipelineContext, PullSettings, PushSettings, StageSummary, annotation_export, existing_file
from fcbench.errors import UserError


def project_title(pipeline: PipelineConfig) -> str:
    return pipeline.stages.stage2.project_title or f"{pipeline.name} stage2 conversations"


def _previous(path: Path) -> list[Sample]:
    if not path.is_file():
        return []
    return [item for item in read_samples(path, "fcbench") if isinstance(item, Sample)]


def run_conversation_push(pipeline: PipelineConfig, connection: Connection | None = None,
                          count: int | None = None) -> PushSummary:
    build = pipeline.build_dir
    drafts, _ = read_canonical(build / DRAFTS, "stage1 writes the conversations: run stage1 first")
    done = {sample.id for sample in _previous(build / TEMPLATES)}
    pending = [draft for draft in drafts if draft.id not in done][:count or pipeline.stages.stage2.select]
    catalog = annotation_catalog(pipeline)
    tasks = [conversation_task(draft, catalog) for draft in pending]
    connection = connection or resolve_connection(StudioConfig())
    summary = push_tasks(connection, open_client(connection), project_title(pipeline), CONVERSATION, tasks,
                         model_version="draft")
    summary.counts["already_gold"] = len(done)
    return summary


def run_conversation_pull(pipeline: PipelineConfig, from_export: Path | None = None, send_back: bool = False,
                          connection: Connection | None = None, allow_stale: bool = False) -> PullReport:
    """Gold conversations from the annotators' work. An annotation made on a conversation that is
    not the current drafts.jsonl's (same id, same content) is refused as `stale_draft` unless
    `allow_stale`: annotations of another stage1 run must not become this run's gold."""
    fetched = fetch_tasks(project_title(pipeline), from_export, connection)
    catalog = annotation_catalog(pipeline)
    drafts = []
    for task in fetched.tasks:
        data = task.get("data") if isinstance(task, dict) else None
        if isinstance(data, dict) and data.get("kind") == CONVERSATION_KIND:
            try:
                draft = draft_of(data, catalog)
            except ValueError:
                continue
            if draft is not None:
                drafts.append(draft)
    environment = pipeline_environment(pipeline, lambda: drafts)
    try:
        outcomes = process_conversation_tasks(fetched.tasks, environment, fetched.users, fetched.project_id, catalog)
    finally:
        environment.close()
    if not allow_stale:
        refuse_stale_drafts(outcomes, pipeline.build_dir / DRAFTS, catalog=catalog, shown=SHOWN_CONVERSATION)
    report = write_outputs(pipeline.build_dir, outcomes, fetched.source)
    if send_back:
        send_back_to_annotators(fetched, outcomes, report)
    return report


def process_conversation_tasks(tasks: Sequence[Any], environment: Callable[[], Environment | None],
                               users: dict[int, str] | None = None, project_id: int | None = None,
                               catalog: Any = None) -> list[TaskOutcome]:
    """Every conversation task turned into an outcome: gold, rejected (with every problem), pending
    (no annotation yet) or cancelled (skipped). A malformed task is that task's reject."""
    outcomes = []
    for position, task in enumerate(tasks):
        data = task.get("data") if isinstance(task, dict) else None
        task_id = task.get("id") if isinstance(task, dict) else None
        if not isinstance(task_id, int) or not isinstance(data, dict):
            outcome = TaskOutcome(task_id if isinstance(task_id, int) else -(position + 1), None, "rejected", {})
            outcome.problems = [Problem(ProblemCode.MALFORMED_TASK, f"entry {position + 1} of the export is malformed: "
                                        "the task has no integer id or no data object")]
            outcomes.append(outcome)
            continue
        if data.get("kind") != CONVERSATION_KIND:
            continue
        try:
            outcomes.append(_process(task, data, environment, users or {}, project_id, catalog))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            outcome = TaskOutcome(task_id, data.get("sample_id"), "rejected", data)
            outcome.problems = [Problem(ProblemCode.MALFORMED_TASK, f"task {task_id} is malformed: {type(exc).__name__}: {exc}")]
            outcomes.append(outcome)
    return outcomes


def _process(task: dict[str, Any], data: dict[str, Any], environment: Callable[[], Environment | None],
             users: dict[int, str], project_id: int | None, catalog: Any) -> TaskOutcome:
    outcome, draft, submitted = open_task(task, data, users, catalog, what="conversation")
    if draft is None:
        return outcome
    correction = build_conversation(draft, ConversationAnswer.from_result(submitted[0].result), environment)
    if correction.problems or correction.sample is None:
        outcome.status = "rejected"
        outcome.problems = correction.problems
        return outcome
    outcome.status = "gold"
    outcome.correction = correction  # what the annotator changed, for stage2.qa.json
    project = task.get("project") if isinstance(task.get("project"), int) else project_id
    outcome.sample = with_provenance(correction.sample, submitted[0], "stage2", data, correction, project)
    return outcome


def write_outputs(build_dir: Path, outcomes: Sequence[TaskOutcome], source: str) -> PullReport:
    """templates.jsonl (this pull's gold, then earlier gold this pull has none for), the rejects
    with the raw annotation, and the summary."""
    latest: dict[str, TaskOutcome] = {}
    for outcome in outcomes:
        if outcome.status == "gold" and outcome.sample_id is not None:
            current = latest.get(outcome.sample_id)
            updated = outcome.annotation.updated_at if outcome.annotation else ""
            if current is None or (updated or "") > ((current.annotation.updated_at if current.annotation else "") or ""):
                latest[outcome.sample_id] = outcome
    withdrawn = {outcome.sample_id for outcome in outcomes
                 if any(problem.code is ProblemCode.REJECTED_BY_ANNOTATOR for problem in outcome.problems)}
    templates = [outcome.sample for outcome in latest.values() if outcome.sample is not None]
    messages = []
    for sample in _previous(build_dir / TEMPLATES):
        if sample.id not in latest and sample.id not in withdrawn:
            templates.append(sample)
            messages.append(f"conversation {sample.id} has no gold in this pull: the previous pull's is kept")
    order = {outcome.sample_id: index for index, outcome in enumerate(outcomes)}
    templates.sort(key=lambda sample: (order.get(sample.id, len(order)), sample.id))
    statuses = Counter(outcome.status for outcome in outcomes)
    report = PullReport(source, messages=messages)
    report.counts = {"tasks": len(outcomes), "gold": statuses["gold"], "rejected": statuses["rejected"],
                     "cancelled": statuses["cancelled"], "pending": statuses["pending"],
                     "templates_written": len(templates), "kept_from_previous_pull": len(messages)}
    report.reasons = dict(sorted(Counter(problem.code.value for outcome in outcomes for problem in outcome.problems).items()))
    report.failures = [{"task_id": outcome.task_id, "id": outcome.sample_id,
                        "problems": [problem.message for problem in outcome.problems]}
                       for outcome in outcomes if outcome.status == "rejected"]
    rejects_path = build_dir / "templates.rejects.jsonl"
    summary_path = build_dir / "stage2.summary.json"
    qa_path = build_dir / "stage2.qa.json"
    golds = [outcome for outcome in latest.values() if outcome.sample is not None and outcome.correction is not None]
    report.qa = conversation_qa([(outcome.correction.draft, outcome.sample, outcome.correction.verdict,
                                  outcome.correction.complexities) for outcome in golds])
    write_json(qa_path, report.qa, indent=2)
    write_lines(build_dir / TEMPLATES, sample_lines(templates))
    write_json_lines(rejects_path, [outcome.reject_row() for outcome in outcomes
                                    if outcome.status in ("rejected", "cancelled")])
    write_json(summary_path, {"source": source, "kind": "conversation", "counts": report.counts,
                              "reasons": report.reasons, "messages": messages}, indent=2)
    report.outputs = {"templates": str(build_dir / TEMPLATES), "rejects": str(rejects_path), "summary": str(summary_path),
                      "qa": str(qa_path)}
    return report


# ------------------------------------------------------------------ the stage contract (fcbench.stage)
def run_from_export(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    """`run`'s stage2: the authored conversations read from the Label Studio export the pipeline names."""
    export = existing_file(annotation_export(ctx.config), "or: stage2 push, annotate, stage2 pull, then the later stages")
    pulled = run_conversation_pull(ctx.config, from_export=export)
    return StageSummary("stage2", pulled.counts, pulled.reasons, pulled.outputs, {"source": pulled.source}, report=pulled)


def push(ctx: PipelineContext, settings: PushSettings) -> StageSummary:
    if settings.annotators:
        raise UserError("stage2 push --annotators is not available for conversation pipelines yet")
    pushed = run_conversation_push(ctx.config, count=settings.count)
    return StageSummary("stage2 push", dict(pushed.counts), report=pushed)


def pull(ctx: PipelineContext, settings: PullSettings) -> StageSummary:
    pulled = run_conversation_pull(ctx.config, from_export=settings.from_export, send_back=settings.send_back,
                                   allow_stale=settings.allow_stale)
    return StageSummary("stage2 pull", pulled.counts, pulled.reasons, pulled.outputs, report=pulled)
