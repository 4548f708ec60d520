"""Which drafts go to senior annotation (pipelines.yaml `stages.stage2.select: N`).

Annotator time is the scarce resource: send the N drafts that need the least repair (most complete)
while covering as many path shapes as possible, so the templates span single calls, independent
calls and nested chains of several depths rather than N copies of the easiest shape.
Deterministic: ties break on the sample id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from fcbench.sample import PathShape, Sample, path_shape
from fcbench.checks.validate import semantic_problems


@dataclass(frozen=True, order=True)
class Completeness:
    """Compared as a tuple: a query, then a path without static problems, then responses on every
    call, then a richer path."""

    has_query: bool
    well_formed: bool
    responses_fraction: float
    n_calls: int


def completeness(sample: Sample) -> Completeness:
    calls = sample.all_calls()
    with_response = sum("response" in call.model_fields_set for call in calls)
    has_query = any(message.get("role") == "user" and str(message.get("content") or "").strip()
                    for message in sample.messages)
    problems = [problem for problem in semantic_problems(sample) if problem[0] != "difficulty"]
    return Completeness(has_query, not problems, with_response / len(calls) if calls else 1.0, len(calls))


def shape_key(shape: PathShape) -> tuple[str, int, int, int]:
    return (shape.difficulty.value, shape.n_steps, shape.n_calls, shape.nesting_depth)


@dataclass(frozen=True)
class DraftSummary:
    """What selection needs of one draft (its responses are not kept: a push of long-response drafts
    selects from summaries and reads each picked draft back from its file)."""

    id: str
    completeness: Completeness
    shape: tuple[str, int, int, int]
    position: int  # where the draft is in its source (a list index, or a line's offset in a file)


def draft_summary(sample: Sample, position: int) -> DraftSummary:
    return DraftSummary(sample.id, completeness(sample), shape_key(path_shape(sample)), position)


def select_drafts(drafts: Sequence[Sample], count: int) -> list[Sample]:
    """Up to `count` drafts, in the order picked (see `select_summaries`)."""
    return [drafts[summary.position] for summary in
            select_summaries([draft_summary(sample, index) for index, sample in enumerate(drafts)], count)]


def select_summaries(drafts: Sequence[DraftSummary], count: int) -> list[DraftSummary]:
    """Up to `count` drafts, in the order picked. Drafts are taken tier by tier (a query, a
    well-formed path, a response on every call: the fully complete tier first); within a tier,
    round-robin over path shapes, each shape's richest draft first, so every shape is covered
    before any shape gets a second draft."""
    tiers: dict[tuple[bool, bool, bool], list[DraftSummary]] = {}
    for draft in drafts:
        value = draft.completeness
        tiers.setdefault((value.has_query, value.well_formed, value.responses_fraction == 1.0), []).append(draft)
    picked: list[DraftSummary] = []
    for tier in sorted(tiers, reverse=True):
        picked.extend(_round_robin(tiers[tier], count - len(picked)))
        if len(picked) >= count:
            break
    return picked


def _round_robin(drafts: Sequence[DraftSummary], count: int) -> list[DraftSummary]:
    ranked = sorted(drafts, key=lambda draft: (_descending(draft.completeness), draft.id))
    groups: dict[tuple[str, int, int, int], list[DraftSummary]] = {}
    for draft in ranked:  # insertion order = order of each shape's best draft
        groups.setdefault(draft.shape, []).append(draft)
    queues = list(groups.values())
    picked: list[DraftSummary] = []
    depth = 0
    while len(picked) < count and any(depth < len(queue) for queue in queues):
        for queue in queues:
            if depth < len(queue) and len(picked) < count:
                picked.append(queue[depth])
        depth += 1
    return picked


def _descending(value: Completeness) -> tuple[bool, bool, float, int]:
    return (not value.has_query, not value.well_formed, -value.responses_fraction, -value.n_calls)
