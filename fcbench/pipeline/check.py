"""`build-dataset pipelines --check`: does a declared pipeline's whole chain hold together, before
anything runs? (pure but for reading the files it names)

For each stage the pipeline declares in pipelines.yaml, what it reads must exist or be made by
an earlier stage, the settings it needs must be there, and the files the pipeline names must load:
the tool catalog parses, the environment's module, recorded store or descriptions are present, the
value pools, the annotation export and a filter input exist, and an LLM stage has an `llm:` block
whose key variable is set (unless its endpoint is on this machine). Every problem is reported,
each naming the pipeline key it comes from.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping
from urllib.parse import urlsplit

from fcbench.config import PipelineConfig
from fcbench.stage import pipeline_catalog
from fcbench.errors import UserError

_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}


@dataclass(frozen=True)
class ChainProblem:
    pipeline: str
    key: str  # the pipelines.yaml key the problem is about (dotted)
    message: str

    def __str__(self) -> str:
        return f"{self.pipeline}: {self.key}: {self.message}"


def check_pipeline(pipeline: PipelineConfig, environ: Mapping[str, str] | None = None) -> list[ChainProblem]:
    environ = os.environ if environ is None else environ
    problems: list[ChainProblem] = []

    def problem(key: str, message: str) -> None:
        problems.append(ChainProblem(pipeline.name, key, message))

    def must_exist(key: str, relative: str | None, what: str) -> None:
        if relative and not pipeline.resolve(relative).exists():
            problem(key, f"{pipeline.resolve(relative)}: no such {what}")

    stages = pipeline.stages
    declared = set(pipeline.declared_stages())
    try:
        catalog = pipeline_catalog(pipeline)
    except UserError as exc:
        problem("tools", str(exc))
        catalog = []
    environment = pipeline.environment
    if environment is None:
        problem("environment", "no environment: the filter and stage3 execute the gold paths in one")
    elif environment.kind == "python":
        if not environment.module:
            problem("environment.module", "a python environment needs the module implementing the tools")
        else:
            must_exist("environment.module", environment.module, "tool module")
    elif environment.kind in ("recorded", "http") and not environment.record:
        must_exist("environment.responses", environment.responses, "recorded store (record it first with --record)")
    elif environment.kind == "mcp":
        if environment.responses and not environment.record:
            must_exist("environment.responses", environment.responses, "recorded store (record it first with --record)")
        if environment.sandbox is not None and environment.sandbox.seed:
            must_exist("environment.sandbox.seed", environment.sandbox.seed, "sandbox seed folder")
    uses_llm = []
    if pipeline.kind == "conversation":
        conversation = pipeline.conversation
        if catalog is None:
            problem("tools", "a conversation pipeline samples its scenarios' APIs from the catalog: name one with `tools:`")
        if conversation is not None and conversation.offline:
            must_exist("conversation.value_pools", conversation.value_pools or stages.stage3.value_pools,
                       "value pools file (the values the rule-based simulator's users state)")
        elif pipeline.llm is None:
            problem("conversation.offline", "drafting conversations needs an LLM: add `llm:` or set conversation.offline")
        else:
            uses_llm.append("stage1 (conversations)")
        if environment is not None and environment.kind == "simulated":
            uses_llm.append("the response simulator (environment kind simulated)")
        declared -= {"stage1", "stage3"}  # a conversation pipeline has neither (fcbench.pipeline.run.CONVERSATION_STAGES)
    if "stage1" in declared:
        if catalog is None:
            problem("tools", "stage1 samples tools from the catalog: name one with `tools:`")
        if stages.stage1.offline:
            pools = stages.stage3.value_pools
            default_pools = pipeline.dataset_path / "value_pools.json"
            if pools:
                must_exist("stages.stage3.value_pools", pools, "value pools file (the graph sampler's start values)")
            elif not default_pools.exists() and pipeline.llm is None:
                problem("stages.stage1.offline", f"{default_pools}: no value pools for the graph sampler's start values")
        else:
            uses_llm.append("stage1")
    if "stage2" in declared:
        must_exist("stages.stage2.export_file", stages.stage2.export_file, "Label Studio export")
    if "stage3" in declared:
        if stages.stage3.fill == "slots":
            must_exist("stages.stage3.value_pools", stages.stage3.value_pools, "value pools file")
        elif stages.stage3.fill == "llm":
            uses_llm.append("stage3 (fill: llm)")
    if "filter" in declared and stages.filter.input:
        must_exist("stages.filter.input", stages.filter.input, "filter input")
    if uses_llm:
        if pipeline.llm is None:
            problem("llm", f"{', '.join(uses_llm)} need an LLM: add an `llm:` block (or set stages.stage1.offline / "
                           f"stages.stage3.fill: slots)")
        else:
            base_url = pipeline.llm.base_url or environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
            local = urlsplit(base_url).hostname in _LOCAL_HOSTS
            if not local and not environ.get(pipeline.llm.api_key_env):
                problem("llm.api_key_env", f"${pipeline.llm.api_key_env} is not set (the key for {', '.join(uses_llm)})")
    return problems
