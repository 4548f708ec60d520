"""`build-dataset stage1 PIPELINE` for `kind: conversation` pipelines: scenarios, then a drafted
conversation for each.

1. Scenarios (`generate.stage1.scenarios`): API subsets and complexities sampled to the distribution
   declared under `conversation:` in pipelines.yaml, a reference time and a minimum number of user
   turns; described by the LLM, or offline from templates.
   With `conversation.review.enabled`, stage1 stops after writing the scenarios until people have
   reviewed them (`build-dataset scenarios push|pull`, annotate/stage1): then it drafts only the
   scenarios the reviewers accepted or edited, as they left them (an LLM does not rewrite a
   reviewed description); one rejected in review is a `rejected_in_review` reject, one reviewed
   as another sampling gave it a `stale_review` reject, one not reviewed yet waits (counted).
2. Drafts: offline, the rule-based simulator (`generate.stage1.simulator`) plays each
   scenario against the environment; with an LLM, an LLM user simulator and an LLM agent
   (`generate.stage1.conversation_llm`) talk, the agent calling the APIs by function calling against the
   pipeline's environment (python, recorded, or `simulated`: the LLM answers from each tool's
   description and output schema). A simulator still talking at the turn cap is a `turn_cap`
   reject, an off-script LLM reply an `off_script` reject, each with the raw text.

Files under the build folder: scenarios.jsonl, drafts.jsonl (one conversation per line, canonical
samples), drafts.rejects.jsonl (scenario id, reason, detail) and stage1.summary.json. The same
seed (and, with an LLM, the same cached answers) gives byte-identical files.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from fcbench.config import PipelineConfig
from fcbench.stage import DRAFTS, REVIEWED_SCENARIOS, SCENARIOS, pipeline_catalog, read_reviewed_scenarios
from fcbench.conversation import (Scenario, conversation_sample, conversation_stats, scenario_hash, scenario_of,
                                  user_turns)
from fcbench.environments import Environment
from fcbench.errors import ItemRejected, UserError
from fcbench.jsonl import write_json, write_json_lines
from fcbench.llm.prompts import PromptFile
from fcbench.runtime.output_guard import guard_output
from fcbench.runtime.progress import StageProgress
from fcbench.sample import Provenance, Sample, Tool, sample_to_dict
from fcbench.checks.conversation_types import missing_types, type_reason
from fcbench.checks.validate import validate_record
from generate.common import value_pools_path
from generate.stage1.simulator import plan_for, simulate
from generate.stage1.graph_sampler import DEFAULT_PHRASES, PhraseBook, build_feed_graph
from generate.stage1.scenarios import offered_tools, sample_scenarios
from generate.slots import ValuePools, load_value_pools
from fcbench.stage import PipelineContext, StageSummary

RULE_BASED = "rule-based-simulator"
ATTEMPTS = 12  # offline plans tried per scenario (a plan may lack the value a complexity needs)


@dataclass(frozen=True)
class ConversationStage1Paths:
    scenarios: Path
    drafts: Path
    rejects: Path
    summary: Path

    @classmethod
    def in_dir(cls, build_dir: Path) -> "ConversationStage1Paths":
        return cls(build_dir / SCENARIOS, build_dir / DRAFTS, build_dir / "drafts.rejects.jsonl",
                   build_dir / "stage1.summary.json")


@dataclass
class ConversationStage1Result:
    scenarios: list[Scenario]
    drafts: list[Sample]
    rejects: list[dict[str, Any]]
    summary: dict[str, Any] = field(default_factory=dict)


def _catalog(pipeline: PipelineConfig) -> list[Tool]:
    tools = pipeline_catalog(pipeline)
    if tools is None:
        raise UserError(f"pipeline {pipeline.name!r} names no tool catalog: set `tools:` in pipelines.yaml")
    return tools


def _pools(pipeline: PipelineConfig, required: bool) -> ValuePools:
    declared = pipeline.conversation.value_pools if pipeline.conversation else None
    path = pipeline.resolve(declared) if declared else value_pools_path(pipeline)
    if path.is_file():
        return load_value_pools(path)
    if required:
        raise UserError(f"{path}: no such file (the offline simulator draws the values users state from the value "
                        f"pools; set conversation.value_pools or configure `llm:`)")
    return ValuePools({}, str(path))


def run_conversation_stage1(pipeline: PipelineConfig, offline: bool = False, environment: Environment | None = None,
                            force: bool = False) -> ConversationStage1Result:
    settings = pipeline.conversation
    assert settings is not None  # kind: conversation has its settings (fcbench.config)
    use_llm = not (offline or settings.offline or pipeline.llm is None)
    if offline and environment is None and pipeline.environment is not None and pipeline.environment.kind == "simulated":
        raise UserError(f"pipeline {pipeline.name!r}: environment kind 'simulated' answers calls with the LLM, "
                        "which --offline does not use: drop --offline, or use a python or recorded environment")
    tools = _catalog(pipeline)
    pools = _pools(pipeline, required=not use_llm)
    graph = build_feed_graph(tools, pools)
    scenarios = sample_scenarios(pipeline.name, settings, graph, pipeline.seed, plannable_only=not use_llm)
    if environment is None:
        from fcbench.environments.from_config import open_environment

        with open_environment(pipeline, []) as opened:
            result = _stage1(pipeline, scenarios, tools, graph, pools, opened, use_llm)
    else:
        result = _stage1(pipeline, scenarios, tools, graph, pools, environment, use_llm)
    paths = ConversationStage1Paths.in_dir(pipeline.build_dir)
    if result.summary.get("status") == "awaiting_review":  # the scenarios only: nothing is drafted yet
        write_json_lines(paths.scenarios, (scenario.model_dump(mode="json") for scenario in result.scenarios))
        result.summary["outputs"] = {"scenarios": str(paths.scenarios), "summary": str(paths.summary)}
        write_json(paths.summary, result.summary, indent=2)
        return result
    guarded = guard_output(paths.drafts, len(result.drafts), force=force, min_share=pipeline.min_output_share)
    write_json_lines(guarded.path(paths.scenarios), (scenario.model_dump(mode="json") for scenario in result.scenarios))
    write_json_lines(guarded.path(paths.drafts), (sample_to_dict(draft) for draft in result.drafts))
    write_json_lines(guarded.path(paths.rejects), result.rejects)
    result.summary["outputs"] = {"scenarios": str(guarded.path(paths.scenarios)), "drafts": str(guarded.path(paths.drafts)),
                                 "rejects": str(guarded.path(paths.rejects)), "summary": str(guarded.path(paths.summary))}
    result.summary["output_guard"] = guarded.summary()
    write_json(guarded.path(paths.summary), result.summary, indent=2)
    guarded.finish()
    return result


def _stage1(pipeline: PipelineConfig, scenarios: list[Scenario], tools: list[Tool], graph: Any, pools: ValuePools,
            environment: Environment, use_llm: bool) -> ConversationStage1Result:
    settings = pipeline.conversation
    assert settings is not None
    if not settings.review.enabled:
        return _draft_all(pipeline, scenarios, tools, graph, pools, environment, use_llm)
    sampled: list[Scenario] = []
    rejects: list[dict[str, Any]] = []
    llm_summary = None
    if use_llm:  # reviewers read the LLM's scenario texts (cached: drafting would ask the same)
        from generate.stage1.conversation_llm import describe_with_llm

        described, llm_summary = describe_with_llm(pipeline, scenarios, tools, environment)
        for scenario, outcome in zip(scenarios, described):
            if isinstance(outcome, Scenario):
                sampled.append(outcome)
            else:
                rejects.append(outcome)
    else:
        sampled = list(scenarios)
    reviewed = read_reviewed_scenarios(pipeline.build_dir / REVIEWED_SCENARIOS)
    if reviewed is None:
        summary = {"pipeline": pipeline.name, "kind": "conversation", "mode": "llm" if use_llm else "offline",
                   "generator": "scenario review", "seed": pipeline.seed, "status": "awaiting_review",
                   "counts": {"scenarios": len(scenarios), "awaiting_review": len(sampled), "drafts": 0,
                              "rejected": len(rejects)},
                   "reasons": dict(sorted(Counter(reject["reason"] for reject in rejects).items())),
                   "messages": [f"{len(sampled)} scenarios await review (conversation.review.enabled): "
                                f"build-dataset scenarios push {pipeline.name}, review them in Label Studio, "
                                f"build-dataset scenarios pull {pipeline.name}, then stage1 again"],
                   "llm": llm_summary}
        return ConversationStage1Result(sampled, [], rejects, summary)
    by_id = {item.scenario.id: item for item in reviewed}
    approved: list[Scenario] = []
    awaiting = 0
    for scenario in sampled:
        item = by_id.get(scenario.id)
        if item is None:
            awaiting += 1
        elif item.review.sampled_hash != scenario_hash(scenario):
            rejects.append({"id": scenario.id, "reason": "stage1.stale_review",
                            "detail": "the review was made on another sampling of this scenario (the pipeline's "
                                      "settings changed): push the scenarios again",
                            "scenario": scenario.model_dump(mode="json")})
        elif item.review.verdict == "reject":
            rejects.append({"id": scenario.id, "reason": "stage1.rejected_in_review",
                            "detail": item.review.notes or "the reviewer rejected the scenario",
                            "scenario": scenario.model_dump(mode="json"), "review": item.review.model_dump(mode="json")})
        else:
            approved.append(item.scenario)
    result = _draft_all(pipeline, approved, tools, graph, pools, environment, use_llm, described=True)
    order = {scenario.id: index for index, scenario in enumerate(scenarios)}  # rejects in the order sampled
    result.rejects = sorted([*rejects, *result.rejects], key=lambda reject: order.get(reject["id"], len(order)))
    result.scenarios = sampled
    result.summary["counts"] = {"scenarios": len(scenarios), "reviewed": len(approved), "awaiting_review": awaiting,
                                "drafts": len(result.drafts), "rejected": len(result.rejects)}
    result.summary["reasons"] = dict(sorted(Counter(reject["reason"] for reject in result.rejects).items()))
    result.summary["review"] = {"file": str(pipeline.build_dir / REVIEWED_SCENARIOS),
                                "edited": sorted(item.scenario.id for item in reviewed if item.review.changed)}
    if llm_summary is not None and result.summary.get("llm") is None:
        result.summary["llm"] = llm_summary
    if awaiting:
        result.summary["messages"] = [f"{awaiting} scenarios are not reviewed yet: they are drafted once a pull "
                                      "brings their review"]
    return result


def _draft_all(pipeline: PipelineConfig, scenarios: list[Scenario], tools: list[Tool], graph: Any, pools: ValuePools,
               environment: Environment, use_llm: bool, described: bool = False) -> ConversationStage1Result:
    if use_llm:
        from generate.stage1.conversation_llm import draft_with_llm

        outcomes, llm_summary, generator = draft_with_llm(pipeline, scenarios, tools, environment, described)
    else:
        outcomes, llm_summary, generator = _draft_offline(pipeline, scenarios, tools, graph, pools, environment), None, RULE_BASED
    if use_llm:  # scenarios.jsonl holds what the LLM wrote for each scenario (where it got that far)
        scenarios = [scenario_of(outcome) if isinstance(outcome, Sample)
                     else Scenario.model_validate(outcome.get("scenario") or scenario.model_dump())
                     for scenario, outcome in zip(scenarios, outcomes)]
    drafts: list[Sample] = []
    rejects: list[dict[str, Any]] = []
    for scenario, outcome in zip(scenarios, outcomes):
        if isinstance(outcome, Sample):
            problems = validate_record(sample_to_dict(outcome))
            turns = user_turns(outcome.messages)
            if problems:
                rejects.append({"id": scenario.id, "reason": "stage1.invalid_draft",
                                "detail": "; ".join(f"{where}: {message}" for where, message in problems[:3]),
                                "sample": sample_to_dict(outcome)})
            elif turns < scenario.min_turns:
                rejects.append({"id": scenario.id, "reason": "stage1.too_few_turns",
                                "detail": f"{turns} user turns, the scenario asks for at least {scenario.min_turns}",
                                "sample": sample_to_dict(outcome)})
            elif missing := missing_types(outcome):  # the type asked for must occur (its acceptance rule)
                name, why = missing[0]
                rejects.append({"id": scenario.id, "reason": f"stage1.{type_reason(name)}", "detail": why,
                                "sample": sample_to_dict(outcome)})
            else:
                drafts.append(outcome)
        else:
            rejects.append(outcome)
    summary = {
        "pipeline": pipeline.name, "kind": "conversation", "mode": "llm" if use_llm else "offline",
        "generator": generator, "seed": pipeline.seed,
        "requested": len(scenarios),
        "counts": {"scenarios": len(scenarios), "drafts": len(drafts), "rejected": len(rejects)},
        "complexities_planned": dict(sorted(Counter(c for s in scenarios for c in s.complexities).items())),
        "reasons": dict(sorted(Counter(reject["reason"] for reject in rejects).items())),
        "statistics": conversation_stats(drafts),
        "llm": llm_summary,
    }
    return ConversationStage1Result(scenarios, drafts, rejects, summary)


def _draft_offline(pipeline: PipelineConfig, scenarios: Sequence[Scenario], tools: list[Tool], graph: Any,
                   pools: ValuePools, environment: Environment) -> list[Sample | dict[str, Any]]:
    phrases_file = PromptFile.load(DEFAULT_PHRASES, pipeline.resolve("."))
    phrases = PhraseBook.parse(phrases_file.text)
    outcomes: list[Sample | dict[str, Any]] = []
    with StageProgress("stage1 conversations", len(scenarios)) as progress:
        for scenario in scenarios:
            outcomes.append(_draft_one_offline(pipeline, scenario, tools, graph, pools, environment, phrases, phrases_file))
            progress.advance()
    return outcomes


def _draft_one_offline(pipeline: PipelineConfig, scenario: Scenario, tools: list[Tool], graph: Any, pools: ValuePools,
                       environment: Environment, phrases: PhraseBook, phrases_file: PromptFile) -> Sample | dict[str, Any]:
    """One scenario played by the rule-based user and agent, or why it could not be."""
    settings = pipeline.conversation
    assert settings is not None
    offered = offered_tools(scenario, tools)
    failures: Counter[str] = Counter()
    outcome: Sample | dict[str, Any] | None = None
    last = ItemRejected("no_executable_plan", "no attempt")
    max_steps = pipeline.stages.stage1.max_steps
    for attempt in range(ATTEMPTS):
        seed = f"{pipeline.seed}:conversation:{scenario.id}:{attempt}"
        try:
            if "goal_switching" in scenario.complexities and len(scenario.required_apis) >= 2:
                # one plan per goal: the one dropped, then the one switched to
                first = scenario.model_copy(update={"required_apis": scenario.required_apis[:1]})
                second = scenario.model_copy(update={"required_apis": scenario.required_apis[-1:]})
                plan = plan_for(first, graph, pools, phrases, environment, offered, seed, max_steps)
                switch_to = plan_for(second, graph, pools, phrases, environment, offered, f"{seed}:switch", max_steps)
            else:
                plan, switch_to = plan_for(scenario, graph, pools, phrases, environment, offered, seed, max_steps), None
            drafted = simulate(scenario, plan, environment, seed, settings.max_turns, switch_to=switch_to,
                               offered=offered)
        except ItemRejected as exc:
            failures[exc.reason] += 1
            last = exc
            if exc.reason in ("offline_unsupported", "turn_cap"):
                break  # another plan does not change this
            continue
        provenance = Provenance(stage="stage1", model=RULE_BASED, prompt_file=phrases_file.shown_as,
                                prompt_hash=phrases_file.sha256, seed=pipeline.seed,
                                sampled_tools=[tool.name for tool in offered])
        outcome = conversation_sample(scenario.id, scenario, drafted.messages, offered, provenance,
                                      drafted.failed_calls, {"attempts": attempt + 1, "plan_query": drafted.plan_query},
                                      chosen_errors=drafted.chosen_errors)
        break
    if outcome is None:
        outcome = {"id": scenario.id, "reason": f"stage1.{last.reason}", "detail": last.detail,
                   "attempts": sum(failures.values()), "problems": dict(sorted(failures.items())),
                   "scenario": scenario.model_dump(mode="json")}
    return outcome


def run(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    """The stage contract (fcbench.stage) for `kind: conversation`: scenarios, then conversations."""
    result = run_conversation_stage1(ctx.config, offline=not ctx.uses_llm, force=ctx.force)
    return StageSummary.of("stage1", result.summary, report=result)
