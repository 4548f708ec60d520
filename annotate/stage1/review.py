"""`build-dataset scenarios push|pull PIPELINE`: the scenarios stage1 sampled, reviewed in Label
Studio before any conversation is drafted (`conversation.review.enabled`).

Files under the build folder:
    scenarios.jsonl                  read by push: written by stage1 (which, with the review on,
                                     stops there until the scenarios are reviewed)
    scenarios.reviewed.jsonl         written by pull: one {"scenario", "review"} per reviewed
                                     scenario (accepted, edited, or rejected by the reviewer),
                                     in the order stage1 sampled them; stage1 drafts the accepted
                                     and edited ones
    scenarios.review.rejects.jsonl   written by pull: reviews that fail a check, with the raw work
    scenarios.review.summary.json    written by pull: counts and reasons
A scenario with no decision in this pull keeps the decision of an earlier pull (said in the
summary's messages); a reviewer who fails a check can be shown the problems (`--send-back`).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from annotate.exchange.pull import TaskOutcome, annotations_of
from annotate.exchange.push import PushSummary, push_tasks
from annotate.exchange.shared import PullReport, fetch_tasks, send_back_to_annotators
from annotate.studio.client import Connection, open_client, resolve_connection
from annotate.studio.label_configs import SCENARIO_REVIEW
from annotate.studio.server import StudioConfig
from annotate.tasks.problems import Problem, ProblemCode
from annotate.tasks.scenario_review import (SCENARIO_REVIEW_KIND, ScenarioReviewAnswer, review_scenario,
                                            sampled_scenario, scenario_review_task)
from fcbench.config import PipelineConfig
from fcbench.conversation import ReviewedScenario, Scenario
from fcbench.errors import UserError
from fcbench.jsonl import write_json, write_json_lines
from fcbench.stage import REVIEWED_SCENARIOS as REVIEWED, SCENARIOS, PipelineContext, PullSettings, PushSettings, StageSummary, pipeline_catalog, read_reviewed_scenarios

REVIEW_REJECTS = "scenarios.review.rejects.jsonl"
REVIEW_SUMMARY = "scenarios.review.summary.json"


def project_title(pipeline: PipelineConfig) -> str:
    settings = pipeline.conversation
    title = settings.review.project_title if settings is not None else None
    return title or f"{pipeline.name} scenario review"


def read_scenarios(path: Path) -> list[Scenario]:
    import json

    if not path.is_file():
        raise UserError(f"{path}: no such file (stage1 samples the scenarios: run `build-dataset stage1` first)")
    scenarios = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                scenarios.append(Scenario.model_validate(json.loads(line)))
            except ValueError as exc:
                raise UserError(f"{path}:{number}: not a scenario ({exc})") from None
    return scenarios


def run_scenario_push(pipeline: PipelineConfig, connection: Connection | None = None,
                      count: int | None = None) -> PushSummary:
    """Every sampled scenario (or the first `count`) as a review task; pushing twice adds nothing."""
    scenarios = read_scenarios(pipeline.build_dir / SCENARIOS)[:count]
    catalog = pipeline_catalog(pipeline) or []
    tasks = [scenario_review_task(scenario, [tool for tool in catalog if tool.name in scenario.apis])
             for scenario in scenarios]
    connection = connection or resolve_connection(StudioConfig())
    return push_tasks(connection, open_client(connection), project_title(pipeline), SCENARIO_REVIEW, tasks,
                      model_version="draft")


def run_scenario_pull(pipeline: PipelineConfig, from_export: Path | None = None, send_back: bool = False,
                      connection: Connection | None = None) -> PullReport:
    """The reviewers' decisions, checked, into scenarios.reviewed.jsonl."""
    fetched = fetch_tasks(project_title(pipeline), from_export, connection)
    catalog = {tool.name for tool in pipeline_catalog(pipeline) or []}
    max_turns = pipeline.conversation.max_turns if pipeline.conversation else 12
    outcomes: list[TaskOutcome] = []
    decided: dict[str, ReviewedScenario] = {}
    for position, task in enumerate(fetched.tasks):
        outcome, reviewed = _review_of(task, position, catalog, max_turns, fetched.users)
        if outcome is None:
            continue
        outcomes.append(outcome)
        if reviewed is not None:
            decided[reviewed.scenario.id] = reviewed
    if not outcomes:
        raise UserError(f"{fetched.source}: no scenario review task (kind {SCENARIO_REVIEW_KIND!r}); push the scenarios "
                        "with `build-dataset scenarios push`, or give the review project's export")
    report = _write(pipeline.build_dir, outcomes, decided, fetched.source)
    if send_back:
        send_back_to_annotators(fetched, outcomes, report)
    return report


def _review_of(task: Any, position: int, catalog: set[str], max_turns: int,
               users: dict[int, str]) -> tuple[TaskOutcome | None, ReviewedScenario | None]:
    data = task.get("data") if isinstance(task, dict) else None
    task_id = task.get("id") if isinstance(task, dict) else None
    if not isinstance(task_id, int) or not isinstance(data, dict):
        outcome = TaskOutcome(task_id if isinstance(task_id, int) else -(position + 1), None, "rejected", {})
        outcome.problems = [Problem(ProblemCode.MALFORMED_TASK, f"entry {position + 1} of the export is malformed: "
                                    "the task has no integer id or no data object")]
        return outcome, None
    if data.get("kind") != SCENARIO_REVIEW_KIND:
        return None, None
    outcome = TaskOutcome(task_id, data.get("sample_id"), "pending", data)
    annotations = annotations_of(task, users)
    submitted = sorted((info for info in annotations if not info.was_cancelled),
                       key=lambda info: (info.updated_at or "", info.annotation_id or 0), reverse=True)
    if not annotations:
        return outcome, None
    if not submitted:
        outcome.status, outcome.annotation = "cancelled", annotations[-1]
        outcome.problems = [Problem(ProblemCode.CANCELLED, "the reviewer skipped the scenario")]
        return outcome, None
    outcome.annotation = submitted[0]
    try:
        sampled = sampled_scenario(data)
    except ValueError as exc:
        outcome.status = "rejected"
        outcome.problems = [Problem(ProblemCode.MALFORMED_TASK, f"task {task_id} is malformed: {exc}")]
        return outcome, None
    answer = ScenarioReviewAnswer.from_result(submitted[0].result)
    result = review_scenario(sampled, answer, catalog, max_turns,
                             {"label_studio_task_id": task_id, "label_studio_annotation_id": submitted[0].annotation_id,
                              "annotator": submitted[0].annotator})
    if result.problems or result.reviewed is None:
        outcome.status, outcome.problems = "rejected", result.problems
        return outcome, None
    outcome.status = "reviewed"
    return outcome, result.reviewed


def _write(build_dir: Path, outcomes: Sequence[TaskOutcome], decided: dict[str, ReviewedScenario],
           source: str) -> PullReport:
    messages = []
    for earlier in read_reviewed_scenarios(build_dir / REVIEWED) or []:
        if earlier.scenario.id not in decided:
            decided[earlier.scenario.id] = earlier
            messages.append(f"scenario {earlier.scenario.id} has no review in this pull: the previous pull's is kept")
    order = {outcome.sample_id: index for index, outcome in enumerate(outcomes)}
    reviewed = sorted(decided.values(), key=lambda item: (order.get(item.scenario.id, len(order)), item.scenario.id))
    verdicts = Counter(item.review.verdict for item in reviewed)
    statuses = Counter(outcome.status for outcome in outcomes)
    report = PullReport(source, messages=messages)
    report.counts = {"tasks": len(outcomes), "accepted": verdicts["accept"], "edited": verdicts["edit"],
                     "rejected_by_reviewer": verdicts["reject"], "failed_checks": statuses["rejected"],
                     "cancelled": statuses["cancelled"], "pending": statuses["pending"],
                     "reviewed_written": len(reviewed), "kept_from_previous_pull": len(messages)}
    report.reasons = dict(sorted(Counter(problem.code.value for outcome in outcomes for problem in outcome.problems).items()))
    report.failures = [{"task_id": outcome.task_id, "id": outcome.sample_id,
                        "problems": [problem.message for problem in outcome.problems]}
                       for outcome in outcomes if outcome.status == "rejected"]
    build_dir.mkdir(parents=True, exist_ok=True)
    write_json_lines(build_dir / REVIEWED, (item.model_dump(mode="json") for item in reviewed))
    write_json_lines(build_dir / REVIEW_REJECTS, [outcome.reject_row() for outcome in outcomes
                                                  if outcome.status in ("rejected", "cancelled")])
    write_json(build_dir / REVIEW_SUMMARY, {"source": source, "counts": report.counts, "reasons": report.reasons,
                                            "messages": messages}, indent=2)
    report.outputs = {"reviewed": str(build_dir / REVIEWED), "rejects": str(build_dir / REVIEW_REJECTS),
                      "summary": str(build_dir / REVIEW_SUMMARY)}
    return report


# ------------------------------------------------------------------------- the stage contract
def push(ctx: PipelineContext, settings: PushSettings) -> StageSummary:
    pushed = run_scenario_push(ctx.config, count=settings.count)
    return StageSummary("scenarios push", dict(pushed.counts), report=pushed)


def pull(ctx: PipelineContext, settings: PullSettings) -> StageSummary:
    pulled = run_scenario_pull(ctx.config, from_export=settings.from_export, send_back=settings.send_back)
    return StageSummary("scenarios pull", pulled.counts, pulled.reasons, pulled.outputs, report=pulled)
