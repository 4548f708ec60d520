"""`build-dataset stage3 push|pull PIPELINE --annotators`: junior annotators fill the arguments of
generalized query variants along their template's fixed path.

Which candidates need filling (rows of `<build>/candidates.jsonl`): those stage3 marked with
`meta.stage3.needs_arguments: true`, and any whose path has an argument set to null or lacks a
required argument of its tool. Pull writes `candidates.filled.jsonl`: stage3's candidates with the
filled rows replaced (`meta.stage3.needs_arguments` false, `filled_by: "annotators"`; other rows
exactly as they were; stage3's own file is never edited), which the filter reads when
`stages.stage3.fill` is `annotators`. Failures are listed in `junior.rejects.jsonl` with
`junior.summary.json`. The filled path gets the same checks as stage2's gold paths.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotate.studio.client import Connection, open_client, resolve_connection
from annotate.studio.label_configs import JUNIOR
from annotate.exchange.files import sample_lines, write_lines
from annotate.exchange.pull import junior_builder
from annotate.exchange.push import PushSummary, push_tasks
from annotate.exchange.shared import (PullReport, check_tasks, fetch_tasks, annotation_catalog, read_canonical,
                             send_back_to_annotators)
from annotate.tasks.single import JUNIOR_KIND, junior_task
from fcbench.stage import CANDIDATES, FILLED_CANDIDATES, TEMPLATES
from fcbench.config import PipelineConfig
from fcbench.errors import UserError
from fcbench.formats import read_samples
from fcbench.jsonl import iter_json_lines, write_json, write_json_lines
from fcbench.sample import Sample
from fcbench.stage import PipelineContext, PullSettings, StageSummary



@dataclass(frozen=True)
class JuniorFiles:
    candidates: Path  # stage3's output, read only
    filled: Path  # the candidates with the annotators' arguments: what the filter reads
    templates: Path
    rejects: Path
    summary: Path

    @classmethod
    def in_dir(cls, build_dir: Path) -> "JuniorFiles":
        return cls(build_dir / CANDIDATES, build_dir / FILLED_CANDIDATES, build_dir / TEMPLATES,
                   build_dir / "junior.rejects.jsonl", build_dir / "junior.summary.json")


def junior_project_title(pipeline: PipelineConfig) -> str:
    return f"{pipeline.name} stage3 (junior filling)"


def needs_arguments(sample: Sample) -> bool:
    stage3 = sample.meta.get("stage3")
    if isinstance(stage3, dict) and stage3.get("needs_arguments") is True:
        return True
    required = {tool.name: tool.parameters.get("required", []) for tool in sample.tools}
    for call in sample.all_calls():
        if any(value is None for value in call.arguments.values()):
            return True
        if any(name not in call.arguments for name in required.get(call.name, [])):
            return True
    return False


def run_junior_push(pipeline: PipelineConfig, connection: Connection | None = None) -> PushSummary:
    files = JuniorFiles.in_dir(pipeline.build_dir)
    candidates, _ = read_canonical(files.candidates, "stage3 writes the candidates: run stage3 first")
    templates: dict[str, Sample] = {}
    if files.templates.is_file():
        templates = {sample.id: sample for sample in read_samples(files.templates, "fcbench")
                     if isinstance(sample, Sample)}
    catalog = annotation_catalog(pipeline)
    tasks = [junior_task(candidate, templates.get(candidate.provenance.parent_id or ""), catalog=catalog)
             for candidate in candidates if needs_arguments(candidate)]
    connection = connection or resolve_connection()
    client = open_client(connection)
    summary = push_tasks(connection, client, junior_project_title(pipeline), JUNIOR, tasks, model_version="draft")
    summary.counts["not_needing_arguments"] = len(candidates) - len(tasks)
    return summary


def run_junior_pull(pipeline: PipelineConfig, from_export: Path | None = None, send_back: bool = False,
                    connection: Connection | None = None) -> PullReport:
    files = JuniorFiles.in_dir(pipeline.build_dir)
    if not files.candidates.is_file():
        raise UserError(f"{files.candidates}: no such file (stage3 writes the candidates: run stage3 first)")
    fetched = fetch_tasks(junior_project_title(pipeline), from_export, connection)
    outcomes = check_tasks(pipeline, fetched, JUNIOR_KIND, junior_builder, "stage3")
    source = fetched.source
    filled = {outcome.sample_id: outcome.sample for outcome in outcomes if outcome.sample is not None}
    replaced = write_filled_candidates(files.candidates, files.filled, filled)
    statuses = Counter(outcome.status for outcome in outcomes)
    report = PullReport(source)
    report.counts = {"tasks": len(outcomes), "filled": statuses["gold"], "rejected": statuses["rejected"],
                     "cancelled": statuses["cancelled"], "pending": statuses["pending"], "candidates_updated": replaced}
    report.reasons = dict(sorted(Counter(p.code.value for outcome in outcomes for p in outcome.problems).items()))
    report.failures = [{"task_id": outcome.task_id, "id": outcome.sample_id,
                        "problems": [problem.message for problem in outcome.problems]}
                       for outcome in outcomes if outcome.status == "rejected"]
    write_json_lines(files.rejects, [outcome.reject_row() for outcome in outcomes
                                     if outcome.status in ("rejected", "cancelled")])
    write_json(files.summary, {"source": source, "counts": report.counts, "reasons": report.reasons}, indent=2)
    report.outputs = {"candidates": str(files.filled), "rejects": str(files.rejects), "summary": str(files.summary)}
    if send_back:
        send_back_to_annotators(fetched, outcomes, report)
    return report


def write_filled_candidates(path: Path, target: Path, filled: dict[str | None, Sample | None]) -> int:
    """Write stage3's candidates to `target` with the filled rows replaced; every other line (even
    one that does not parse) is copied unchanged. Stage3's own file is never edited, so a re-run of
    stage3 or of this pull starts from the same input."""
    with open(path, encoding="utf-8") as handle:
        raw_lines = handle.read().splitlines()
    parsed = {line.line_no: line for line in iter_json_lines(path)}
    lines: list[str] = []
    replaced = 0
    for line_no, text in enumerate(raw_lines, start=1):
        line = parsed.get(line_no)
        record = line.value if line is not None and line.error is None else None
        sample = filled.get(record.get("id")) if isinstance(record, dict) else None
        if sample is None:
            lines.append(text)
            continue
        meta = dict(sample.meta)
        stage3 = dict(meta.get("stage3") or {})
        stage3.update({"needs_arguments": False, "filled_by": "annotators"})
        meta["stage3"] = stage3
        lines.extend(sample_lines([sample.model_copy(update={"meta": meta})]))
        replaced += 1
    write_lines(target, lines)
    return replaced


# ------------------------------------------------------------------ the stage contract (fcbench.stage)
def push(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    pushed = run_junior_push(ctx.config)
    return StageSummary("stage3 push", dict(pushed.counts), report=pushed)


def pull(ctx: PipelineContext, settings: PullSettings) -> StageSummary:
    pulled = run_junior_pull(ctx.config, from_export=settings.from_export, send_back=settings.send_back)
    return StageSummary("stage3 pull", pulled.counts, pulled.reasons, pulled.outputs, report=pulled)
