"""`pipelines.yaml`: the declared pipelines and their stage settings, as typed models.

Every model forbids unknown keys, so a typo (`querys: 40`) is an error instead of a silently
ignored setting. Errors name the file and the line of the offending node:

    pipelines.yaml:12: pipelines.travel.stages.stage1.queries: expected an integer

which is why the file is composed into YAML nodes (they keep their marks) before being turned
into Python values, and pydantic's error locations are walked back through those nodes.
Paths in the file are relative to the file itself, not to the working directory.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (BaseModel, ConfigDict, Field, PrivateAttr, StringConstraints, ValidationError,
                      field_validator, model_validator)

from fcbench.errors import ConfigError, UserError

DEFAULT_PIPELINES_FILE = Path("pipelines.yaml")
PIPELINE_NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]*$"  # used as a CLI argument and a folder name



class _Config(BaseModel):
    # strict: YAML already types its values, so "5" (a quoted string) is not silently an int.
    model_config = ConfigDict(extra="forbid", strict=True)


# ---------------------------------------------------------------------------------------- sections
class RayConfig(_Config):
    """Where `backend: ray` runs python tools. Without `address` the command starts a local Ray
    cluster on 127.0.0.1 and stops it when done; with one (`ray://host:10001`, `host:6379` or
    `auto`) it joins that cluster, whose nodes must have fcbench installed and the tool module
    at the same path."""

    address: str | None = None
    # a local cluster's CPUs (default: `environment.workers`); on an existing cluster, at most this
    # many actors (default: one per CPU of the cluster)
    num_cpus: int | None = Field(None, ge=1, le=4096)
    paths_per_task: int = Field(256, ge=1, le=1_000_000)  # gold paths per Ray task (one batch)
    max_retries: int = Field(3, ge=0, le=100)  # resubmissions of a batch whose Ray worker died
    object_store_mb: int = Field(100, ge=75, le=1_000_000)  # local cluster only (Ray's minimum is 75 MB)


class McpServerConfig(_Config):
    """One MCP server of an `mcp` environment: a command started over stdio (one per worker), or
    the URL of a streamable-HTTP server. In `command`, `args` and `env`, `{sandbox}` is the
    worker's sandbox folder (fresh for every sample); commands run in the pipelines file's folder."""

    command: str | None = None  # stdio: the program (a relative path with a '/' is taken from the pipelines file's folder)
    args: list[str] = Field(default_factory=list)
    # added to the minimal environment the SDK passes on; `${NAME}` is read from fcbench's own
    # environment when the server starts (a token is written as `${GITHUB_TOKEN}`, never as itself)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None  # streamable HTTP: http://host:port/mcp (shared by every worker; its state cannot be reset)
    # stateful: a call may change what later calls see (a memory graph, files): recordings are keyed
    # by the sample's earlier calls to this server, and each sample gets a fresh sandbox.
    # false: every answer depends on the call alone (the time server).
    stateful: bool = True
    # how a sample starts from a clean state: `files` (the sandbox folder is emptied and re-seeded;
    # the server re-reads it), or `restart` (also restart the server: state it keeps in memory)
    reset: Literal["files", "restart"] = "files"
    # a result without structuredContent: `auto` parses its text as JSON when it is JSON, else keeps
    # the text; `json` requires JSON (else unexpected_response); `python` reads a Python literal
    # (sqlite's rows); `text` keeps the text
    text_results: Literal["auto", "json", "python", "text"] = "auto"
    # a regular expression: a text result that matches it is a tool error (servers that report
    # errors with isError false, such as sqlite's "Error: ...")
    error_text: str | None = None
    init_timeout_s: float = Field(30.0, gt=0, le=3600)  # starting and `initialize` + `tools/list`

    @model_validator(mode="after")
    def _command_or_url(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("an MCP server needs either `command` (stdio) or `url` (streamable HTTP)")
        if self.error_text is not None:
            try:
                re.compile(self.error_text)
            except re.error as exc:
                raise ValueError(f"error_text is not a regular expression: {exc}") from None
        return self


class SandboxConfig(_Config):
    """The per-sample state of an `mcp` environment: each worker has a folder (`{sandbox}`) that is
    emptied and filled from `seed` before each sample's first live call, so samples never see each
    other's writes and re-executing a sample gives the same answers."""

    seed: str | None = None  # a folder copied into the sandbox (files, a memory.jsonl, ...)
    # sandbox-relative folder -> the fixed path responses show instead of the real temporary one
    # (and that arguments may use); so recordings do not carry temporary paths
    aliases: dict[str, str] = Field(default_factory=lambda: {".": "/sandbox"})

    @field_validator("aliases")
    @classmethod
    def _absolute_aliases(cls, aliases: dict[str, str]) -> dict[str, str]:
        for folder, alias in aliases.items():
            if not alias.startswith("/") or alias.rstrip("/") == "":
                raise ValueError(f"alias of {folder!r} must be an absolute path other than '/', got {alias!r}")
            if folder.startswith("/") or ".." in Path(folder).parts:
                raise ValueError(f"{folder!r}: alias keys are folders inside the sandbox")
        return aliases


class EnvironmentConfig(_Config):
    """Where tool calls are executed: Python implementations, recorded responses, an HTTP API, or
    MCP servers."""

    # simulated: no implementation; the pipeline's LLM answers each call from the tool's
    # description and output schema (CONFETTI's response simulator), every answer cached
    kind: Literal["python", "recorded", "http", "simulated", "mcp"]
    module: str | None = None  # python: the file implementing the tools
    # recorded: the recorded-calls file; http and mcp: the store it records into / replays
    responses: str | None = None
    servers: dict[str, McpServerConfig] | None = None  # mcp: the servers, by the name the catalog's tools give
    sandbox: SandboxConfig | None = None  # mcp: the per-sample sandbox of stateful servers
    base_url: str | None = None  # http: the API the tools call (replaces each description's server URL)
    base_urls: dict[str, str] | None = None  # http: one server per description (file stem -> URL)
    auth_env: str | None = None  # http: the environment variable holding the API token (sent in a header)
    auth_header: str = "Authorization"  # http: the header the token goes in
    auth_scheme: str = "Bearer"  # http: the word before the token ("" for the bare token)
    # http: where the token goes: a header named auth_header, or (an OpenAPI apiKey scheme) the query
    # parameter or cookie named auth_header
    auth_in: Literal["header", "query", "cookie"] = "header"
    max_per_host: int = Field(8, ge=1, le=1024)  # http: requests in flight per host
    retries: int = Field(3, ge=0, le=100)  # http: retries on 429/5xx/transport errors (backoff, Retry-After)
    max_response_mb: float = Field(10.0, gt=0, le=10_000)  # http: a larger response is reported, not kept
    # http, mcp: call the server and record (what `--record` sets); default: replay offline (an mcp
    # environment without `responses` always calls its servers)
    record: bool = False
    timeout_s: float = Field(10.0, gt=0, le=3600)  # seconds per call
    memory_mb: int = Field(512, ge=16, le=1_048_576)  # MiB per worker
    # python: what tools may see and write beyond their sandbox (fcbench/environments/sandbox.py):
    # environment variables besides the allow-list, folders besides their private one, file size cap
    pass_env: list[str] = Field(default_factory=list)
    writable: list[str] = Field(default_factory=list)
    max_file_mb: int = Field(256, ge=1, le=1_048_576)
    workers: int = Field(2, ge=1, le=1024)
    # python only: `local` = the worker pool of this machine; `ray` = the same workers driven by
    # Ray tasks (see `ray:`), for clusters
    backend: Literal["local", "ray"] = "local"
    ray: RayConfig = Field(default_factory=RayConfig)

    @model_validator(mode="after")
    def _kind_has_its_source(self) -> EnvironmentConfig:
        # http: calls are replayed from `responses` unless a run records (`--record`), so the store is
        # what it needs; the server comes from base_url(s) or the descriptions
        needed = {"python": "module", "recorded": "responses", "http": "responses", "simulated": None,
                  "mcp": "servers"}[self.kind]
        if needed is not None and not getattr(self, needed):
            raise ValueError(f"environment kind {self.kind!r} needs {needed!r}")
        if self.kind != "mcp" and (self.servers is not None or self.sandbox is not None):
            raise ValueError(f"`servers` and `sandbox` are settings of environment kind 'mcp', not {self.kind!r}")
        if self.backend == "ray" and self.kind != "python":
            raise ValueError(f"backend 'ray' runs python tools; kind {self.kind!r} needs backend 'local'")
        return self


class PricesConfig(_Config):
    """USD per million tokens, to report what a run cost."""

    input_per_million: float = Field(0.0, ge=0)
    output_per_million: float = Field(0.0, ge=0)
    batch_discount: float = Field(0.5, ge=0, le=1)  # Batch API price as a share of the online price


class BatchConfig(_Config):
    """The OpenAI Batch API (`llm.mode: batch`): limits of one input file, and polling."""

    max_requests_per_file: int = Field(50_000, ge=1, le=50_000)
    max_bytes_per_file: int = Field(200_000_000, ge=1_000, le=200_000_000)
    completion_window: Literal["24h"] = "24h"
    poll_interval_s: float = Field(5.0, gt=0, le=3600)  # first wait; grows 1.5x a poll
    max_poll_interval_s: float = Field(120.0, gt=0, le=3600)
    gather_window_s: float = Field(0.05, ge=0, le=60)  # requests arriving this close together share a batch


class LLMConfig(_Config):
    """An OpenAI-compatible endpoint. The key is read from the environment variable named by
    `api_key_env`: a key written in the file would end up in git and in provenance."""

    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    api_key: Any = Field(None, exclude=True, description="Refused: name an environment variable instead.")
    temperature: float = Field(0.0, ge=0, le=2)
    seed: int | None = None
    max_tokens: int = Field(1024, gt=0, le=1_000_000)
    concurrency: int = Field(4, ge=1, le=10_000)
    max_retries: int = Field(5, ge=0, le=100)
    # The model's context window in tokens (cl100k_base, fcbench.stats.tokens): `evaluate` sends no
    # request above it and records that sample as `context_overflow`. None: no limit is checked.
    context_window: int | None = Field(None, gt=0, le=100_000_000)
    prices: PricesConfig = Field(default_factory=PricesConfig)
    # online: one HTTP request per call; batch: the stage's requests go through the Batch API
    # (half the price, answers within the completion window), into the same request cache.
    mode: Literal["online", "batch"] = "online"
    batch: BatchConfig = Field(default_factory=BatchConfig)

    @field_validator("api_key", mode="before")
    @classmethod
    def _refuse_literal_key(cls, value: Any) -> Any:
        raise ValueError("an API key may not be written in the file; put it in an environment "
                         "variable and name that variable with api_key_env")


class FromSeedsConfig(_Config):
    """NESTful-style generation from seed examples (`generate.stage1.from_seeds`): offline, each
    draft re-instantiates one seed's call structure (which call reads which earlier result) with
    new values and writes its query from `phrases`; with an LLM, the model is shown `few_shot`
    seeds and writes a new question and its call sequence, which is executed."""

    file: str  # the seed samples (any format `convert` reads; canonical JSON Lines here)
    phrases: str | None = None  # offline: how a query names each tool's result (JSON, see datasets/nestful-gen)
    few_shot: int = Field(3, ge=1, le=20)  # LLM: seed examples per prompt
    max_calls: int = Field(12, ge=2, le=100)  # a seed structure longer than this (after merging repeats) is skipped


class Stage1Config(_Config):
    """Coarse generation: queries from sampled tool subsets, then a drafted call path."""

    offline: bool = False  # True: graph sampler over the tools, no LLM
    queries: int = Field(100, ge=1, le=10_000_000)
    tool_subset_sizes: list[int] = Field(default_factory=lambda: [3, 5])
    cross_domain_ratio: float = Field(0.0, ge=0, le=1)
    max_steps: int = Field(6, ge=1, le=100)
    # offline sampler: a goal tool weighs its chain length to this power (higher: deeper paths)
    chain_bias: float = Field(2.0, ge=0, le=10)
    # NESTful-style: drafts made from seed examples instead of sampled tool subsets
    from_seeds: FromSeedsConfig | None = None
    # CallNavi-style: the share of drafts of each difficulty (easy = one call, medium = several
    # independent calls, hard = a call reads an earlier call's output; shares sum to 1, counts by
    # largest remainder); offline sampler only. None: whatever the sampler's goals give.
    difficulty_quotas: dict[Literal["easy", "medium", "hard"], float] | None = None
    # which tools a draft offers: `subset` (sampled sizes, ComplexFuncBench) or `domain` (every tool
    # of the draft's domain) or `catalog` (every tool): CallNavi offers a domain's whole catalog
    candidates: Literal["subset", "domain", "catalog"] = "subset"
    # the longest candidate list a draft may offer. 115 is CallNavi's stated maximum ("up to 115
    # candidates per domain", a secondary summary of the paper); the published catalogs have at most
    # 101 APIs (telecommunications), and 115 is also the number of bank questions
    # (docs: builders notes §2.1). Was a fixed 100.
    candidate_tools_max: int = Field(115, ge=1, le=10_000)
    # the graph sampler's start values; default stages.stage3.value_pools (a pipeline without a
    # stage3, such as a CallNavi-style one, names them here)
    value_pools: str | None = None

    @field_validator("tool_subset_sizes")
    @classmethod
    def _positive_sizes(cls, sizes: list[int]) -> list[int]:
        if not sizes or any(size < 1 for size in sizes):
            raise ValueError("expected a non-empty list of sizes, each at least 1 tool")
        return sizes

    @field_validator("difficulty_quotas")
    @classmethod
    def _quotas_sum_to_one(cls, quotas: dict[str, float] | None) -> dict[str, float] | None:
        if quotas is None:
            return None
        if not quotas or any(not 0 <= share <= 1 for share in quotas.values()):
            raise ValueError("expected at least one difficulty, each with a share in [0, 1]")
        if not math.isclose(sum(quotas.values()), 1.0, abs_tol=1e-9):
            raise ValueError(f"difficulty shares must sum to 1, got {sum(quotas.values()):g}")
        return quotas

    @model_validator(mode="after")
    def _sizes_within_the_cap(self) -> Stage1Config:
        too_large = [size for size in self.tool_subset_sizes if size > self.candidate_tools_max]
        if too_large:
            raise ValueError(f"tool_subset_sizes: {too_large[0]} is above candidate_tools_max ({self.candidate_tools_max})")
        return self


class Stage2Config(_Config):
    """Senior annotation in Label Studio."""

    select: int = Field(50, ge=1, le=10_000_000)  # drafts pushed for annotation
    project_title: str | None = None  # default: "<pipeline> stage2"
    export_file: str | None = None  # a Label Studio export to pull from instead of the server


class Stage3Config(_Config):
    """Generalization: query variants per template, arguments refilled along the same path."""

    variants: int = Field(3, ge=1, le=10_000)
    fill: Literal["llm", "slots", "annotators"] = "llm"
    value_pools: str | None = None  # slots: file of values per slot

    @model_validator(mode="after")
    def _slots_need_pools(self) -> Stage3Config:
        if self.fill == "slots" and self.value_pools is None:
            raise ValueError("fill 'slots' needs 'value_pools'")
        return self


class ToleranceConfig(_Config):
    absolute: float = Field(1e-6, ge=0)
    relative: float = Field(1e-6, ge=0)
    mode: Literal["tolerance", "round_to_gold"] = "tolerance"


class FilterConfig(_Config):
    """Execution-based filter of generalized candidates."""

    input: str | None = None  # the canonical file to filter; default <dataset_dir>/build/candidates.jsonl
    grounding: Literal["report", "reject"] = "report"  # argument values not grounded in the query
    repeat: int = Field(1, ge=1, le=100)  # executions per candidate, to catch non-deterministic tools
    tolerance: ToleranceConfig = Field(default_factory=ToleranceConfig)
    # calls that must read an earlier call's output (NESTful's nested calls); a sample with fewer
    # is rejected as gold.too_few_nested_calls. 0: any path shape is kept
    min_nested_calls: int = Field(0, ge=0, le=1000)
    # the gold audit (fcbench/checks/gold_audit.py): reject a path that does not do exactly what
    # its query asks (reasons gold.*), only note it on the kept sample (report), or skip it (off)
    gold_audit: Literal["reject", "report", "off"] = "reject"


class ExportConfig(_Config):
    """Parquet splits in Hugging Face layout, the dataset card, and copies in other formats."""

    # template (default): all variants of one template land in one split; ratio lets a template
    # cross splits (the card says so)
    split: Literal["ratio", "domain", "template"] = "template"
    ratios: dict[str, float] = Field(default_factory=lambda: {"test": 1.0})  # ratio and template splits
    shard_rows: int = Field(10_000, ge=1, le=100_000_000)  # at most this many rows per Parquet shard
    shard_bytes: int = Field(500_000_000, ge=1_000, le=100_000_000_000)  # and about this much uncompressed data (HF's max_shard_size)
    formats: list[str] = Field(default_factory=lambda: ["parquet"])
    task_categories: list[str] = Field(default_factory=lambda: ["text-generation"])  # dataset card metadata
    tags: list[str] = Field(default_factory=lambda: ["function-calling", "tool-use"])
    # a file of hand-checked samples (fcbench.export.handcheck): the card states the error rate
    # measured on its held-out part for this pipeline's build
    handcheck: str | None = None
    # kind: conversation: at most this many response-quality rows per dialog act and split (label
    # balance); off by default, as the published CONFETTI set, which keeps every agent turn
    max_per_dialog_act: int | None = Field(None, ge=1, le=10_000_000)

    @field_validator("ratios")
    @classmethod
    def _split_names_hugging_face_accepts(cls, ratios: dict[str, float]) -> dict[str, float]:
        bad = [name for name in ratios if not re.match(r"^\w+(\.\w+)*$", name)]
        if bad:
            raise ValueError(f"split names may hold only letters, digits, '_' and '.', got {bad[0]!r}")
        if any(not 0 < share <= 1 for share in ratios.values()):
            raise ValueError(f"each split's share must be in (0, 1], got {ratios}")
        return ratios

    @model_validator(mode="after")
    def _ratios_sum_to_one(self) -> ExportConfig:
        if self.split in ("ratio", "template"):  # both assign samples by the ratios
            if any(ratio < 0 for ratio in self.ratios.values()):
                raise ValueError("split ratios may not be negative")
            if not math.isclose(sum(self.ratios.values()), 1.0, abs_tol=1e-9):
                raise ValueError(f"split ratios must sum to 1, got {sum(self.ratios.values()):g}")
        return self


# The conversation types of CONFETTI (Alkhouli et al.; its README calls them complexities): what makes
# a conversation hard. fcbench's snake_case names; fcbench.conversation.CONFETTI_TYPES maps them to the
# README's UPPER_CASE names, and fcbench.checks.conversation_types holds each one's acceptance rule.
COMPLEXITIES = ("follow_up", "goal_correction", "goal_switching", "ambiguous_goal", "implicit_goal",
                "overfilled_parameters", "underfilled_parameters", "execution_exception", "goal_stacking",
                "confirmation", "goal_not_supported", "failed_conversation", "no_target")
Complexity = Literal["follow_up", "goal_correction", "goal_switching", "ambiguous_goal", "implicit_goal",
                     "overfilled_parameters", "underfilled_parameters", "execution_exception", "goal_stacking",
                     "confirmation", "goal_not_supported", "failed_conversation", "no_target"]


class ScenarioReviewConfig(_Config):
    """Scenarios reviewed in Label Studio before any conversation is drafted (`build-dataset
    scenarios push|pull`): reviewers accept, edit or reject each sampled scenario, and stage1
    drafts only the accepted and edited ones."""

    enabled: bool = False
    project_title: str | None = None  # default: "<pipeline> scenario review"
    export_file: str | None = None  # a Label Studio export stage1 reads the review from (unattended builds)


class ConversationConfig(_Config):
    """`kind: conversation` pipelines (CONFETTI-style): scenarios sampled from the catalog, then
    whole conversations drafted by a user simulator and an agent playing each scenario."""

    scenarios: int = Field(20, ge=1, le=10_000_000)
    api_subset_sizes: list[int] = Field(default_factory=lambda: [3, 4])  # APIs offered per scenario
    # target share of each required conversation type over the scenarios (shares sum to 1; every
    # scenario gets one type, counts follow the shares by largest remainder); a list of types
    # means equal shares
    complexities: dict[Complexity, float] = Field(default_factory=lambda: {"underfilled_parameters": 1.0})
    reference_time: str = "2025-06-01T09:00:00"  # the conversation's "now" (ISO 8601), stated in the scenario
    min_turns: int = Field(2, ge=1, le=100)  # user turns a conversation must have
    max_turns: int = Field(12, ge=2, le=200)  # turn cap: a simulator still talking after this is rejected (turn_cap)
    offline: bool = False  # True: template scenarios and the rule-based simulator, no LLM
    value_pools: str | None = None  # offline: the values users state (default: stages.stage3.value_pools)
    review: ScenarioReviewConfig = Field(default_factory=ScenarioReviewConfig)

    @field_validator("complexities", mode="before")
    @classmethod
    def _list_means_equal_shares(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        if not value or not all(isinstance(name, str) for name in value):
            raise ValueError("expected a list of conversation types (or a mapping of type to share)")
        repeated = sorted({name for name in value if value.count(name) > 1})
        if repeated:
            raise ValueError(f"{repeated[0]!r} is listed twice")
        return {name: 1 / len(value) for name in value}

    @field_validator("complexities")
    @classmethod
    def _shares(cls, shares: dict[str, float]) -> dict[str, float]:
        if not shares or any(not 0 < share <= 1 for share in shares.values()):
            raise ValueError("expected at least one conversation type, each with a share in (0, 1]")
        if not math.isclose(sum(shares.values()), 1.0, abs_tol=1e-9):
            raise ValueError(f"complexity shares must sum to 1, got {sum(shares.values()):g}")
        return shares

    @field_validator("api_subset_sizes")
    @classmethod
    def _api_sizes(cls, sizes: list[int]) -> list[int]:
        if not sizes or any(size < 1 or size > 100 for size in sizes):
            raise ValueError("expected a non-empty list of sizes, each from 1 to 100 APIs")
        return sizes

    @field_validator("reference_time")
    @classmethod
    def _iso_time(cls, value: str) -> str:
        from datetime import datetime

        try:
            datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"expected an ISO 8601 date and time, got {value!r}") from None
        return value

    @model_validator(mode="after")
    def _cap_above_minimum(self) -> ConversationConfig:
        if self.max_turns < self.min_turns:
            raise ValueError(f"max_turns ({self.max_turns}) is below min_turns ({self.min_turns})")
        return self


class StagesConfig(_Config):
    stage1: Stage1Config = Field(default_factory=Stage1Config)
    stage2: Stage2Config = Field(default_factory=Stage2Config)
    stage3: Stage3Config = Field(default_factory=Stage3Config)
    filter: FilterConfig = Field(default_factory=FilterConfig)
    export: ExportConfig = Field(default_factory=ExportConfig)


class PipelineConfig(_Config):
    description: str = ""
    dataset_dir: str
    seed: int = 0
    license: str | None = None
    domains: list[str] = Field(default_factory=list)
    tools: str | None = None  # tool catalog file, any shape `fcbench.catalog.load_tools_file` reads
    # a stage keeps its previous output when the new one has fewer samples than this share of it
    # (fcbench.runtime.output_guard; --force replaces it anyway)
    min_output_share: float = Field(0.5, ge=0, le=1)
    # a file read by this pipeline's stages whose share of unreadable lines is above this is refused
    # as a whole (fcbench.jsonl's bad-line policy; `build-dataset --max-bad-share` overrides it)
    max_bad_line_share: float = Field(0.5, ge=0, le=1)
    # megabytes of resident memory a stage of this pipeline may use before it stops with exit 1
    # (fcbench.runtime.memory; `build-dataset --memory-ceiling-mb` overrides it); the stages stream, so
    # this is a guard, not a budget they fill
    memory_ceiling_mb: int = Field(2048, ge=256, le=1_048_576)
    environment: EnvironmentConfig | None = None
    llm: LLMConfig | None = None
    # the LLM that judges `evaluate` (ComplexEval call equivalence, completeness, correctness: the
    # paper used GPT-4o); none: rule-based stand-ins, and the scores say so first
    judge: LLMConfig | None = None
    stages: StagesConfig = Field(default_factory=StagesConfig)
    # single: one query -> one gold path (stage1 .. stage3); conversation: CONFETTI-style
    # multi-turn conversations cut into turn-level samples (its own stages, fcbench.pipeline.run)
    kind: Literal["single", "conversation"] = "single"
    conversation: ConversationConfig | None = None

    _name: str = PrivateAttr("")
    _base_dir: Path = PrivateAttr(Path("."))

    @model_validator(mode="after")
    def _conversation_settings(self) -> PipelineConfig:
        if self.kind == "conversation" and self.conversation is None:
            self.conversation = ConversationConfig()
        if self.kind == "single" and self.conversation is not None:
            raise ValueError("`conversation:` settings need `kind: conversation`")
        if self.kind == "single" and self.stages.export.max_per_dialog_act is not None:
            raise ValueError("stages.export.max_per_dialog_act caps the response-quality set of `kind: conversation` "
                             "pipelines; a single-query pipeline has no dialog acts")
        if self.environment is not None and self.environment.kind == "simulated" and self.llm is None:
            raise ValueError("environment kind 'simulated' answers calls with the LLM: add an `llm:` block")
        return self

    @property
    def name(self) -> str:
        return self._name

    def resolve(self, relative: str) -> Path:
        """A path written in pipelines.yaml, made absolute against the file's folder."""
        return (self._base_dir / relative).resolve()

    @property
    def dataset_path(self) -> Path:
        return self.resolve(self.dataset_dir)

    @property
    def build_dir(self) -> Path:
        return self.dataset_path / "build"

    @property
    def tools_path(self) -> Path | None:
        return self.resolve(self.tools) if self.tools else None

    def declared_stages(self) -> list[str]:
        """The stages the file configures explicitly (the others run with defaults)."""
        return [name for name in StagesConfig.model_fields if name in self.stages.model_fields_set]


PipelineName = Annotated[str, StringConstraints(pattern=PIPELINE_NAME_PATTERN)]


class PipelinesFile(_Config):
    pipelines: dict[PipelineName, PipelineConfig] = Field(min_length=1)

    _path: Path = PrivateAttr(DEFAULT_PIPELINES_FILE)

    @property
    def path(self) -> Path:
        return self._path

    def get_pipeline(self, name: str) -> PipelineConfig:
        if name not in self.pipelines:
            raise UserError(f"{self._path}: no pipeline named {name!r}; declared: {', '.join(self.pipelines)}")
        return self.pipelines[name]


# ------------------------------------------------------------------------------- loading with lines
def load_pipelines(path: str | Path = DEFAULT_PIPELINES_FILE) -> PipelinesFile:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    root, data = _compose_and_construct(path)
    if not isinstance(data, dict):
        line = root.start_mark.line + 1 if root is not None else 1
        raise ConfigError([f"{path}:{line}: expected a mapping with a 'pipelines' key"])
    duplicates = list(_duplicate_keys(root, path))
    if duplicates:
        raise ConfigError(duplicates)
    try:
        config = PipelinesFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(validation_problems(exc, root, path)) from None
    config._path = path
    for name, pipeline in config.pipelines.items():
        pipeline._name = name
        pipeline._base_dir = path.resolve().parent
    return config


def _compose_and_construct(path: Path) -> tuple[yaml.Node | None, Any]:
    """The node tree (with line marks) and the Python values built from that same tree."""
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise ConfigError([f"{path}:{line}: not UTF-8 (byte 0x{raw[exc.start]:02x}); save the file as UTF-8"]) from None
    try:
        loader = yaml.SafeLoader(text)
    except yaml.YAMLError as exc:  # the reader refuses control characters such as NUL up front
        raise ConfigError([f"{path}:1: invalid YAML: {exc}"]) from None
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise ConfigError([f"{path}:{line}: invalid YAML: {exc.problem or exc.context}"]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([f"{path}:1: invalid YAML: {exc}"]) from None
    finally:
        loader.dispose()
    return root, data


def _duplicate_keys(node: yaml.Node | None, path: Path, where: str = "") -> list[str]:
    """YAML keeps the last of two equal keys silently; a config file should say it twice never."""
    problems: list[str] = []
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            dotted = f"{where}.{key}" if where else str(key)
            if key in seen:
                problems.append(f"{path}:{key_node.start_mark.line + 1}: {dotted}: duplicate key")
            seen.add(key)
            problems.extend(_duplicate_keys(value_node, path, dotted))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            problems.extend(_duplicate_keys(item, path, f"{where}[{index}]"))
    return problems


def _child(node: yaml.Node, part: str | int) -> tuple[yaml.Node | None, yaml.Node | None]:
    """(key node, value node) of `part` under a mapping or sequence node, or (None, None)."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if key_node.value == str(part):
                return key_node, value_node
    elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        return None, node.value[part]
    elif isinstance(node, yaml.SequenceNode):  # a list read as a mapping (conversation types): the item itself
        for item in node.value:
            if isinstance(item, yaml.ScalarNode) and item.value == str(part):
                return None, item
    return None, None


def locate(root: yaml.Node, loc: tuple[str | int, ...]) -> tuple[int, str]:
    """(1-based line, dotted path) of a pydantic error location in the node tree.

    The deepest node that exists gives the line: a missing key is reported at its parent
    mapping, an unknown key at the key itself.
    """
    node, line, text = root, root.start_mark.line + 1, ""
    for part in loc:
        if part == "[key]":  # pydantic's marker for an invalid dict key: the line is the key's own
            continue
        key_node, value_node = _child(node, part) if node is not None else (None, None)
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
        if value_node is None:
            node = None
            continue
        line = (key_node or value_node).start_mark.line + 1
        node = value_node
    return line, text or "(file)"


_TYPE_MESSAGES = {
    "int_type": "expected an integer",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "string_type": "expected a string",
    "list_type": "expected a list",
    "dict_type": "expected a mapping",
    "model_type": "expected a mapping",
    "model_attributes_type": "expected a mapping",
    "missing": "missing required key",
    "extra_forbidden": "unknown key",
}


def _message(error: dict[str, Any]) -> str:
    kind = error["type"]
    if kind in _TYPE_MESSAGES:
        return _TYPE_MESSAGES[kind]
    if kind == "string_pattern_mismatch" and "[key]" in error["loc"]:
        return "pipeline names are lowercase letters, digits, '-' and '_'"
    if kind == "too_short":
        return f"expected at least {error['ctx']['min_length']} entry"
    if kind == "literal_error" and "[key]" in error["loc"] and "complexities" in error["loc"]:
        import difflib

        close = difflib.get_close_matches(str(error["input"]), COMPLEXITIES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"unknown conversation type {error['input']!r}{hint}; known: {', '.join(COMPLEXITIES)}"
    if kind == "literal_error":
        return f"expected one of {error['ctx']['expected']}, got {error['input']!r}"
    message = str(error["msg"])
    if kind == "value_error":
        message = message.removeprefix("Value error, ")
    return message[:1].lower() + message[1:]


def validation_problems(exc: ValidationError, root: yaml.Node | None, path: Path) -> list[str]:
    """One `FILE:LINE: dotted.path: message` per pydantic error, in file order."""
    located = []
    for error in exc.errors():
        line, dotted = locate(root, tuple(error["loc"])) if root is not None else (1, "(file)")
        located.append((line, f"{path}:{line}: {dotted}: {_message(error)}"))
    return [text for _, text in sorted(located, key=lambda item: item[0])]
