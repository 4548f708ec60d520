"""Running stages of a declared pipeline: where each stage reads and writes, and the glue between
the configuration, the environment and the stage logic (which lives in its own module)."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fcbench.stage import CANDIDATES, DRAFTS, FILLED_CANDIDATES, TEMPLATES, VALIDATED
from fcbench.answers import ExecutionFailed
from fcbench.config import PipelineConfig
from fcbench.errors import UserError
from fcbench.formats import FormatOptions, Rejected, read_samples
from fcbench.sample import Sample
from fcbench.stage import PipelineContext, Stage, StageSummary


def filter_input_path(pipeline: PipelineConfig) -> Path:
    """The stage3 candidates, or their copy with the junior annotators' arguments when stage3 left
    the filling to annotators; `stages.filter.input` overrides both."""
    configured = pipeline.stages.filter.input
    if configured:
        return pipeline.resolve(configured)
    if pipeline.stages.stage3.fill == "annotators":
        return pipeline.build_dir / FILLED_CANDIDATES
    return pipeline.build_dir / CANDIDATES


def run_filter_stage(pipeline: PipelineConfig, input_file: Path | None = None, offline: bool = False,
                     force: bool = False):
    """`build-dataset filter PIPELINE`: filter the candidates (or `input_file`) into
    validated.jsonl + validated.rejects.jsonl + filter.summary.json under the build folder.
    With `llm:` configured (and not `offline`), the LLM's semantic check runs last. A result much
    smaller than the previous validated file keeps it (fcbench.runtime.output_guard) unless `force`."""
    from fcbench.environments.from_config import open_environment
    from fcbench.filter.single import FilterPaths, run_filter

    source = input_file or filter_input_path(pipeline)
    if not source.is_file():
        raise UserError(f"{source}: no such file (the filter reads the previous stage's output; "
                        f"set stages.filter.input or pass --input)")
    paths = FilterPaths.in_dir(pipeline.build_dir)
    if source.resolve() in (paths.validated.resolve(), paths.rejects.resolve()):
        raise UserError(f"{source}: the filter writes this file; it cannot also read it (give the candidates)")
    from fcbench.runtime.progress import lines_in

    # Streamed: the candidates are read in bounded batches (memory does not grow with their size);
    # a pipeline without a catalog takes its tools from the samples, in a pass of their own.
    samples = (item for item in read_samples(source, "fcbench") if isinstance(item, Sample))
    with open_environment(pipeline, samples) as environment:
        return run_filter(read_samples(source, "fcbench"), environment, pipeline.stages.filter, paths, str(source),
                          semantic_check=_semantic_check(pipeline, offline), force=force,
                          min_output_share=pipeline.min_output_share, total=lines_in(source),
                          gold_judge=_gold_judge(pipeline, offline))


def _semantic_check(pipeline: PipelineConfig, offline: bool):
    """The LLM judge when one is usable; a configured endpoint without its key is skipped with a
    warning, so an offline build (the bundled example) still filters by execution alone."""
    if pipeline.llm is None or offline:
        return None
    from fcbench.llm.client import resolve_endpoint
    from fcbench.llm.cache import LLM_CACHE_FILE
    from fcbench.checks.semantic import SemanticCheck

    try:
        resolve_endpoint(pipeline.llm, os.environ)
    except UserError as exc:
        logging.getLogger(__name__).warning("semantic check skipped: %s", exc)
        return None
    return SemanticCheck(pipeline.llm, pipeline.build_dir / LLM_CACHE_FILE, jitter_seed=pipeline.seed)


def _gold_judge(pipeline: PipelineConfig, offline: bool):
    """The gold audit's LLM judge (the pipeline's `judge:` block, else its `llm:` block), when one
    is usable; like the semantic check, skipped with a warning when its key is missing."""
    if pipeline.llm is None or offline or pipeline.stages.filter.gold_audit == "off":
        return None
    from fcbench.llm.client import resolve_endpoint
    from fcbench.llm.cache import LLM_CACHE_FILE
    from fcbench.checks.gold_judge import GoldJudge

    try:
        resolve_endpoint(pipeline.judge or pipeline.llm, os.environ)
    except UserError as exc:
        logging.getLogger(__name__).warning("gold judge skipped: %s", exc)
        return None
    return GoldJudge.for_pipeline(pipeline.judge, pipeline.llm, pipeline.build_dir / LLM_CACHE_FILE)


# ------------------------------------------------------------------------------------- execute
def _failure_text(failure) -> str:
    if failure is None:
        return "the path did not run"
    reason = failure.outcome.reason.value if failure.outcome.reason else "error"
    return f"{failure.label} ({failure.name}): {reason}: {failure.outcome.error}"


@dataclass
class ExecuteReport:
    summary: dict[str, Any]
    items: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"summary": self.summary, "items": self.items}


def execute_file(path: Path, fmt: str, options: FormatOptions, tools_module: Path, *,
                 workers: int | None = None, timeout: float = 5.0, seed: int = 0,
                 comparison=None) -> ExecuteReport:
    """`build-dataset execute`: run every sample's gold path with the tools of a Python module and
    say, per sample in input order, whether it ran and whether it reproduces the recorded answer."""
    from fcbench.answers import AnswerComparison
    from fcbench.environments.python_env import EnvironmentStartError, PythonEnvironment
    from fcbench.environments.execution import execute_gold_paths

    if not tools_module.is_file():
        raise UserError(f"{tools_module}: no such tools module")
    items = list(read_samples(path, fmt, options))
    samples = [item for item in items if isinstance(item, Sample)]
    tools = {tool.name: tool for sample in samples for tool in sample.tools}
    try:
        environment = PythonEnvironment(tools_module, list(tools.values()), workers=workers, timeout=timeout, seed=seed)
    except EnvironmentStartError as exc:
        raise UserError(str(exc)) from None
    with environment:
        results = iter(execute_gold_paths(samples, environment))
    comparison = comparison or AnswerComparison()
    report_items = []
    for item in items:
        if isinstance(item, Rejected):
            report_items.append({"id": None, "ok": False, "reproduces": None, "answer": None,
                                 "error": f"{item.source}: {item.reason}"})
            continue
        result = next(results)
        failure = result.failure
        answer = None if isinstance(result.answer, ExecutionFailed) else result.answer
        report_items.append({
            "id": item.id,
            "ok": result.ok,
            "reproduces": result.matches_gold(comparison) if result.ok else (False if "answer" in item.model_fields_set else None),
            "answer": answer,
            "error": None if result.ok else _failure_text(failure),
        })
    summary = {
        "file": str(path),
        "samples": len(report_items),
        "ran": sum(item["ok"] for item in report_items),
        "failed": sum(not item["ok"] for item in report_items),
        "reproduces": sum(item["reproduces"] is True for item in report_items),
        "does_not_reproduce": sum(item["reproduces"] is False for item in report_items),
        "no_recorded_answer": sum(item["reproduces"] is None for item in report_items),
        "network_isolated": environment.network_isolated,
    }
    return ExecuteReport(summary, report_items)


# ----------------------------------------------------------------------------------- run (all stages)
@dataclass
class RunResult:
    pipeline: str
    export: str
    report: str
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "export": self.export, "report": self.report, "stages": self.stages}


def annotation_export(pipeline: PipelineConfig) -> Path:
    """The Label Studio export the human stage is read from in an unattended run."""
    configured = pipeline.stages.stage2.export_file
    if not configured:
        raise UserError(
            f"pipeline {pipeline.name!r}: stage2 is done by annotators; `run` needs their work as a Label Studio "
            f"export (stages.stage2.export_file). Otherwise: stage2 push, annotate, stage2 pull, then stage3/filter/export")
    path = pipeline.resolve(configured)
    if not path.is_file():
        raise UserError(f"{path}: no such Label Studio export (stages.stage2.export_file)")
    return path


@dataclass(frozen=True)
class InputSettings:
    """An invocation's own input file instead of the previous stage's (`--input`)."""

    input_file: Path | None = None


def _input(settings: Any) -> Path | None:
    return settings.input_file if isinstance(settings, InputSettings) else None


def _split_summary(stage: str, summary: dict[str, Any], report: Any = None) -> StageSummary:
    rest = {k: v for k, v in summary.items() if k not in ("counts", "reasons", "outputs")}
    return StageSummary(stage, dict(summary.get("counts") or {}), dict(summary.get("reasons") or {}),
                        dict(summary.get("outputs") or {}), rest, report=report)


def _stage1(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    from generate.stage1.single import run_stage1

    offline = not ctx.uses_llm or ctx.config.stages.stage1.offline
    result = run_stage1(ctx.config, offline=offline, force=ctx.force)
    return _split_summary("stage1", result.summary, report=result)


def _stage2_from_export(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    from annotate.stage2.senior import run_stage2_pull

    pulled = run_stage2_pull(ctx.config, from_export=annotation_export(ctx.config))
    return StageSummary("stage2", pulled.counts, pulled.reasons, pulled.outputs, {"source": pulled.source})


def _stage3(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    from generate.stage3.single import run_stage3

    result = run_stage3(ctx.config, offline=not ctx.uses_llm, from_file=_input(settings), force=ctx.force)
    return _split_summary("stage3", result.summary, report=result)


def _filter(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    filtered = run_filter_stage(ctx.config, _input(settings), offline=not ctx.uses_llm, force=ctx.force)
    return StageSummary("filter", filtered.counts, filtered.reasons, filtered.outputs, report=filtered)


def _export(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    from fcbench.export.single import run_export_stage

    exported = run_export_stage(ctx.config, _input(settings), force=ctx.force)
    return StageSummary("export", {"exported": exported.exported, "rejected": exported.rejected}, exported.reasons,
                        exported.outputs, {"exported": exported.exported, "splits": exported.splits,
                                           "rejected": exported.rejected}, report=exported)


def _report(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    from fcbench.report.page import write_report

    files = write_report(ctx.build_dir, title=ctx.config.name)
    return StageSummary("report", outputs={"report": str(files.html), "report_json": str(files.json)}, report=files)


# The automatic stages in pipeline order, each with the files it reads and writes (under the build
# folder unless a pipelines.yaml key names them); `run` composes exactly these.
STAGES: tuple[Stage, ...] = (
    Stage("stage1", reads=("tools", "environment", "stages.stage3.value_pools"), writes=(DRAFTS,), run=_stage1),
    Stage("stage2", reads=(DRAFTS, "stages.stage2.export_file"), writes=(TEMPLATES,), run=_stage2_from_export),
    Stage("stage3", reads=(TEMPLATES, "stages.stage3.value_pools"), writes=(CANDIDATES,), run=_stage3),
    Stage("filter", reads=(CANDIDATES,), writes=(VALIDATED,), run=_filter),
    Stage("export", reads=(VALIDATED,), writes=("export/",), run=_export),
    Stage("report", reads=(DRAFTS, TEMPLATES, CANDIDATES, VALIDATED, "export/"), writes=("report.html", "report.json"),
          run=_report),
)


# ------------------------------------------------------------------ conversational pipelines
def _conversation_stage1(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    from generate.stage1.conversation import run_conversation_stage1

    result = run_conversation_stage1(ctx.config, offline=not ctx.uses_llm, force=ctx.force)
    return _split_summary("stage1", result.summary, report=result)


def _conversation_stage2_from_export(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    from annotate.stage2.conversation import run_conversation_pull

    pulled = run_conversation_pull(ctx.config, from_export=annotation_export(ctx.config))
    return StageSummary("stage2", pulled.counts, pulled.reasons, pulled.outputs, {"source": pulled.source}, report=pulled)


def _conversation_filter(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    from fcbench.filter.conversation import run_conversation_filter

    environment = ctx.config.environment
    if ctx.offline and environment is not None and environment.kind == "simulated":
        raise UserError(f"pipeline {ctx.config.name!r}: the filter re-executes calls in the response simulator "
                        "(environment kind 'simulated'), an LLM, which --offline does not use")
    filtered = run_conversation_filter(ctx.config, _input(settings), force=ctx.force)
    return StageSummary("filter", filtered.counts, filtered.reasons, filtered.outputs, report=filtered)


def _conversation_export(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    from fcbench.export.conversation import run_conversation_export

    exported = run_conversation_export(ctx.config, _input(settings), force=ctx.force)
    return StageSummary("export", {"exported": exported.exported, "rejected": exported.rejected}, exported.reasons,
                        exported.outputs, {"exported": exported.exported, "splits": exported.splits,
                                           "rejected": exported.rejected}, report=exported)


def _conversation_push(ctx: PipelineContext, settings: PushSettings) -> StageSummary:
    from annotate.stage2.conversation import run_conversation_push

    if settings.annotators:
        raise UserError("stage2 push --annotators is not available for conversation pipelines yet")
    return _report_summary("stage2 push", run_conversation_push(ctx.config, count=settings.count))


def _conversation_pull(ctx: PipelineContext, settings: PullSettings) -> StageSummary:
    from annotate.stage2.conversation import run_conversation_pull

    return _report_summary("stage2 pull", run_conversation_pull(ctx.config, from_export=settings.from_export,
                                                                send_back=settings.send_back,
                                                                allow_stale=settings.allow_stale))


# `kind: conversation` (CONFETTI-style): scenarios and drafted conversations, their authoring and
# review in Label Studio, the per-conversation filter, and the two turn-level sets.
CONVERSATION_STAGES: tuple[Stage, ...] = (
    Stage("stage1", reads=("tools", "environment", "conversation"), writes=("scenarios.jsonl", DRAFTS),
          run=_conversation_stage1),
    Stage("stage2", reads=(DRAFTS, "stages.stage2.export_file"), writes=(TEMPLATES,), run=_conversation_stage2_from_export),
    Stage("filter", reads=(TEMPLATES,), writes=(VALIDATED,), run=_conversation_filter),
    Stage("export", reads=(VALIDATED,), writes=("export/",), run=_conversation_export),
    STAGES[-1],  # report
)


def stages_of(pipeline: PipelineConfig) -> tuple[tuple[Stage, ...], dict[str, Stage]]:
    """The automatic stages and the on-demand stages of a pipeline, chosen by its `kind`."""
    if pipeline.kind == "conversation":
        on_demand = {"stage2 push": Stage("stage2 push", reads=(DRAFTS,), writes=(), run=_conversation_push),
                     "stage2 pull": Stage("stage2 pull", reads=(DRAFTS, "stages.stage2.export_file"), writes=(TEMPLATES,),
                                          run=_conversation_pull)}
        return CONVERSATION_STAGES, on_demand
    return STAGES, dict(ON_DEMAND_STAGES)


def run_pipeline(pipeline: PipelineConfig, offline: bool = False, progress=None, force: bool = False) -> RunResult:
    """`build-dataset run PIPELINE`: every automatic stage of STAGES in order: stage1 drafts, the
    annotators' stage2 work read from a Label Studio export, stage3 variants, filter, export,
    report. Each stage reads the previous stage's file and writes its own, so a stage can also be
    re-run alone."""
    ctx = PipelineContext(pipeline, offline=offline, force=force)
    result = RunResult(pipeline.name, "", "")
    for stage in stages_of(pipeline)[0]:
        if progress is not None:
            progress(stage.name)
        result.stages[stage.name] = stage.run(ctx, None).as_dict()
    result.export = result.stages["export"]["outputs"]["export"]
    result.report = result.stages["report"]["outputs"]["report"]
    return result


# ------------------------------------------------------------------ stages run on demand (CLI)
@dataclass(frozen=True)
class PushSettings:
    count: int | None = None  # drafts to push (default stages.stage2.select)
    annotators: int = 0  # a team: N annotator accounts ...
    overlap: int = 1  # ... each task assigned to K of them


@dataclass(frozen=True)
class PullSettings:
    from_export: Path | None = None  # a Label Studio export file instead of the server
    send_back: bool = False  # show failing tasks' problems to their annotators
    allow_stale: bool = False  # stage2: accept annotations made on other drafts


@dataclass(frozen=True)
class EvaluateSettings:
    model: str
    base_url: str | None = None
    split: str = "test"
    input_file: Path | None = None
    limit: int | None = None
    extra_turns: int = 3
    batch: bool = False
    progress: Any = None  # (done, total) callback
    judge_model: str | None = None  # the LLM judge (default: the pipeline's judge block, else none)
    judge_base_url: str | None = None
    context_window: int | None = None  # the model's, in tokens (default: llm.context_window)


def _report_summary(stage: str, report: Any) -> StageSummary:
    return StageSummary(stage, dict(getattr(report, "counts", {}) or {}), dict(getattr(report, "reasons", {}) or {}),
                        dict(getattr(report, "outputs", {}) or {}), report=report)


def _stage2_push(ctx: PipelineContext, settings: PushSettings) -> StageSummary:
    from annotate.stage2.senior import run_stage2_push

    return _report_summary("stage2 push", run_stage2_push(ctx.config, count=settings.count,
                                                          annotators=settings.annotators, overlap=settings.overlap))


def _stage2_pull(ctx: PipelineContext, settings: PullSettings) -> StageSummary:
    from annotate.stage2.senior import run_stage2_pull

    return _report_summary("stage2 pull", run_stage2_pull(ctx.config, from_export=settings.from_export,
                                                          send_back=settings.send_back,
                                                          allow_stale=settings.allow_stale))


def _junior_push(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    from annotate.stage3.junior import run_junior_push

    return _report_summary("stage3 push", run_junior_push(ctx.config))


def _junior_pull(ctx: PipelineContext, settings: PullSettings) -> StageSummary:
    from annotate.stage3.junior import run_junior_pull

    return _report_summary("stage3 pull", run_junior_pull(ctx.config, from_export=settings.from_export,
                                                          send_back=settings.send_back))


def _evaluate(ctx: PipelineContext, settings: EvaluateSettings) -> StageSummary:
    from fcbench.evaluate.runner import evaluate_pipeline

    result = evaluate_pipeline(ctx.config, settings.model, base_url=settings.base_url, split=settings.split,
                               input_file=settings.input_file, limit=settings.limit, extra_turns=settings.extra_turns,
                               batch=settings.batch, progress=settings.progress,
                               judge_model=settings.judge_model, judge_base_url=settings.judge_base_url,
                               context_window=settings.context_window)
    return StageSummary("evaluate", {"samples": result.samples, "ran": result.ran, "reused": result.reused},
                        outputs={"trajectories": str(result.trajectories_path), "scores": str(result.scores_path),
                                 "rejects": str(result.rejects_path)}, report=result)


# The stages a person starts (annotation rounds, evaluation), through the same contract.
ON_DEMAND_STAGES: dict[str, Stage] = {stage.name: stage for stage in (
    Stage("stage2 push", reads=(DRAFTS,), writes=(), run=_stage2_push),
    Stage("stage2 pull", reads=(DRAFTS, "stages.stage2.export_file"), writes=(TEMPLATES,), run=_stage2_pull),
    Stage("stage3 push", reads=(CANDIDATES, TEMPLATES), writes=(), run=_junior_push),
    Stage("stage3 pull", reads=(CANDIDATES,), writes=(FILLED_CANDIDATES,), run=_junior_pull),
    Stage("evaluate", reads=("export/",), writes=("eval/<model>/",), run=_evaluate),
)}


def run_stage(name: str, pipeline: PipelineConfig, settings: Any = None, *, offline: bool = False,
              force: bool = False) -> StageSummary:
    """Run one stage by name (`stage1`, ..., `stage2 pull`, `evaluate`) through the contract."""
    automatic, on_demand = stages_of(pipeline)
    stages = {stage.name: stage for stage in automatic} | on_demand
    if name not in stages:
        raise UserError(f"unknown stage {name!r}, available: {', '.join(stages)}")
    return stages[name].run(PipelineContext(pipeline, offline=offline, force=force), settings)
