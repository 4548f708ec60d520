"""`build-dataset stage2 push|pull PIPELINE`: senior annotation of the drafts in Label Studio.

Files under `<dataset_dir>/build/`:
    drafts.jsonl              read: stage1's output
    templates.jsonl           written by pull: the gold samples
    templates.rejects.jsonl   written by pull: {"id", "reason", "problems", task/annotation ids, raw result}
    stage2.summary.json       written by pull: {"counts", "reasons", ...}
    stage2.qa.json            written by pull: what annotators fixed, and their agreement
A template from an earlier pull is kept when its task has no newer gold (deleted in the UI,
reopened and still being fixed): pulling never loses a gold sample.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from pydantic import ValidationError

from annotate.review.agreement import summarise_agreement
from annotate.tasks.ambiguity import find_ambiguities
from annotate.review.ambiguity_quality import WarningQuality, removed_ambiguities
from annotate.studio.client import Connection, open_client, resolve_connection, server_errors
from annotate.tasks.forms import FormLayout, form_xml, formable_tools, slots_for_longest
from annotate.studio.label_configs import SENIOR
from annotate.exchange.files import sample_lines, write_lines
from annotate.tasks.problems import ProblemCode
from annotate.exchange.pull import (TaskOutcome, senior_builder)
from annotate.exchange.push import PushSummary, push_tasks
from annotate.review.qa import summarise
from annotate.tasks.select import DraftSummary, draft_summary, select_summaries
from annotate.studio.server import StudioConfig
from annotate.exchange.shared import (PullReport, check_tasks, draft_fingerprints, drop_display_fields, fetch_tasks,
                              annotation_catalog,
                              refuse_stale_drafts, send_back_to_annotators)
from annotate.tasks.single import DEFAULT_MODEL_VERSION, STAGE2_KIND, senior_task
from fcbench.stage import DRAFTS, TEMPLATES
from fcbench.config import PipelineConfig
from fcbench.formats import read_samples
from fcbench.errors import UserError
from fcbench.jsonl import iter_json_lines, read_json_line_at, write_json, write_json_lines
from fcbench.sample import Sample, Tool, sample_from_dict
from fcbench.stage import PipelineContext, PullSettings, PushSettings, StageSummary, annotation_export, existing_file


@dataclass(frozen=True)
class Stage2Files:
    drafts: Path
    templates: Path
    rejects: Path
    summary: Path
    qa: Path
    adjudication: Path

    @classmethod
    def in_dir(cls, build_dir: Path) -> "Stage2Files":
        return cls(build_dir / DRAFTS, build_dir / TEMPLATES, build_dir / "templates.rejects.jsonl",
                   build_dir / "stage2.summary.json", build_dir / "stage2.qa.json",
                   build_dir / "stage2.adjudication.jsonl")


def project_title(pipeline: PipelineConfig) -> str:
    return pipeline.stages.stage2.project_title or f"{pipeline.name} stage2"


def run_stage2_push(pipeline: PipelineConfig, connection: Connection | None = None,
                    count: int | None = None, annotators: int = 0, overlap: int = 1,
                    studio: StudioConfig | None = None) -> PushSummary:
    """Drafts are read once for an index (what selection and the label config need, not the
    responses), then each picked draft is read back from its line, made a task and streamed to
    `push_tasks`: memory holds one import batch, not every draft and task (1,000 long-response
    drafts are ~100 MB of JSONL and ~330 MB of task JSON)."""
    files = Stage2Files.in_dir(pipeline.build_dir)
    index = index_drafts(files.drafts, "stage1 writes the drafts: run stage1 first")
    done = _previous_ids(files.templates)  # already gold: never shown again
    pending = [summary for summary in index.summaries if summary.id not in done]
    selected = select_summaries(pending, count or pipeline.stages.stage2.select)
    catalog = annotation_catalog(pipeline)
    layout = FormLayout(slots_for_longest(index.longest), formable_tools(pipeline_tools(pipeline, index.tools)))
    studio = studio or StudioConfig()
    connection = connection or resolve_connection(studio)
    client = open_client(connection)
    team: dict[str, Any] = {}
    assign: Callable[[dict[str, Any]], None] = lambda task: None  # noqa: E731
    if annotators:  # a team: accounts first, then each task assigned to `overlap` of them
        from annotate.studio.team import assign_in_task, assign_tasks, ensure_annotators

        with server_errors(connection, "creating annotator accounts"):
            members = ensure_annotators(studio, connection.url, client, annotators)
        emails, user_ids = [member.email for member in members], {member.email: member.user_id for member in members}
        load = {email: 0 for email in emails}
        assign_tasks([], emails, overlap, pipeline.seed)  # a bad --overlap fails before any task is built

        def assign(task: dict[str, Any]) -> None:
            for email in assign_in_task(task, emails, overlap, pipeline.seed, user_ids):
                load[email] += 1

        team = {"annotators": annotators, "overlap": overlap, "tasks_per_annotator": load,
                "credentials": str(studio.credentials_file)}

    def tasks() -> Iterator[dict[str, Any]]:
        for summary in selected:
            task = senior_task(index.load(summary), catalog=catalog, form=layout)
            assign(task)
            yield task

    summary = push_tasks(connection, client, project_title(pipeline), SENIOR, tasks(), model_version=DEFAULT_MODEL_VERSION,
                         forms=form_xml(layout))
    summary.counts["already_gold"] = len(done)
    summary.team = team
    return summary


@dataclass(frozen=True)
class DraftIndex:
    """A drafts file read once: a summary of each good draft (its `position` is the line's offset),
    the longest path and the tools the drafts carry; `load` reads one draft back."""

    path: Path
    summaries: list[DraftSummary]
    longest: int
    tools: list[Tool]

    def load(self, summary: DraftSummary) -> Sample:
        return sample_from_dict(read_json_line_at(self.path, summary.position))


def index_drafts(path: Path, what: str) -> DraftIndex:
    """The drafts file's index; lines that are not samples are left out, as `read_canonical` does."""
    if not path.is_file():
        raise UserError(f"{path}: no such file ({what})")
    summaries: list[DraftSummary] = []
    tools: dict[str, Tool] = {}
    longest = 0
    for line in iter_json_lines(path):
        if line.error:
            continue
        try:
            draft = sample_from_dict(line.value)
        except ValidationError:
            continue
        summaries.append(draft_summary(draft, line.offset))
        longest = max(longest, len(draft.all_calls()))
        for tool in draft.tools:
            tools.setdefault(tool.name, tool)
    return DraftIndex(path, summaries, longest, list(tools.values()))


def _previous_ids(path: Path) -> set[str]:
    if not path.is_file():
        return set()
    return {item.id for item in read_samples(path, "fcbench") if isinstance(item, Sample)}


def pipeline_tools(pipeline: PipelineConfig, draft_tools: Iterable[Tool]) -> list[Tool]:
    """The tools the forms offer: the pipeline's catalog, else every tool the drafts carry."""
    catalog = annotation_catalog(pipeline)
    if catalog.by_sha:
        return sorted(catalog.by_sha.values(), key=lambda tool: tool.name)
    tools: dict[str, Tool] = {}
    for tool in draft_tools:
        tools.setdefault(tool.name, tool)
    return sorted(tools.values(), key=lambda tool: tool.name)


# ------------------------------------------------------------------------------------------- pull
def run_stage2_pull(pipeline: PipelineConfig, from_export: Path | None = None, send_back: bool = False,
                    connection: Connection | None = None, allow_stale: bool = False) -> PullReport:
    """Gold templates from the annotators' work. An annotation made on a draft that is not the
    current drafts.jsonl's (same id, same content) is refused as `stale_draft` unless `allow_stale`:
    annotations of another stage1 run must not become this run's gold."""
    fetched = fetch_tasks(project_title(pipeline), from_export, connection)
    files = Stage2Files.in_dir(pipeline.build_dir)
    catalog = annotation_catalog(pipeline)
    current = None if allow_stale else draft_fingerprints(files.drafts)

    def settle(outcome: TaskOutcome) -> None:
        """Each outcome as it is made (the export is streamed): refused if stale, then only what
        the rest of the pull needs is kept."""
        if current is not None:
            refuse_stale_drafts([outcome], files.drafts, current, catalog=catalog)
        if not send_back:
            drop_display_fields(outcome)

    outcomes = check_tasks(pipeline, fetched, STAGE2_KIND, senior_builder, "stage2", on_outcome=settle)
    report = write_pull_outputs(files, outcomes, fetched.source)
    if send_back:
        send_back_to_annotators(fetched, outcomes, report)
    return report


def _iter_previous(path: Path) -> Iterator[Sample]:
    if path.is_file():
        yield from (item for item in read_samples(path, "fcbench") if isinstance(item, Sample))


def merge_templates(outcomes: Sequence[TaskOutcome], previous: Iterable[Sample]) -> tuple[list[Sample], list[str]]:
    """This pull's gold samples (the latest annotation per sample id), then every earlier template
    this pull has no gold for (its task deleted, or reopened and not fixed yet), unless the
    annotator has since rejected the draft."""
    latest: dict[str, TaskOutcome] = {}
    for outcome in outcomes:
        if outcome.status == "gold" and outcome.sample_id is not None:
            current = latest.get(outcome.sample_id)
            if current is None or _updated(outcome) > _updated(current):
                latest[outcome.sample_id] = outcome
    present_tasks = {outcome.task_id for outcome in outcomes}
    withdrawn = {outcome.sample_id for outcome in outcomes
                 if any(problem.code is ProblemCode.REJECTED_BY_ANNOTATOR for problem in outcome.problems)}
    templates = [outcome.sample for outcome in outcomes
                 if outcome.sample is not None and latest.get(outcome.sample_id or "") is outcome]
    messages = []
    for sample in previous:
        if sample.id in latest or sample.id in withdrawn:
            continue
        templates.append(sample)
        task_id = sample.provenance.label_studio_task_id
        if task_id is not None and task_id not in present_tasks:
            messages.append(f"task {task_id} of sample {sample.id} is no longer in the project (deleted in the UI?): "
                            "its template from the previous pull is kept")
        else:
            messages.append(f"sample {sample.id} has no gold in this pull: its template from the previous pull is kept")
    return templates, messages


def _updated(outcome: TaskOutcome) -> str:
    return (outcome.annotation.updated_at or "") if outcome.annotation else ""


def write_pull_outputs(files: Stage2Files, outcomes: Sequence[TaskOutcome], source: str) -> PullReport:
    # the previous templates are streamed: only those this pull has no gold for are kept
    templates, messages = merge_templates(outcomes, _iter_previous(files.templates))
    rejects = [outcome.reject_row() for outcome in outcomes if outcome.status in ("rejected", "cancelled")]
    report = PullReport(source, messages=messages)
    statuses = Counter(outcome.status for outcome in outcomes)
    report.counts = {"tasks": len(outcomes), "gold": statuses["gold"], "rejected": statuses["rejected"],
                     "cancelled": statuses["cancelled"], "pending": statuses["pending"],
                     "templates_written": len(templates), "kept_from_previous_pull": len(messages)}
    if statuses["adjudication"] or any(outcome.team for outcome in outcomes):
        report.counts["adjudication"] = statuses["adjudication"]
    report.reasons = dict(sorted(Counter(problem.code.value for outcome in outcomes
                                         for problem in outcome.problems).items()))
    report.failures = [{"task_id": outcome.task_id, "id": outcome.sample_id,
                        "problems": [problem.message for problem in outcome.problems]}
                       for outcome in outcomes if outcome.status == "rejected"]
    report.qa = qa_report(outcomes)
    write_lines(files.templates, sample_lines(templates))
    write_json_lines(files.rejects, rejects)
    write_json(files.qa, report.qa, indent=2)
    write_json_lines(files.adjudication, adjudication_rows(outcomes))
    summary: dict[str, Any] = {"source": source, "counts": report.counts, "reasons": report.reasons,
                               "messages": messages}
    if "team_agreement" in report.qa["summary"]:
        summary["team_agreement"] = report.qa["summary"]["team_agreement"]
    write_json(files.summary, summary, indent=2)
    report.outputs = {"templates": str(files.templates), "rejects": str(files.rejects), "qa": str(files.qa),
                      "summary": str(files.summary), "adjudication": str(files.adjudication)}
    return report


def qa_report(outcomes: Sequence[TaskOutcome]) -> dict[str, Any]:
    golds = [outcome for outcome in outcomes if outcome.diff is not None]
    agreements = [item for outcome in outcomes for item in outcome.agreements]
    samples = []
    warnings = WarningQuality()
    for outcome in golds:
        assert outcome.diff is not None and outcome.annotation is not None
        row = outcome.diff.as_dict()
        row.update({"label_studio_task_id": outcome.task_id, "annotator": outcome.annotation.annotator,
                    "flags_ticked": list(outcome.correction.flags) if outcome.correction else [],
                    "notes": outcome.notes})
        if outcome.correction is not None and outcome.sample is not None:
            row.update(_warnings_against_gold(outcome, warnings))
        samples.append(row)
    agreement_rows = [{"label_studio_task_id": outcome.task_id, "id": outcome.sample_id,
                       "annotators": [outcome.annotation.annotator if outcome.annotation else None, other.annotator],
                       "call_agreement": round(result.call_agreement, 4), "exact_path": result.exact_path,
                       "same_query": result.same_query}
                      for outcome in outcomes for other, result in outcome.agreements]
    summary = summarise([outcome.diff for outcome in golds if outcome.diff is not None],
                        [list(outcome.correction.flags) for outcome in golds if outcome.correction],
                        [result for _, result in agreements])
    # the warnings of today's `find_ambiguities` on each draft vs what disambiguation removed in its gold
    summary["ambiguity_warnings"] = warnings.as_dict()
    units = [outcome.team for outcome in outcomes if outcome.team is not None]
    if units:  # a team pushed with --annotators: agreement by the team's own measures
        summary["team_agreement"] = summarise_agreement(units)
    return {"summary": summary, "samples": samples, "agreements": agreement_rows}


def _warnings_against_gold(outcome: TaskOutcome, quality: WarningQuality) -> dict[str, Any]:
    correction = outcome.correction
    assert correction is not None and outcome.sample is not None
    flags = find_ambiguities(correction.draft)
    removed = removed_ambiguities(correction.draft, outcome.sample, correction.deletions, correction.dropped_tools)
    quality.add(outcome.sample_id or str(outcome.task_id), flags, removed)
    return {"ambiguity_warnings": [flag.key for flag in flags],
            "ambiguities_removed": [{"key": item.key, "reason": item.reason} for item in removed]}


def adjudication_rows(outcomes: Sequence[TaskOutcome]) -> list[dict[str, Any]]:
    """The adjudication queue: each disputed task with every annotator's decision and path, so an
    adjudicator sees what differs (they settle it by annotating the task themselves)."""
    rows = []
    for outcome in outcomes:
        if outcome.status != "adjudication" or outcome.team is None:
            continue
        rows.append({"label_studio_task_id": outcome.task_id, "id": outcome.sample_id,
                     "reason": outcome.team.reason(), "annotations": outcome.team_paths,
                     "pairs": [{"annotators": list(pair.annotators), "same_decision": pair.same_decision,
                                "exact_path": pair.exact_path, "call_agreement": pair.call_agreement}
                               for pair in outcome.team.pairs]})
    return rows


# -------------------------------------------------------------------------------------- send back


# ------------------------------------------------------------------ the stage contract (fcbench.stage)
def run_from_export(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    """`run`'s stage2: the annotators' work read from the Label Studio export the pipeline names."""
    export = existing_file(annotation_export(ctx.config), "or: stage2 push, annotate, stage2 pull, then the later stages")
    pulled = run_stage2_pull(ctx.config, from_export=export)
    return StageSummary("stage2", pulled.counts, pulled.reasons, pulled.outputs, {"source": pulled.source}, report=pulled)


def push(ctx: PipelineContext, settings: PushSettings) -> StageSummary:
    pushed = run_stage2_push(ctx.config, count=settings.count, annotators=settings.annotators, overlap=settings.overlap)
    return StageSummary("stage2 push", dict(pushed.counts), report=pushed)


def pull(ctx: PipelineContext, settings: PullSettings) -> StageSummary:
    pulled = run_stage2_pull(ctx.config, from_export=settings.from_export, send_back=settings.send_back,
                             allow_stale=settings.allow_stale)
    return StageSummary("stage2 pull", pulled.counts, pulled.reasons, pulled.outputs, report=pulled)
