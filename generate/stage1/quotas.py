"""CallNavi-style drafts by difficulty (`stages.stage1.difficulty_quotas`), pure.

CallNavi labels each question easy, medium or hard. Measured on its published files (builders
notes §2.2): easy is always exactly one call; medium is several calls whose inputs all come from the
question; hard is several calls where a later one needs an earlier one's output. These are
fcbench's derived `single`, `multiple` and `nested` (`fcbench.sample.path_shape`), which is how a
draft is checked against the difficulty it was planned for.

The graph sampler plans backwards from goal tools, so the difficulty is chosen by the goals:
easy = one start tool (every argument from the value pools, nothing fed), medium = two distinct
start tools (two independent calls), hard = one tool that reads an earlier output. The candidate
list is the draft's sampled subset, its domain's whole catalog or the whole catalog
(`candidates`), cut to `candidate_tools_max` (the tools the path needs always stay).
"""

from __future__ import annotations

import random
from typing import Mapping, Sequence

from fcbench.errors import UserError
from generate.stage1.graph_sampler import FeedGraph, PlanFailed, ToolSubset, tool_domain, tools_needed

LEVELS = ("easy", "medium", "hard")
DERIVED = {"easy": "single", "medium": "multiple", "hard": "nested"}  # fcbench.sample.Difficulty values


def quota_counts(total: int, quotas: Mapping[str, float]) -> dict[str, int]:
    """Exact counts per level by largest remainder (ties: the order of LEVELS)."""
    exact = {level: total * quotas.get(level, 0.0) for level in LEVELS}
    counts = {level: int(value) for level, value in exact.items()}
    short = total - sum(counts.values())
    for level in sorted(LEVELS, key=lambda lv: (-(exact[lv] - counts[lv]), LEVELS.index(lv)))[:short]:
        counts[level] += 1
    return counts


def difficulty_plan(total: int, quotas: Mapping[str, float], seed: int) -> list[str]:
    """The level of each draft: the quota counts at seeded positions."""
    plan = [level for level, count in quota_counts(total, quotas).items() for _ in range(count)]
    random.Random(f"{seed}:difficulty-plan").shuffle(plan)
    return plan


def start_tools(graph: FeedGraph) -> list[str]:
    """Tools whose every argument the value pools fill: a call needing nothing earlier."""
    return [name for name in graph.tools if graph.plannable(name) and not graph.groups.get(name)]


def check_quotas(graph: FeedGraph, quotas: Mapping[str, float], total: int, candidates: str) -> None:
    """A quota the catalog cannot meet is an error before anything runs, naming the quota."""
    counts = quota_counts(total, quotas)
    starts = start_tools(graph)
    key = "stages.stage1.difficulty_quotas"
    if counts["easy"] and not starts:
        raise UserError(f"{key}.easy: {counts['easy']} one-call drafts asked, but no tool of the catalog can be "
                        f"called with values from the value pools alone")
    if counts["medium"]:
        scopes: dict[str, int] = {}
        for name in starts:
            scope = "catalog" if candidates == "catalog" else tool_domain(graph.tools[name])
            scopes[scope] = scopes.get(scope, 0) + 1
        if max(scopes.values(), default=0) < 2:
            raise UserError(f"{key}.medium: {counts['medium']} drafts of independent calls asked, but no "
                            f"{'catalog' if candidates == 'catalog' else 'domain'} has two tools callable with "
                            f"values from the value pools alone")
    if counts["hard"] and not graph.goals(True):
        raise UserError(f"{key}.hard: {counts['hard']} nested drafts asked, but no tool of the catalog reads "
                        f"another tool's output")


def quota_subset(index: int, level: str, graph: FeedGraph, sizes: Sequence[int], candidates: str,
                 cap: int, seed: int) -> ToolSubset:
    """The goals for a draft of `level` and the tools it offers."""
    rng = random.Random(f"{seed}:quota-subset:{index}")
    starts = start_tools(graph)
    if level == "easy":
        goals: tuple[str, ...] = (rng.choice(starts),)
    elif level == "medium":
        scopes: dict[str, list[str]] = {}
        for name in starts:
            scopes.setdefault("catalog" if candidates == "catalog" else tool_domain(graph.tools[name]), []).append(name)
        usable = [names for names in scopes.values() if len(names) >= 2]
        if not usable:
            raise PlanFailed("no two start tools share a candidate list")
        goals = tuple(rng.sample(rng.choice(usable), 2))
    else:
        goals = (rng.choice(graph.goals(True)),)
    domains = tuple(dict.fromkeys(tool_domain(graph.tools[goal]) for goal in goals))
    if candidates == "catalog":
        allowed = set(graph.tools)
    else:
        allowed = {name for name, tool in graph.tools.items() if tool_domain(tool) in domains}
    needed: set[str] = set()
    for goal in goals:
        tools_needed(graph, goal, allowed, rng, needed)
    others = sorted(allowed - needed, key=list(graph.tools).index)
    size = len(allowed) if candidates != "subset" else rng.choice(list(sizes))
    size = min(size, cap)
    offered = needed | set(rng.sample(others, max(0, min(len(others), size - len(needed)))))
    return ToolSubset(tuple(name for name in graph.tools if name in offered), goals, domains, len(domains) > 1, level)


def widened(subset: ToolSubset, graph: FeedGraph, candidates: str, cap: int) -> ToolSubset:
    """A sampled subset offering every tool of its domain(s) (`domain`) or of the catalog
    (`catalog`), the ones it already offers first, cut to `cap`."""
    allowed = [name for name, tool in graph.tools.items()
               if candidates == "catalog" or tool_domain(tool) in subset.domains]
    keep = list(subset.tools) + [name for name in allowed if name not in subset.tools]
    offered = set(keep[:max(cap, len(subset.tools))])
    return ToolSubset(tuple(name for name in graph.tools if name in offered), subset.goals, subset.domains,
                      subset.cross_domain, subset.difficulty)
