"""The stages of a declared pipeline, in order, as `run`, the CLI and `pipelines --check` all see
them: one `Stage` declaration per stage and pipeline kind (what it reads under a given
configuration, what it writes, the function that runs it), registered in order in one registry
per kind. The stage logic lives in each stage's own package."""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from fcbench.answers import ExecutionFailed
from fcbench.config import PipelineConfig
from fcbench.errors import UserError
from fcbench.formats import FormatOptions, Rejected, read_samples
from fcbench.registry import Registry
from fcbench.sample import Sample
from fcbench.stage import (CANDIDATES, DRAFTS, FILLED_CANDIDATES, REVIEWED_SCENARIOS, SCENARIOS, TEMPLATES,
                           VALIDATED, PipelineContext, Read, Stage,
                           StageSummary, annotation_export, build_file, configured_file, filter_input, pipeline_catalog)


# ------------------------------------------------------------------------ what the stages read
def tool_catalog(pipeline: PipelineConfig, needed: str) -> Read:
    path = pipeline.tools_path
    return Read("tools", path, "tool catalog", needed=needed, load=pipeline_catalog)


def environment_reads(pipeline: PipelineConfig) -> tuple[Read, ...]:
    """What executing the gold paths needs: the environment's module or recorded store."""
    environment = pipeline.environment
    if environment is None:
        return (Read("environment", None, needed="the stages execute the gold paths in an environment: declare one"),)
    if environment.kind == "python":
        return (configured_file(pipeline, "environment.module", environment.module, "tool module",
                                needed="a python environment needs the module implementing the tools"),)
    if environment.kind in ("recorded", "http") and not environment.record:
        return (configured_file(pipeline, "environment.responses", environment.responses,
                                "recorded store (record it first with --record)"),)
    if environment.kind == "mcp":  # live servers, or their recording replayed; a sandbox seeded from a folder
        reads = []
        if environment.responses and not environment.record:
            reads.append(configured_file(pipeline, "environment.responses", environment.responses,
                                         "recorded store (record it first with --record)"))
        if environment.sandbox is not None and environment.sandbox.seed:
            reads.append(configured_file(pipeline, "environment.sandbox.seed", environment.sandbox.seed,
                                         "sandbox seed folder"))
        return tuple(reads)
    return ()


def _value_pools(pipeline: PipelineConfig, key: str, declared: str | None, what: str) -> Read:
    from generate.common import value_pools_path

    return Read(key, pipeline.resolve(declared) if declared else value_pools_path(pipeline), what)


def _stage1_reads(pipeline: PipelineConfig) -> tuple[Read, ...]:
    reads = [tool_catalog(pipeline, "stage1 samples tools from the catalog: name one with `tools:`"),
             *environment_reads(pipeline)]
    seeds = pipeline.stages.stage1.from_seeds
    if seeds is not None:  # NESTful-style: drafts from seed examples (generate.stage1.from_seeds)
        reads.append(configured_file(pipeline, "stages.stage1.from_seeds.file", seeds.file, "seeds file"))
        if _stage1_llm(pipeline) is None:
            reads.append(configured_file(pipeline, "stages.stage1.from_seeds.phrases", seeds.phrases, "phrases file",
                                         needed="the offline generator writes each question from the phrases"))
    elif _stage1_llm(pipeline) is None:  # the graph sampler draws its start values from the pools
        stage1_pools = pipeline.stages.stage1.value_pools
        reads.append(_value_pools(pipeline, "stages.stage1.value_pools" if stage1_pools else "stages.stage3.value_pools",
                                  stage1_pools or pipeline.stages.stage3.value_pools,
                                  "value pools file (the graph sampler's start values)"))
    return tuple(reads)


def _stage1_llm(pipeline: PipelineConfig) -> str | None:
    return None if pipeline.stages.stage1.offline or pipeline.llm is None else "stage1 (stages.stage1.offline: false)"


def _stage3_reads(pipeline: PipelineConfig) -> tuple[Read, ...]:
    reads = [build_file(pipeline, TEMPLATES), *environment_reads(pipeline)]
    if pipeline.stages.stage3.fill == "slots":
        reads.append(_value_pools(pipeline, "stages.stage3.value_pools", pipeline.stages.stage3.value_pools,
                                  "value pools file"))
    return tuple(reads)


def _stage3_llm(pipeline: PipelineConfig) -> str | None:
    return "stage3 (fill: llm)" if pipeline.stages.stage3.fill == "llm" else None


def _conversation_stage1_reads(pipeline: PipelineConfig) -> tuple[Read, ...]:
    reads = [tool_catalog(pipeline, "a conversation pipeline samples its scenarios' APIs from the catalog: name one "
                                    "with `tools:`"), *environment_reads(pipeline)]
    conversation = pipeline.conversation
    if conversation is not None and conversation.offline:
        reads.append(_value_pools(pipeline, "conversation.value_pools", conversation.value_pools
                                  or pipeline.stages.stage3.value_pools,
                                  "value pools file (the values the rule-based simulator's users state)"))
    if conversation is not None and conversation.review.enabled and conversation.review.export_file:
        reads.append(Read("conversation.review.export_file", pipeline.resolve(conversation.review.export_file),
                          "Label Studio export of the scenario review"))
    return tuple(reads)


def _conversation_stage1_llm(pipeline: PipelineConfig) -> str | None:
    conversation = pipeline.conversation
    return None if conversation is None or conversation.offline else "stage1 conversations (conversation.offline: false)"


def _stage2_reads(pipeline: PipelineConfig) -> tuple[Read, ...]:
    return build_file(pipeline, DRAFTS), annotation_export(pipeline), *environment_reads(pipeline)


def _filter_reads(pipeline: PipelineConfig) -> tuple[Read, ...]:
    return filter_input(pipeline), *environment_reads(pipeline)


def _export_reads(pipeline: PipelineConfig) -> tuple[Read, ...]:
    return (build_file(pipeline, VALIDATED),)


def _report_reads(pipeline: PipelineConfig) -> tuple[Read, ...]:
    return tuple(build_file(pipeline, name, optional=True) for name in (DRAFTS, TEMPLATES, CANDIDATES, VALIDATED, "export/"))


# ---------------------------------------------------------------------------- the declarations
# One registry per pipeline kind: the automatic stages first, in pipeline order (`run` composes
# exactly these), then the stages a person starts (annotation rounds, evaluation).
SINGLE_STAGES: Registry[Stage] = Registry("stage")
CONVERSATION_STAGES: Registry[Stage] = Registry("stage")

REPORT = Stage("report", _report_reads, ("report.html", "report.json"), "fcbench.report.page:run")
EVALUATE = Stage("evaluate", _export_reads, ("eval/<model>/",), "fcbench.evaluate.protocols:run", on_demand=True)

for _stage in (
    Stage("stage1", _stage1_reads, (DRAFTS,), "generate.stage1.single:run", "stages.stage1", _stage1_llm),
    Stage("stage2", _stage2_reads, (TEMPLATES,), "annotate.stage2.senior:run_from_export", "stages.stage2"),
    Stage("stage3", _stage3_reads, (CANDIDATES,), "generate.stage3.single:run", "stages.stage3", _stage3_llm),
    Stage("filter", _filter_reads, (VALIDATED,), "fcbench.filter.single:run", "stages.filter"),
    Stage("export", _export_reads, ("export/",), "fcbench.export.single:run", "stages.export"),
    REPORT,
    Stage("stage2 push", lambda p: (build_file(p, DRAFTS),), (), "annotate.stage2.senior:push", on_demand=True),
    Stage("stage2 pull", lambda p: (build_file(p, DRAFTS),), (TEMPLATES,), "annotate.stage2.senior:pull", on_demand=True),
    Stage("stage3 push", lambda p: (build_file(p, CANDIDATES), build_file(p, TEMPLATES)), (),
          "annotate.stage3.junior:push", on_demand=True),
    Stage("stage3 pull", lambda p: (build_file(p, CANDIDATES),), (FILLED_CANDIDATES,), "annotate.stage3.junior:pull",
          on_demand=True),
    EVALUATE,
):
    SINGLE_STAGES.register(_stage.name, _stage)

# `kind: conversation` (CONFETTI-style): scenarios and drafted conversations, their authoring and
# review in Label Studio, the per-conversation filter, and the two turn-level sets.
for _stage in (
    Stage("stage1", _conversation_stage1_reads, (SCENARIOS, DRAFTS), "fcbench.pipeline.run:conversation_stage1",
          "conversation", _conversation_stage1_llm),
    Stage("stage2", _stage2_reads, (TEMPLATES,), "annotate.stage2.conversation:run_from_export", "stages.stage2"),
    Stage("filter", _filter_reads, (VALIDATED,), "fcbench.filter.conversation:run", "stages.filter"),
    Stage("export", _export_reads, ("export/",), "fcbench.export.conversation:run", "stages.export"),
    REPORT,
    Stage("stage2 push", lambda p: (build_file(p, DRAFTS),), (), "annotate.stage2.conversation:push", on_demand=True),
    Stage("stage2 pull", lambda p: (build_file(p, DRAFTS),), (TEMPLATES,), "annotate.stage2.conversation:pull",
          on_demand=True),
    Stage("scenarios push", lambda p: (build_file(p, SCENARIOS),), (), "annotate.stage1.review:push", on_demand=True),
    Stage("scenarios pull", lambda p: (), (REVIEWED_SCENARIOS,), "annotate.stage1.review:pull", on_demand=True),
    EVALUATE,
):
    CONVERSATION_STAGES.register(_stage.name, _stage)


def conversation_stage1(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    """A conversation pipeline's stage1. When its scenarios are reviewed before drafting and the
    reviewers' Label Studio export is configured (an unattended run), that export is pulled first
    (`scenarios pull`), so stage1 drafts the reviewed scenarios."""
    from annotate.stage1.review import run_scenario_pull
    from generate.stage1.conversation import run

    review = ctx.config.conversation.review if ctx.config.conversation else None
    if review is not None and review.enabled and review.export_file:
        path = ctx.config.resolve(review.export_file)
        if not path.is_file():
            raise UserError(f"{path}: no such Label Studio export (conversation.review.export_file)")
        run_scenario_pull(ctx.config, from_export=path)
    return run(ctx, settings)


def stages_of(pipeline: PipelineConfig) -> Registry[Stage]:
    """Every stage of a pipeline, chosen by its `kind`, in order."""
    return CONVERSATION_STAGES if pipeline.kind == "conversation" else SINGLE_STAGES


def automatic_stages(pipeline: PipelineConfig) -> list[Stage]:
    return [stage for stage in stages_of(pipeline) if not stage.on_demand]


def stages_to_run(pipeline: PipelineConfig) -> list[Stage]:
    """The automatic stages `run` runs: from the first stage the pipeline declares in
    pipelines.yaml to the report (the later stages run with their defaults when not declared). A
    pipeline whose data comes in at the filter (nestful-math: the published samples are its
    candidates, `stages.filter.input`) declares no stage1-3, so none of them runs; a pipeline that
    declares no stage at all runs every stage; a pipeline whose filter reads a named file
    (`stages.filter.input`) runs stage2 and stage3 only when it declares them. A `kind: conversation` pipeline runs all of its
    stages (its stage1 is declared by its `conversation:` block)."""
    stages = automatic_stages(pipeline)
    if pipeline.kind == "conversation":
        return stages
    declared = set(pipeline.declared_stages())
    first = next((index for index, stage in enumerate(stages) if stage.name in declared), 0)
    if pipeline.stages.filter.input:
        # the filter reads a named file (nestful-gen, travel-navi: stage1's drafts are the
        # candidates): the stages between generation and the filter run only when declared
        return [stage for stage in stages[first:] if stage.name in declared or stage.name not in ("stage2", "stage3")]
    return stages[first:]


# ----------------------------------------------------------------------------------- run (all stages)
@dataclass
class RunResult:
    pipeline: str
    export: str
    report: str
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "export": self.export, "report": self.report, "stages": self.stages}


def run_pipeline(pipeline: PipelineConfig, offline: bool = False, progress=None, force: bool = False) -> RunResult:
    """`build-dataset run PIPELINE`: the automatic stages of the pipeline's kind in order, from the
    first it declares (`stages_to_run`): stage1 drafts, the annotators' stage2 work read from a Label Studio export, stage3 variants, filter,
    export, report. Each stage reads the previous stage's file and writes its own, so a stage can
    also be re-run alone."""
    ctx = PipelineContext(pipeline, offline=offline, force=force)
    result = RunResult(pipeline.name, "", "")
    with writing_the_build(pipeline):
        for stage in stages_to_run(pipeline):
            if progress is not None:
                progress(stage.name)
            result.stages[stage.name] = stage(ctx, None).as_dict()
            if stage.name == "stage1" and result.stages["stage1"].get("status") == "awaiting_review":
                raise UserError(f"pipeline {pipeline.name!r}: its scenarios are reviewed before drafting "
                                "(conversation.review.enabled); `run` needs the reviewers' work as a Label Studio export "
                                "(conversation.review.export_file). Otherwise: scenarios push, review, scenarios pull, "
                                "then run again")
    result.export = result.stages["export"]["outputs"]["export"]
    result.report = result.stages["report"]["outputs"]["report"]
    return result


def run_stage(name: str, pipeline: PipelineConfig, settings: Any = None, *, offline: bool = False,
              force: bool = False) -> StageSummary:
    """Run one stage by name (`stage1`, ..., `stage2 pull`, `evaluate`) through the contract."""
    stage = stages_of(pipeline).get(name)
    with writing_the_build(pipeline):
        return stage(PipelineContext(pipeline, offline=offline, force=force), settings)


@contextmanager
def writing_the_build(pipeline: PipelineConfig) -> Iterator[None]:
    """What every stage of a pipeline runs inside: the build folder's lock (one writing command
    at a time: another says who holds it and exits 1) and a failing disk as one line naming the
    file (fcbench.runtime.output_guard.disk_errors)."""
    from fcbench.runtime.output_guard import disk_errors
    from fcbench.runtime.writer_lock import build_lock

    with build_lock(pipeline.build_dir, pipeline.name), disk_errors(pipeline.build_dir):
        yield


# ------------------------------------------------------------------------------------- execute
def _failure_reason(failure) -> str:
    """A failure as a reason shared by every sample it happens to: the error kind and the tool."""
    if failure is None:
        return "the path did not run"
    return f"{failure.outcome.reason.value if failure.outcome.reason else 'error'} ({failure.name})"


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
    failure_reasons: Counter[str] = Counter()  # why samples did not run, without their particulars
    for item in items:
        if isinstance(item, Rejected):
            report_items.append({"id": None, "ok": False, "reproduces": None, "answer": None,
                                 "error": f"{item.source}: {item.reason}"})
            failure_reasons[item.reason] += 1
            continue
        result = next(results)
        failure = result.failure
        if not result.ok:
            failure_reasons[_failure_reason(failure)] += 1
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
        "failure_reasons": dict(sorted(failure_reasons.items())),
    }
    return ExecuteReport(summary, report_items)
