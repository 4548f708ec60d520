"""The stage contract: every stage is one function `run(ctx, settings) -> StageSummary` over a
`PipelineContext`, declaring the files it reads and writes (as distilabel's steps declare their
columns). `settings` are what one invocation adds to the pipeline's own (a push's count, a pull's
export file, the model to evaluate); the automatic stages need none. `build-dataset run` composes
the automatic stages in order, the CLI runs every stage through the same contract, and
`pipelines --check` walks the same declarations before anything runs (fcbench.pipeline.run,
fcbench.pipeline.check): what a stage reads is computed from the configuration where it varies
(`filter_input`), by the same function the stage itself reads its input with.

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
import importlib
from typing import Any, Callable, Mapping

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

    @classmethod
    def of(cls, stage: str, summary: Mapping[str, Any], report: Any = None) -> StageSummary:
        """From the summary a stage writes (its counts, reasons and outputs, and the rest as details):
        the one way a stage's own report becomes the shared shape."""
        rest = {key: value for key, value in summary.items() if key not in ("counts", "reasons", "outputs")}
        return cls(stage, dict(summary.get("counts") or {}), dict(summary.get("reasons") or {}),
                   dict(summary.get("outputs") or {}), rest, report=report)


# ------------------------------------------------------------------------------ what stages read
@dataclass(frozen=True)
class Read:
    """One input of a stage: a build file an earlier stage writes (`build`), or a file the pipeline
    names under `key` (resolved to `path`). `path` None: the key is not set; `needed` then says why
    the stage cannot run without it (None: optional, the stage does without)."""

    key: str  # the build file's name, or the pipelines.yaml key (dotted)
    path: Path | None = None
    what: str = "file"
    build: bool = False
    needed: str | None = None
    optional: bool = False  # a build file used when it is there (the report reads what exists)
    load: Callable[[PipelineConfig], Any] | None = None  # a file that must also parse (raises UserError)


def build_file(pipeline: PipelineConfig, name: str, optional: bool = False) -> Read:
    return Read(name, pipeline.build_dir / name, build=True, optional=optional)


def configured_file(pipeline: PipelineConfig, key: str, value: str | None, what: str, needed: str | None = None) -> Read:
    return Read(key, pipeline.resolve(value) if value else None, what, needed=needed)


def filter_input(pipeline: PipelineConfig) -> Read:
    """What the filter reads: `stages.filter.input` when set; else, for `kind: conversation`, stage2's
    gold conversations; else the stage3 candidates, or their copy with the junior annotators'
    arguments when stage3 left the filling to annotators."""
    configured = pipeline.stages.filter.input
    if configured and pipeline.resolve(configured) == pipeline.build_dir / DRAFTS:
        # a pipeline without stage2/3 (NESTful-, CallNavi-style) filters stage1's drafts: a build file
        return build_file(pipeline, DRAFTS)
    if configured:
        return configured_file(pipeline, "stages.filter.input", configured, "filter input")
    if pipeline.kind == "conversation":
        return build_file(pipeline, TEMPLATES)
    if pipeline.stages.stage3.fill == "annotators":
        return build_file(pipeline, FILLED_CANDIDATES)
    return build_file(pipeline, CANDIDATES)


def annotation_export(pipeline: PipelineConfig) -> Read:
    """The Label Studio export an unattended run reads the annotators' stage2 work from."""
    return configured_file(pipeline, "stages.stage2.export_file", pipeline.stages.stage2.export_file,
                           "Label Studio export")


def existing_file(read: Read, advice: str) -> Path:
    """The file `read` names, or a one-line UserError naming the key it comes from and what to do."""
    if read.path is None:
        raise UserError(f"{read.key} is not set in pipelines.yaml ({read.needed + '; ' if read.needed else ''}{advice})")
    if not read.path.is_file():
        raise UserError(f"{read.path}: no such {read.what} ({read.key}; {advice})")
    return read.path


# ------------------------------------------------------------------------- an invocation's settings
@dataclass(frozen=True)
class InputSettings:
    """An invocation's own input file instead of the previous stage's (`--input`)."""

    input_file: Path | None = None


def input_of(settings: Any) -> Path | None:
    return settings.input_file if isinstance(settings, InputSettings) else None


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
    save_export: Path | None = None  # stage2: keep the export pulled from the server in this file (for `run`)


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
    protocol: str | None = None  # a paper's protocol (fcbench.evaluate.protocols); None: the pipeline kind's
    temperature: float | None = None  # None: the protocol's (the paper's) decoding settings
    max_tokens: int | None = None
    runs: int | None = None  # callnavi: runs per question (default 5, the paper's)
    icl_examples: int = 3  # nestful-icl
    max_steps: int = 10  # nestful-react
    compat: bool = False  # the tables show the published scorer's figures where fcbench's differ


# ------------------------------------------------------------------------------------ a stage
def _no_llm(pipeline: PipelineConfig) -> str | None:
    return None


@dataclass(frozen=True)
class Stage:
    """A stage as `run` and `pipelines --check` both see it. `reads(pipeline)` lists its inputs as
    this configuration has them; `writes` the build files it writes (no two stages write the same
    one); `run` is "module:function", imported when the stage runs (a check imports no stage);
    `declared_by` the pipelines.yaml key that configures it (the check walks the stages a pipeline
    declares; None: never walked); `llm(pipeline)` names what of it asks an LLM under this configuration, if anything
    (the one thing files cannot say)."""

    name: str
    reads: Callable[[PipelineConfig], tuple[Read, ...]]
    writes: tuple[str, ...]
    run: str
    declared_by: str | None = None
    llm: Callable[[PipelineConfig], str | None] = _no_llm
    on_demand: bool = False  # started by a person (an annotation round, an evaluation), not by `run`

    def __call__(self, ctx: PipelineContext, settings: Any = None) -> StageSummary:
        module, _, function = self.run.partition(":")
        return getattr(importlib.import_module(module), function)(ctx, settings)
