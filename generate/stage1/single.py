"""`build-dataset stage1 PIPELINE`: coarse generation of drafts (a query and its call path).

For each of `stages.stage1.queries` drafts a tool subset is sampled from the catalog (seeded; within
one domain, or across two for a `cross_domain_ratio` share; sizes from `tool_subset_sizes`). Then:
- with an LLM: the model writes a query needing several dependent steps (prompts/stage1_query.txt),
  then drafts its path by function calling against the pipeline's environment (prompts/
  stage1_solve.txt): the tool calls of one answer are one step, each is executed and its response
  returned as a tool message, until the model answers in text or `max_steps` is reached;
- without one (no `llm:`, `--offline` or `stage1.offline: true`): the graph sampler
  (`generate.stage1.graph_sampler`) chains tools whose outputs feed later inputs.
Two other ways to plan drafts: `stages.stage1.difficulty_quotas` (CallNavi-style: each draft's
level, easy / medium / hard, is planned and its path checked against it; `generate.stage1.quotas`),
and `stages.stage1.from_seeds` (NESTful-style: drafts from seed examples, `generate.stage1.from_seeds`).
`candidates: domain | catalog` offers every tool of the draft's domain or of the catalog, up to
`candidate_tools_max`.
Output under the build folder: drafts.jsonl (canonical samples, each valid), drafts.rejects.jsonl
(why a draft could not be made, with the model's raw text), stage1.summary.json (counts, rejects by
reason, LLM tokens and cost). The same seed (and, with an LLM, the same cached answers) gives
byte-identical drafts.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from fcbench.catalog.openai import openai_tool_param
from fcbench.config import PipelineConfig
from fcbench.checks.constraints import PICKS_META, PickRulesError, PickSpec, load_pick_rules
from fcbench.stage import DRAFTS, pipeline_catalog
from fcbench.environments import Environment
from fcbench.environments.from_config import environment_for
from fcbench.errors import ItemRejected, UserError
from fcbench.json_values import json_leaves_with_paths
from fcbench.formats import read_samples
from fcbench.jsonl import StagedFile, iter_json_lines
from fcbench.llm.prompts import PromptFile
from fcbench.runtime.output_guard import finish_summary, place_guarded
from fcbench.runtime.progress import StageProgress, progress_of
from fcbench.references import format_reference
from fcbench.sample import Call, Provenance, Sample, Tool, path_shape, sample_to_dict
from fcbench.checks.validate import validate_record
from generate.stage1.graph_sampler import (DEFAULT_PHRASES, DeclaredFeedsError, DraftRequest, FeedGraph, PhraseBook,
                                           PlanFailed, ToolSubset, build_feed_graph, cross_domain_flags, load_declared_feeds,
                                           pool_advice, propose_draft, sample_tool_subset, tool_domain)
from generate.stage1.quotas import DERIVED, check_quotas, difficulty_plan, quota_counts, quota_subset, widened
from generate.common import PROMPTS, in_windows, user_query_parser, value_pools_path
from generate.slots import ValuePools, load_value_pools
from fcbench.stage import PipelineContext, StageSummary

QUERY_PROMPT = PROMPTS / "stage1_query.txt"
SOLVE_PROMPT = PROMPTS / "stage1_solve.txt"
PICK_RULES = "pick_rules.json"  # beside the tools: how a constraint may pick an entry (fcbench.checks.constraints)
FEEDS = "feeds.json"  # beside the tools: which outputs feed which inputs, when names do not say it (graph_sampler)
GRAPH_SAMPLER = "graph-sampler"
MAX_ATTEMPTS = 24  # offline tries per draft (a plan may pick places a tool refuses together)
WINDOW_DRAFTS = 64  # drafts made concurrently with an LLM (at least 4x its parallelism)


# ----------------------------------------------------------------------------------- files
@dataclass(frozen=True)
class Stage1Paths:
    drafts: Path
    rejects: Path
    summary: Path

    @classmethod
    def in_dir(cls, build_dir: Path) -> "Stage1Paths":
        return cls(build_dir / DRAFTS, build_dir / "drafts.rejects.jsonl", build_dir / "stage1.summary.json")


@dataclass
class Stage1Result:
    """What a run wrote: the drafts stay on disk, read back on demand."""

    drafts_path: Path
    rejects_path: Path
    summary: dict[str, Any]
    advice: list[str] = field(default_factory=list)  # offline: what in the value pools stops chains (shown, not written)

    @property
    def drafts(self) -> list[Sample]:
        return [item for item in read_samples(self.drafts_path, "fcbench") if isinstance(item, Sample)]

    @property
    def rejects(self) -> list[dict[str, Any]]:
        return [line.value for line in iter_json_lines(self.rejects_path) if line.error is None]


# --------------------------------------------------------------------------------- the stage
def run_stage1(pipeline: PipelineConfig, offline: bool = False, environment: Environment | None = None,
               force: bool = False) -> Stage1Result:
    """Generate the drafts and write the stage files. `environment`: an open one (tests), else the pipeline's.
    A result much smaller than the previous drafts keeps them (fcbench.runtime.output_guard) unless `force`.
    Streams: each draft is written as it is made, so memory does not grow with `queries`."""
    tools = _catalog(pipeline)
    use_llm = not (offline or pipeline.stages.stage1.offline or pipeline.llm is None)
    from_seeds = pipeline.stages.stage1.from_seeds is not None
    graph, pools = None, None
    if from_seeds:
        from generate.stage1 import from_seeds as seeds_generator

        seeds_generator.read_seeds(pipeline)  # a missing or empty seeds file is an error before anything runs
    else:
        pools = _value_pools(pipeline, required=not use_llm)
        try:
            declared = load_declared_feeds(pipeline.dataset_path / FEEDS, tools)
        except DeclaredFeedsError as exc:
            raise UserError(str(exc)) from None
        with StageProgress("stage1 feed graph (tools linked)", len(tools)) as linking:
            graph = build_feed_graph(tools, pools, declared, progress=linking.advance)
        quotas = pipeline.stages.stage1.difficulty_quotas
        if quotas is not None:
            if use_llm:
                raise UserError("stages.stage1.difficulty_quotas plans each draft's calls: it needs the offline "
                                "graph sampler (stages.stage1.offline: true or --offline)")
            check_quotas(graph, quotas, pipeline.stages.stage1.queries, pipeline.stages.stage1.candidates)
    paths = Stage1Paths.in_dir(pipeline.build_dir)
    seeds_summary: dict[str, Any] | None = None
    with StagedFile(paths.drafts) as drafts, StagedFile(paths.rejects) as rejects:
        written = _Written(drafts, rejects)
        with environment_for(pipeline, [], environment) as opened:
            if from_seeds and use_llm:
                generator, (llm_summary, seeds_summary) = (pipeline.llm.model if pipeline.llm else ""), \
                    seeds_generator.run_llm(pipeline, tools, opened, written.add, draft_id)
            elif from_seeds:
                generator, llm_summary = seeds_generator.GENERATOR, None
                seeds_summary = seeds_generator.run_offline(pipeline, tools, opened, written.add, draft_id)
            else:
                generator, llm_summary = _generate(pipeline, tools, graph, pools, opened, use_llm, written)
        guarded = place_guarded(drafts, rejects, force=force, min_share=pipeline.min_output_share)
    summary = _summary(pipeline, written, generator, use_llm, llm_summary)
    if seeds_summary is not None:
        summary["seeds"] = seeds_summary
    finish_summary(guarded, summary, {"drafts": paths.drafts, "rejects": paths.rejects}, paths.summary)
    advice = [] if use_llm or graph is None or pools is None else pool_advice(graph, pools, str(value_pools_path(pipeline)))
    return Stage1Result(guarded.path(paths.drafts), guarded.path(paths.rejects), summary, advice)


@dataclass
class _Written:
    """The stage's output files as they are written, and the counts its summary needs."""

    drafts: StagedFile
    rejects: StagedFile
    cross_domain: int = 0
    calls: int = 0
    difficulty: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)

    def add(self, outcome: Sample | dict[str, Any] | None) -> None:
        """A draft (written when valid, else a reject), a reject, or None (no draft to make)."""
        if isinstance(outcome, Sample):
            problems = validate_record(sample_to_dict(outcome))
            if problems:
                outcome = {"id": outcome.id, "reason": "stage1.invalid_draft",
                           "detail": "; ".join(f"{where}: {message}" for where, message in problems[:3]),
                           "sample": sample_to_dict(outcome)}
            else:
                self.drafts.write_json_line(sample_to_dict(outcome))
                shape = path_shape(outcome)
                self.cross_domain += bool(outcome.meta.get("stage1", {}).get("cross_domain"))
                self.calls += shape.n_calls
                self.difficulty[shape.difficulty.value] += 1
                return
        if outcome is not None:
            self.rejects.write_json_line(outcome)
            self.reasons[outcome["reason"]] += 1


def _catalog(pipeline: PipelineConfig) -> list[Tool]:
    tools = pipeline_catalog(pipeline)
    if tools is None:
        raise UserError(f"pipeline {pipeline.name!r} names no tool catalog: set `tools:` in pipelines.yaml")
    return tools


def _value_pools(pipeline: PipelineConfig, required: bool) -> ValuePools:
    path = value_pools_path(pipeline)
    if path.is_file():
        return load_value_pools(path)
    if required:
        raise UserError(f"{path}: no such file (the offline graph sampler draws start arguments from the value "
                        f"pools; set stages.stage3.value_pools or configure `llm:`)")
    return ValuePools({}, str(path))


def phrases_path(pipeline: PipelineConfig) -> Path:
    """A benchmark may ship its own phrase templates beside its tools."""
    own = pipeline.dataset_path / "phrases.txt"
    return own if own.is_file() else DEFAULT_PHRASES


def _generate(pipeline: PipelineConfig, tools: list[Tool], graph: FeedGraph, pools: ValuePools,
              environment: Environment, use_llm: bool, written: _Written) -> tuple[str, dict[str, Any] | None]:
    """Make every draft into `written`; returns who generated them and the LLM's summary."""
    subsets = _subsets(pipeline, graph, use_llm)
    if use_llm:
        return (pipeline.llm.model if pipeline.llm else ""), _run_llm(pipeline, tools, subsets, environment, written)
    _run_offline(pipeline, tools, graph, pools, subsets, environment, written)
    return GRAPH_SAMPLER, None


# The tool subset of each draft, or the reason none could be sampled, made as the drafts are.
SubsetOrReject = tuple[int, "ToolSubset | dict[str, Any]"]


def _subsets(pipeline: PipelineConfig, graph: FeedGraph, use_llm: bool) -> Iterator[SubsetOrReject]:
    settings = pipeline.stages.stage1
    if settings.difficulty_quotas is not None:  # CallNavi-style: the level of each draft is planned
        for index, level in enumerate(difficulty_plan(settings.queries, settings.difficulty_quotas, pipeline.seed)):
            try:
                yield index, quota_subset(index, level, graph, settings.tool_subset_sizes, settings.candidates,
                                          settings.candidate_tools_max, pipeline.seed)
            except PlanFailed as exc:
                yield index, {"id": draft_id(pipeline, index), "reason": "stage1.no_tool_subset", "detail": str(exc),
                              "difficulty": level}
        return
    for index, cross in enumerate(cross_domain_flags(settings.queries, settings.cross_domain_ratio, pipeline.seed)):
        try:
            subset = sample_tool_subset(index, cross, graph, settings.tool_subset_sizes, pipeline.seed,
                                        plannable_only=not use_llm, chain_bias=settings.chain_bias)
            if settings.candidates != "subset":  # every tool of the draft's domain(s), or of the catalog, up to the cap
                subset = widened(subset, graph, settings.candidates, settings.candidate_tools_max)
            yield index, subset
        except PlanFailed as exc:
            yield index, {"id": draft_id(pipeline, index), "reason": "stage1.no_tool_subset", "detail": str(exc)}


def draft_id(pipeline: PipelineConfig, index: int) -> str:
    return f"{pipeline.name}-draft-{index + 1:04d}"


def _summary(pipeline: PipelineConfig, written: _Written, generator: str, use_llm: bool,
             llm_summary: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "pipeline": pipeline.name,
        "mode": "llm" if use_llm else "offline",
        "generator": generator,
        "seed": pipeline.seed,
        "requested": pipeline.stages.stage1.queries,
        "counts": {"drafts": written.drafts.lines, "rejected": written.rejects.lines,
                   "cross_domain": written.cross_domain, "nested": written.difficulty["nested"],
                   "calls": written.calls},
        "difficulty": dict(sorted(written.difficulty.items())),
        "reasons": dict(sorted(written.reasons.items())),
        "llm": llm_summary,
        **({"quotas": _quota_summary(pipeline, written)} if pipeline.stages.stage1.difficulty_quotas else {}),
    }


def _quota_summary(pipeline: PipelineConfig, written: _Written) -> dict[str, dict[str, int]]:
    """Per CallNavi level: drafts asked by the quota and drafts made (the others are rejects)."""
    asked = quota_counts(pipeline.stages.stage1.queries, pipeline.stages.stage1.difficulty_quotas or {})
    return {level: {"asked": asked[level], "made": written.difficulty[DERIVED[level]]} for level in asked}


# ------------------------------------------------------------------------------ offline path
def _run_offline(pipeline: PipelineConfig, tools: list[Tool], graph: FeedGraph, pools: ValuePools,
                 subsets: Iterator[SubsetOrReject], environment: Environment, written: _Written) -> None:
    phrases_file = PromptFile.load(phrases_path(pipeline), pipeline.resolve("."))
    phrases = PhraseBook.parse(phrases_file.text)
    try:
        picks = load_pick_rules(pipeline.dataset_path / PICK_RULES)
    except PickRulesError as exc:
        raise UserError(str(exc)) from None
    max_steps = pipeline.stages.stage1.max_steps
    journeys: dict[str, bool] = {}
    seen_queries: set[str] = set()
    with StageProgress("stage1 drafts", pipeline.stages.stage1.queries) as progress:
        for index, subset in subsets:
            written.add(subset if isinstance(subset, dict) else
                        _offline_outcome(pipeline, index, subset, tools, graph, pools, phrases, phrases_file,
                                         environment, max_steps, journeys, seen_queries, picks))
            progress.advance()


def _offline_outcome(pipeline: PipelineConfig, index: int, subset: ToolSubset, tools: list[Tool], graph: FeedGraph,
                     pools: ValuePools, phrases: PhraseBook, phrases_file: PromptFile, environment: Environment,
                     max_steps: int, journeys: dict[str, bool], seen_queries: set[str],
                     picks: Mapping[str, PickSpec] | None = None) -> Sample | dict[str, Any]:
    """One draft by the graph sampler, or why none could be made; `journeys` and `seen_queries`
    carry what earlier drafts used, so drafts do not repeat each other."""
    offered = [tool for tool in tools if tool.name in subset.tools]
    failures: Counter[str] = Counter()
    for attempt in range(MAX_ATTEMPTS):
        request = DraftRequest(subset.goals, frozenset(subset.tools), frozenset(subset.domains),
                               f"{pipeline.seed}:stage1:{index}:{attempt}", max_steps, dict(journeys))
        try:
            with environment.for_sample() as sample_environment:  # a fresh sandbox per attempt (mcp)
                proposed = propose_draft(request, graph, pools, phrases, sample_environment, offered, picks)
        except PlanFailed as exc:
            failures[str(exc)] += 1
            continue
        if subset.difficulty is not None:  # CallNavi quota: the path must have the planned level
            shape = path_shape(Sample(id="probe", messages=[], tools=offered, calls=proposed.calls))
            if shape.difficulty.value != DERIVED[subset.difficulty]:
                failures[f"planned {subset.difficulty}, the path is {shape.difficulty.value}"] += 1
                continue
        plan = plan_key(proposed.calls)
        if proposed.query in seen_queries or plan in seen_queries:
            failures["the query repeats an earlier draft"] += 1
            continue
        seen_queries |= {proposed.query, plan}
        journeys.update(proposed.journeys)
        return _offline_sample(pipeline, index, subset, offered, proposed.query, proposed.calls, phrases_file,
                               attempt + 1, proposed.picks)
    return {"id": draft_id(pipeline, index), "reason": "stage1.no_executable_path",
            "detail": f"{MAX_ATTEMPTS} attempts; most frequent problem: {failures.most_common(1)[0][0]}",
            "goals": list(subset.goals), "sampled_tools": list(subset.tools)}


def plan_key(calls: Sequence[Sequence[Call]]) -> str:
    """What a draft asks for, whatever its words: two drafts with the same calls are one request."""
    return json.dumps([[(call.name, call.arguments) for call in step] for step in calls], sort_keys=True, default=str)


def _draft_domain(tools: Sequence[Tool], calls: Sequence[Sequence[Call]]) -> str | list[str]:
    used = {call.name for step in calls for call in step}
    domains = list(dict.fromkeys(tool_domain(tool) for tool in tools if tool.name in used))
    return domains[0] if len(domains) == 1 else domains


def _offline_sample(pipeline: PipelineConfig, index: int, subset: ToolSubset, offered: list[Tool], query: str,
                    calls: list[list[Call]], phrases: PromptFile, attempts: int,
                    picks: Sequence[dict[str, Any]] = ()) -> Sample:
    return Sample(
        id=draft_id(pipeline, index),
        domain=_draft_domain(offered, calls),
        messages=[{"role": "user", "content": query}],
        tools=offered,
        calls=calls,
        provenance=Provenance(stage="stage1", model=GRAPH_SAMPLER, prompt_file=phrases.shown_as,
                              prompt_hash=phrases.sha256, seed=pipeline.seed, sampled_tools=list(subset.tools)),
        meta={"stage1": {"cross_domain": subset.cross_domain, "goals": list(subset.goals), "attempts": attempts,
                         **({"planned_difficulty": subset.difficulty} if subset.difficulty else {})},
              **({PICKS_META: list(picks)} if picks else {})},
    )


# ---------------------------------------------------------------------------------- LLM path
def _run_llm(pipeline: PipelineConfig, tools: list[Tool], subsets: Iterator[SubsetOrReject],
             environment: Environment, written: _Written) -> dict[str, Any]:
    from fcbench.llm.cache import LLM_CACHE_FILE, RequestCache
    from fcbench.llm.client import LLMClient

    base = pipeline.resolve(".")
    prompts = (PromptFile.load(QUERY_PROMPT, base), PromptFile.load(SOLVE_PROMPT, base))
    assert pipeline.llm is not None  # checked by the caller

    async def draft(drafter: LLMDrafter, index: int, subset: ToolSubset | dict[str, Any]) -> Sample | dict[str, Any] | None:
        return subset if isinstance(subset, dict) else await drafter.draft(index, subset, tools)

    async def run_all() -> dict[str, Any]:
        cache = RequestCache(pipeline.build_dir / LLM_CACHE_FILE)
        try:
            async with LLMClient(pipeline.llm, cache, jitter_seed=pipeline.seed) as client:
                drafter = LLMDrafter(pipeline, client, environment, prompts)
                # drafts go in windows: their requests run concurrently, and each window's drafts
                # are written in order before the next window's subsets are sampled
                with StageProgress("stage1 drafts", pipeline.stages.stage1.queries) as progress:
                    for window in in_windows(subsets, max(WINDOW_DRAFTS, 4 * client.parallelism)):
                        for outcome in await asyncio.gather(*(progress_of(draft(drafter, index, subset), progress)
                                                              for index, subset in window)):
                            written.add(outcome)
                return client.summary()
        finally:
            cache.close()

    return asyncio.run(run_all())


@dataclass
class LLMDrafter:
    pipeline: PipelineConfig
    client: Any  # fcbench.llm.client.LLMClient
    environment: Environment
    prompts: tuple[PromptFile, PromptFile]
    failed_calls: Counter[str] = field(default_factory=Counter)

    async def draft(self, index: int, subset: ToolSubset, catalog: Sequence[Tool]) -> Sample | dict[str, Any]:
        sample_id = draft_id(self.pipeline, index)
        offered = [tool for tool in catalog if tool.name in subset.tools]
        try:
            query = await self._write_query(index, offered)
            with self.environment.for_sample() as environment:  # the draft's calls see each other's effects only
                calls, final_text, failed = await self._solve(index, query, offered, environment)
        except ItemRejected as reject:
            record = {"id": sample_id, "reason": reject.reason, "detail": reject.detail, "sampled_tools": list(subset.tools)}
            if reject.raw_text is not None:
                record["raw"] = reject.raw_text
            return record
        query_prompt, solve_prompt = self.prompts
        return Sample(
            id=sample_id,
            domain=_draft_domain(offered, calls),
            messages=[{"role": "user", "content": query}],
            tools=offered,
            calls=reference_earlier_outputs(calls, query),
            provenance=Provenance(stage="stage1", model=self.client.config.model, prompt_file=query_prompt.shown_as,
                                  prompt_hash=query_prompt.sha256, seed=self.pipeline.seed, sampled_tools=list(subset.tools)),
            meta={"stage1": {"cross_domain": subset.cross_domain, "final_text": final_text, "failed_calls": failed,
                             "prompts": {query_prompt.shown_as: query_prompt.sha256, solve_prompt.shown_as: solve_prompt.sha256},
                             "llm": self.client.provenance()}},
        )

    async def _write_query(self, index: int, offered: Sequence[Tool]) -> str:
        from fcbench.llm.client import ChatRequest, LLMRejection

        prompt = self.prompts[0]
        specs = json.dumps([openai_tool_param(tool) for tool in offered], ensure_ascii=False, indent=1)
        text = prompt.render(tools=specs, min_calls=str(min(3, max(2, len(offered)))))
        request = ChatRequest(messages=[{"role": "user", "content": text}], response_format={"type": "json_object"},
                              sample_index=index, prompt_hash=prompt.sha256)
        outcome = await self.client.complete(request, user_query_parser(offered))
        if isinstance(outcome, LLMRejection):
            raise ItemRejected("stage1.unusable_query", outcome.reason, outcome.raw_text)
        return outcome.parsed

    async def _solve(self, index: int, query: str, offered: Sequence[Tool],
                     environment: Environment) -> tuple[list[list[Call]], str, list[str]]:
        """The function-calling loop: one step per answer with tool calls, until a text answer."""
        from fcbench.llm.client import ChatRequest, LLMRejection, assistant_message, tool_call_ids, tool_message

        prompt = self.prompts[1]
        names = {tool.name for tool in offered}
        specs = [openai_tool_param(tool) for tool in offered]
        messages: list[dict[str, Any]] = [{"role": "system", "content": prompt.text}, {"role": "user", "content": query}]
        steps: list[list[Call]] = []
        failed: list[str] = []
        max_steps = self.pipeline.stages.stage1.max_steps
        for turn in range(max_steps + 1):
            request = ChatRequest(messages=list(messages), tools=specs, sample_index=index, prompt_hash=prompt.sha256)
            outcome = await self.client.complete(request)
            if isinstance(outcome, LLMRejection):
                raise ItemRejected("stage1.llm_failed", outcome.reason, outcome.raw_text)
            completion = outcome.completion
            if not completion.tool_calls:
                if not steps:
                    raise ItemRejected("stage1.no_calls", "the model answered without calling a tool", completion.raw_text)
                return steps, completion.content or "", failed
            if turn == max_steps:
                raise ItemRejected("stage1.max_steps", f"still calling tools after max_steps={max_steps} steps",
                              completion.raw_text)
            planned = [(call, _tool_arguments(call, names)) for call in completion.tool_calls]
            outcomes = environment.call_step([(call.name, arguments) for call, arguments in planned])
            ids = tool_call_ids(completion.tool_calls, turn)
            messages.append(assistant_message(completion, ids))
            step = []
            for call_id, (call, arguments), result in zip(ids, planned, outcomes):
                messages.append(tool_message(call_id, result.response if result.ok else {"error": result.error}))
                if result.ok:
                    step.append(Call(label=f"var_{sum(map(len, steps)) + len(step) + 1}", name=call.name,
                                     arguments=arguments, response=result.response))
                else:  # the model sees the error and may correct itself; the failed call is no part of the path
                    failed.append(f"{call.name}: {result.reason.value if result.reason else 'error'}: {result.error}")
            if step:
                steps.append(step)
        raise AssertionError("unreachable: the loop returns or rejects at max_steps")


def _tool_arguments(call: Any, names: set[str]) -> dict[str, Any]:
    if call.name not in names:
        raise ItemRejected("stage1.unknown_tool", f"the model called {call.name!r}, which is not among the offered tools",
                      json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False))
    try:
        arguments = json.loads(call.arguments or "{}")
    except json.JSONDecodeError as exc:
        raise ItemRejected("stage1.bad_tool_arguments", f"{call.name}: arguments are not JSON ({exc.msg})",
                      call.arguments) from None
    if not isinstance(arguments, dict):
        raise ItemRejected("stage1.bad_tool_arguments", f"{call.name}: arguments are not a JSON object", call.arguments)
    return arguments


# ------------------------------------------------------------- literal values -> references
def _worth_referencing(value: Any, query: str) -> bool:
    """Ids, tokens, slugs and coordinates: values a user does not say and a response gives."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, str):
        return len(value) >= 3 and value.lower() not in query.lower()
    if isinstance(value, float):
        return str(value) not in query
    if isinstance(value, int):
        return abs(value) >= 1000 and str(value) not in query
    return False


def _reference_to(value: Any, seen: list[tuple[str, list[tuple[tuple[str | int, ...], Any]]]], query: str) -> Any:
    """The reference to the first earlier answer holding `value` (anywhere in it), or the value."""
    if not _worth_referencing(value, query):
        return value
    for label, leaves in seen:
        path = next((p for p, leaf in leaves if leaf == value and type(leaf) is type(value)), None)
        if path is not None:
            return format_reference(label, path)
    return value


def reference_earlier_outputs(steps: list[list[Call]], query: str) -> list[list[Call]]:
    """The model copies values out of responses; write each such value as a `$label.path$`
    reference to the first earlier response holding it, so the path records what feeds what."""
    seen: list[tuple[str, list[tuple[tuple[str | int, ...], Any]]]] = []
    rewritten = []
    for step in steps:
        new_step = []
        for call in step:
            arguments = {}
            for name, value in call.arguments.items():
                if isinstance(value, list) and value and all(not isinstance(item, (dict, list)) for item in value):
                    # a list of ids (`hotelIds`), each copied out of an earlier answer
                    arguments[name] = [_reference_to(item, seen, query) for item in value]
                else:
                    arguments[name] = _reference_to(value, seen, query)
            new_step.append(call.model_copy(update={"arguments": arguments}))
        rewritten.append(new_step)
        seen.extend((call.label, list(json_leaves_with_paths(call.response))) for call in step)
    return rewritten


def run(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    """The stage contract (fcbench.stage): drafts by the LLM, or by the graph sampler when the
    pipeline or this run is offline."""
    offline = not ctx.uses_llm or ctx.config.stages.stage1.offline
    result = run_stage1(ctx.config, offline=offline, force=ctx.force)
    return StageSummary.of("stage1", result.summary, report=result)
