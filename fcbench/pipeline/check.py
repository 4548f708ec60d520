"""`build-dataset pipelines --check`: does a declared pipeline's whole chain hold together, before
anything runs? (pure but for reading the files it names)

The check walks the pipeline's stages as `run` declares them (fcbench.pipeline.run, the stages of
its kind that pipelines.yaml configures), in order, and asks of each thing a stage reads, as this
configuration has it (`Stage.reads`): a build file must be written by an earlier stage or be there
already; a file a pipelines.yaml key names must exist (and a catalog must load); a key the stage
needs must be set. What files cannot say stays a rule here: a stage that asks an LLM needs an
`llm:` block whose key variable is set (unless its endpoint is on this machine). Every problem is
reported once, naming the pipelines.yaml key (or build file) it comes from.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping
from urllib.parse import urlsplit

from fcbench.config import PipelineConfig
from fcbench.errors import UserError
from fcbench.pipeline.run import automatic_stages, stages_of
from fcbench.stage import Read, Stage

_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}


@dataclass(frozen=True)
class ChainProblem:
    pipeline: str
    key: str  # the pipelines.yaml key the problem is about (dotted), or the build file
    message: str

    def __str__(self) -> str:
        return f"{self.pipeline}: {self.key}: {self.message}"


def declares(pipeline: PipelineConfig, key: str | None) -> bool:
    """Whether pipelines.yaml configures the stage declared by `key` (`stages.filter`, `conversation`)."""
    if key is None:
        return False
    if key.startswith("stages."):
        return key.removeprefix("stages.") in pipeline.declared_stages()
    return getattr(pipeline, key, None) is not None


def walked_stages(pipeline: PipelineConfig) -> list[Stage]:
    return [stage for stage in automatic_stages(pipeline) if declares(pipeline, stage.declared_by)]


def check_pipeline(pipeline: PipelineConfig, environ: Mapping[str, str] | None = None) -> list[ChainProblem]:
    environ = os.environ if environ is None else environ
    problems: dict[str, ChainProblem] = {}  # by key: a file several stages read is one problem

    def problem(key: str, message: str) -> None:
        problems.setdefault(key, ChainProblem(pipeline.name, key, message))

    written: set[str] = set()
    uses_llm: list[str] = []
    for stage in walked_stages(pipeline):
        for read in stage.reads(pipeline):
            message = _read_problem(pipeline, stage, read, written)
            if message:
                problem(read.key, message)
        written.update(stage.writes)
        if stage.llm(pipeline):
            uses_llm.append(stage.llm(pipeline))
    environment = pipeline.environment
    if environment is not None and environment.kind == "simulated":
        uses_llm.append("the response simulator (environment kind simulated)")
    if uses_llm:
        _llm_problems(pipeline, uses_llm, environ, problem)
    return list(problems.values())


def _read_problem(pipeline: PipelineConfig, stage: Stage, read: Read, written: set[str]) -> str | None:
    if read.build:
        if read.optional or read.key in written or (read.path is not None and read.path.exists()):
            return None
        makers = [other.name for other in stages_of(pipeline) if read.key in other.writes]
        made_by = f"`{makers[0]}` writes it, run it first" if makers else "no stage writes it"
        return f"{stage.name} reads {read.path}, which no earlier stage of `run` writes ({made_by})"
    if read.path is None:
        return read.needed
    if not read.path.exists():
        return f"{read.path}: no such {read.what}"
    if read.load is not None:
        try:
            read.load(pipeline)
        except UserError as exc:
            return str(exc)
    return None


def _llm_problems(pipeline: PipelineConfig, uses: list[str], environ: Mapping[str, str], problem) -> None:
    if pipeline.llm is None:
        problem("llm", f"{', '.join(uses)} need an LLM: add an `llm:` block (or make those stages offline)")
        return
    base_url = pipeline.llm.base_url or environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    local = urlsplit(base_url).hostname in _LOCAL_HOSTS
    if not local and not environ.get(pipeline.llm.api_key_env):
        problem("llm.api_key_env", f"${pipeline.llm.api_key_env} is not set (the key for {', '.join(uses)})")
