"""Scenarios for conversational benchmarks (CONFETTI's seeding), pure but for nothing: API subsets
and complexities sampled to the pipeline's declared distribution, and the template descriptions
written when no LLM is used.

- API subsets: the graph sampler's `sample_tool_subset` (a goal tool, the tools its inputs come
  from, and distractors of the same domain up to a sampled size): the goals are the *required*
  APIs, the rest *optional*.
- Complexities: exactly round(share x scenarios) of each (largest remainder, so the counts add up
  to the number of scenarios), at seeded positions: the distribution declared in pipelines.yaml
  is the one written, not one drawn at random. Every scenario has at least one.
- Two goals for goal_switching and goal_stacking: the subset of a cross-domain draft (two
  domains, a goal each), or, in a one-domain catalog, a second goal of the same domain. The
  required APIs list the goals in the order the user brings them up; for goal_switching the
  first is the goal dropped (a goal whose tool takes a date first: the rule-based user leaves
  that date out, and switches while the agent asks for it), the last the goal switched to.
- The reference time and the minimum number of user turns come from the pipeline.
"""

from __future__ import annotations

import random
from typing import Mapping, Sequence

from fcbench.config import ConversationConfig
from fcbench.conversation import Scenario
from fcbench.sample import Tool
from generate.stage1.graph_sampler import FeedGraph, sample_tool_subset

# What each complexity asks of the user, in the scenario text the simulator and the annotator read.
COMPLEXITY_TEXT = {
    "follow_up": "after the first answer, ask a follow-up question about one of the results",
    "goal_correction": "state one detail wrongly at first, then correct it when the agent checks it",
    "goal_switching": "switch to a different goal part-way through the conversation",
    "ambiguous_goal": "start with a request that could mean several things, and clarify when asked",
    "implicit_goal": "say what you need without naming the task outright",
    "overfilled_parameters": "give details the services cannot use, alongside the ones they need",
    "underfilled_parameters": "leave out a detail the agent needs, and give it when asked",
    "execution_exception": "ask for something the service refuses at first (an invalid detail), then fix it",
    "goal_stacking": "ask for both of your goals at once, in the same message, and expect both to be handled",
    "confirmation": "ask the assistant to check with you before it does anything, and approve when it asks",
    "goal_not_supported": "also ask for something none of the assistant's services can do (for example a "
                          "restaurant reservation), and accept its refusal",
    "failed_conversation": "keep to your goal; the service will fail, so after one more try give up politely "
                           "without getting what you wanted",
    "no_target": "ask for what you need plainly",
}
MULTI_GOAL = frozenset({"goal_switching", "goal_stacking"})  # types that need two goals


def complexity_plan(count: int, shares: Mapping[str, float], seed: int) -> list[str]:
    """`count` complexities following `shares` exactly (largest remainder), in a seeded order."""
    exact = {name: share * count for name, share in shares.items()}
    counts = {name: int(value) for name, value in exact.items()}
    by_remainder = sorted(shares, key=lambda name: (-(exact[name] - counts[name]), list(shares).index(name)))
    for name in by_remainder[:count - sum(counts.values())]:
        counts[name] += 1
    plan = [name for name in shares for _ in range(counts[name])]
    random.Random(f"{seed}:complexities").shuffle(plan)
    return plan


def scenario_id(pipeline_name: str, index: int) -> str:
    return f"{pipeline_name}-conv-{index + 1:04d}"


def sample_scenarios(pipeline_name: str, settings: ConversationConfig, graph: FeedGraph, seed: int,
                     plannable_only: bool = True) -> list[Scenario]:
    """The pipeline's scenarios, deterministic in the seed."""
    plan = complexity_plan(settings.scenarios, settings.complexities, seed)
    scenarios = []
    for index, complexity in enumerate(plan):
        if complexity in MULTI_GOAL:
            tools, required, domains = _two_goals(index, graph, settings.api_subset_sizes, seed, plannable_only)
            if complexity == "goal_switching":  # the goal dropped is the one whose date the user leaves out
                required.sort(key=lambda name: not _chain_takes_date(graph, name))
        else:
            subset = sample_tool_subset(index, False, graph, settings.api_subset_sizes, seed, plannable_only)
            tools, required, domains = list(subset.tools), list(subset.goals), list(subset.domains)
        optional = [name for name in tools if name not in required]
        domain = domains[0] if len(domains) == 1 else list(domains)
        scenario = Scenario(id=scenario_id(pipeline_name, index), domain=domain, required_apis=required,
                            optional_apis=optional, complexities=[complexity], reference_time=settings.reference_time,
                            min_turns=settings.min_turns)
        scenario.description = template_description(scenario, graph.tools)
        scenarios.append(scenario)
    return scenarios


def _two_goals(index: int, graph: FeedGraph, sizes: Sequence[int], seed: int,
               plannable_only: bool) -> tuple[list[str], list[str], list[str]]:
    """(tools, goals, domains) of a two-goal scenario: a cross-domain subset, or two subsets of
    the one domain merged (their tools in catalog order) when a cross-domain one gives one goal."""
    subset = sample_tool_subset(index, True, graph, sizes, seed, plannable_only)
    tools, goals, domains = set(subset.tools), list(subset.goals), list(subset.domains)
    salt = 0
    while len(goals) < 2 and salt < 20:
        salt += 1
        other = sample_tool_subset(index, False, graph, sizes, seed * 1_000 + salt, plannable_only)
        new = [goal for goal in other.goals if goal not in goals]
        if new:
            goals.append(new[0])
            tools |= set(other.tools)
            domains += [domain for domain in other.domains if domain not in domains]
    return [name for name in graph.tools if name in tools], goals, domains


def _chain_takes_date(graph: FeedGraph, name: str, seen: frozenset[str] = frozenset()) -> bool:
    """Does the goal, or a tool its inputs come from, take a date (something the user states)?"""
    properties = graph.tools[name].parameters.get("properties") or {}
    if any("date" in key.lower() or (isinstance(spec, dict) and spec.get("format") == "date")
           for key, spec in properties.items()):
        return True
    return any(_chain_takes_date(graph, source, seen | {name}) for group in graph.groups.get(name, [])
               for source in group.sources() if source not in seen | {name})


def _goal_text(tool: Tool) -> str:
    text = tool.description.strip().split(". ")[0].rstrip(".")
    return text[:1].lower() + text[1:] if text else tool.name.replace("_", " ").lower()


def template_description(scenario: Scenario, tools: Mapping[str, Tool]) -> str:
    """The offline scenario text: the user's goal from the required APIs' descriptions, the
    complexity to play, the reference time and the minimum number of turns."""
    texts = [_goal_text(tools[name]) for name in scenario.required_apis if name in tools]
    goals = "; then ".join(texts)
    if "goal_switching" in scenario.complexities and len(texts) >= 2:
        goals = f"first {texts[0]}; but part-way through, drop it and {texts[-1]} instead"
    elif "goal_stacking" in scenario.complexities and len(texts) >= 2:
        goals = " and, at the same time, ".join(texts)
    complexities = "; ".join(COMPLEXITY_TEXT[name] for name in scenario.complexities)
    domain = scenario.domain if isinstance(scenario.domain, str) else " and ".join(scenario.domain)
    return (f"You are a traveller talking to a {domain} assistant. Today is {scenario.reference_time}. "
            f"Your goal: {goals}. How you talk: {complexities}. "
            f"Take at least {scenario.min_turns} turns before you are done.")


def offered_tools(scenario: Scenario, catalog: Sequence[Tool]) -> list[Tool]:
    """The scenario's APIs in catalog order (what the agent is offered)."""
    names = set(scenario.apis)
    return [tool for tool in catalog if tool.name in names]
