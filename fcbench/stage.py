"""The stage contract: every stage is one function `run(ctx, settings) -> StageSummary` over a
`PipelineContext`, declaring the build files it reads and writes (as distilabel's steps declare
their columns). `settings` are what one invocation adds to the pipeline's own (a push's count, a
pull's export file, the model to evaluate); the automatic stages need none. `build-dataset run`
composes the automatic stages in order, and the CLI runs every stage through the same contract
(fcbench.pipeline.run).

What every stage of one pipeline shares is resolved here once: its tool catalog and the names of
its build files.

The rule for the catalog: a pipeline that names a catalog (`tools:`) whose file is missing is an
error wherever it is read, never an empty catalog; a pipeline that names none has none (`None`):
stage1 then refuses to run, the environment uses the tools the samples carry, and the annotation
stages hash no catalog tools.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from fcbench.config import PipelineConfig
from fcbench.errors import UserError
from fcbench.sample import Tool


# Every file a pipeline's stages write under its build folder, named once.
DRAFTS = "drafts.jsonl"
TEMPLATES = "templates.jsonl"
CANDIDATES = "candidates.jsonl"
FILLED_CANDIDATES = "candidates.filled.jsonl"
VALIDATED = "validated.jsonl"
SCENARIOS = "scenarios.jsonl"  # kind: conversation, stage1's sampled scenarios
REVIEWED_SCENARIOS = "scenarios.reviewed.jsonl"  # ... and the reviewers' decisions on them (`scenarios pull`)

_catalogs: dict[tuple[Path, int, int], list[Tool]] = {}


def pipeline_catalog(pipeline: PipelineConfig) -> list[Tool] | None:
    """The pipeline's tool catalog, read once per file version (path, size, mtime), or None when
    the pipeline names none."""
    path = pipeline.tools_path
    if path is None:
        return None
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise UserError(f"{path}: no such tool catalog (pipeline {pipeline.name!r}, `tools:` in pipelines.yaml)") from None
    key = (path.resolve(), stat.st_size, stat.st_mtime_ns)
    if key not in _catalogs:
        from fcbench.catalog import load_tools_file

        _catalogs[key] = load_tools_file(path)
    return list(_catalogs[key])


def read_reviewed_scenarios(path: Path) -> list[Any] | None:
    """The reviewed scenarios (fcbench.conversation.ReviewedScenario) a `scenarios pull` wrote;
    None when no pull wrote any."""
    import json

    from fcbench.conversation import ReviewedScenario

    if not path.is_file():
        return None
    reviewed = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                reviewed.append(ReviewedScenario.model_validate(json.loads(line)))
            except ValueError as exc:
                raise UserError(f"{path}:{number}: not a reviewed scenario ({exc}); pull the review again") from None
    return reviewed


@dataclass(frozen=True)
class PipelineContext:
    """One pipeline's settings and how this run treats them, resolved once and handed to every
    stage: the configuration, the catalog (read once), and whether the LLM may be used."""

    config: PipelineConfig
    offline: bool = False  # no LLM at all (graph sampler, slot substitution, execution-only filter)
    force: bool = False  # replace outputs even when the new result is much smaller (fcbench.runtime.output_guard)

    @property
    def build_dir(self) -> Path:
        return self.config.build_dir

    @property
    def catalog(self) -> list[Tool] | None:
        return pipeline_catalog(self.config)

    @property
    def uses_llm(self) -> bool:
        return not self.offline and self.config.llm is not None


@dataclass
class StageSummary:
    """What every stage reports, in one shape: counts, reject reasons, the files it wrote, and the
    stage's own details."""

    stage: str
    counts: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, int] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    report: Any = None  # the stage's own full report, for the command that shows it (not in as_dict)

    def as_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "counts": self.counts, "reasons": self.reasons, "outputs": self.outputs,
                **self.details}


@dataclass(frozen=True)
class Stage:
    name: str
    reads: tuple[str, ...]  # build files (or pipelines.yaml keys naming files) it reads
    writes: tuple[str, ...]  # build files it writes; no stage writes a file another stage writes
    run: Callable[[PipelineContext, Any], StageSummary]  # (context, this invocation's settings or None)
