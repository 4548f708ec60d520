"""QA from the annotations: what annotators changed in each draft, classified into the error types of
`annotate.tasks.error_types`, a summary of the fixes, and the agreement of two annotations of one task.

Calls of the draft and of the gold path are paired by the shared scorer (`fcbench.score.matching.
assign_calls`: exact matches first, then the Hungarian algorithm on call similarity), so "a call
was fixed" here and "a model got a call wrong" in evaluation are decided the same way; argument
values are compared with its `values_equivalent`. The structured diff itself is deepdiff's, kept
in the report for a person to read. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from deepdiff import DeepDiff

from annotate.tasks.error_types import DraftError
from annotate.tasks.render import last_user_text
from fcbench.catalog.types import json_type_names
from fcbench.score.matching import assign_calls, match_step, values_equivalent
from fcbench.sample import Call, Sample, Tool


@dataclass
class SampleDiff:
    sample_id: str
    error_types: Counter[str] = field(default_factory=Counter)
    arguments_fixed_by_type: Counter[str] = field(default_factory=Counter)
    changes: list[str] = field(default_factory=list)  # one readable line per change
    query_rewritten: bool = False
    calls_added: int = 0
    calls_removed: int = 0
    reordered: bool = False
    entries_deleted: int = 0
    tools_dropped: int = 0
    deepdiff: dict[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.sample_id, "changed": self.changed, "error_types": dict(sorted(self.error_types.items())),
                "arguments_fixed_by_type": dict(sorted(self.arguments_fixed_by_type.items())),
                "query_rewritten": self.query_rewritten, "calls_added": self.calls_added,
                "calls_removed": self.calls_removed, "reordered": self.reordered,
                "entries_deleted": self.entries_deleted, "tools_dropped": self.tools_dropped,
                "changes": self.changes, "deepdiff": self.deepdiff}


def path_view(sample: Sample) -> dict[str, Any]:
    """What the diff compares: the query, the tools offered, and the path without responses
    (responses are the environment's, not the annotator's; entry deletions are counted apart)."""
    return {"query": last_user_text(sample), "tools": sorted(sample.tool_names()),
            "calls": [[{"label": c.label, "name": c.name, "arguments": c.arguments} for c in step]
                      for step in sample.calls]}


def structured_diff(draft: Sample, gold: Sample) -> dict[str, Any]:
    """deepdiff's report of what changed. Only the parts that differ are handed to deepdiff (it
    costs milliseconds per sample even on equal inputs, and most drafts are accepted whole); the
    parts keep their keys, so the paths in the report are the same as for the whole view."""
    before, after = path_view(draft), path_view(gold)
    changed = [key for key in before if before[key] != after[key]]
    if not changed:
        return {}
    diff = DeepDiff({key: before[key] for key in changed}, {key: after[key] for key in changed}, verbose_level=2)
    return json.loads(diff.to_json()) if diff else {}


def diff_sample(draft: Sample, gold: Sample, entries_deleted: int = 0, tools_dropped: Sequence[str] = ()) -> SampleDiff:
    result = SampleDiff(gold.id, entries_deleted=entries_deleted, tools_dropped=len(tools_dropped))
    result.deepdiff = structured_diff(draft, gold)
    if _normal(last_user_text(draft)) != _normal(last_user_text(gold)):
        result.query_rewritten = True
        result.error_types[DraftError.QUERY_REWRITTEN.value] += 1
        result.changes.append("query rewritten")
    _classify_calls(draft, gold, result)
    if entries_deleted:
        result.error_types[DraftError.AMBIGUOUS_RESPONSE.value] += 1
        result.changes.append(f"{entries_deleted} response entries deleted")
    if tools_dropped:
        result.error_types[DraftError.OVERLAPPING_TOOLS.value] += 1
        result.changes.append(f"tools dropped: {', '.join(tools_dropped)}")
    return result


def _normal(text: str) -> str:
    return " ".join(text.split())


def _flat(sample: Sample) -> list[tuple[int, Call]]:
    return [(step_index, call) for step_index, step in enumerate(sample.calls) for call in step]


def _classify_calls(draft: Sample, gold: Sample, result: SampleDiff) -> None:
    draft_calls, gold_calls = _flat(draft), _flat(gold)
    tools = {tool.name: tool for tool in gold.tools + draft.tools}
    pairs = assign_calls([call for _, call in draft_calls], [call for _, call in gold_calls],
                         tools=list(tools.values()))
    paired: list[tuple[int, int]] = []
    for pair in pairs:
        d, g = pair.predicted_index, pair.gold_index
        if d is not None and g is not None and not _related(draft_calls[d][1], gold_calls[g][1]):
            _removed(result, draft_calls[d][1])
            _added(result, gold_calls[g][1])
            continue
        if g is None and d is not None:
            _removed(result, draft_calls[d][1])
        elif d is None and g is not None:
            _added(result, gold_calls[g][1])
        elif d is not None and g is not None:
            paired.append((d, g))
            _compare_pair(draft_calls[d][1], gold_calls[g][1], tools.get(gold_calls[g][1].name), result)
    if _order_changed([(draft_calls[d][0], gold_calls[g][0]) for d, g in paired]):
        result.reordered = True
        result.error_types[DraftError.ORDER_ERROR.value] += 1
        result.changes.append("calls reordered")


def _order_changed(steps: Sequence[tuple[int, int]]) -> bool:
    """Whether two paired calls run in another relative order in the gold path than in the draft:
    one before the other, or together in one step (parallel), by (draft step, gold step) pairs."""
    for first, (draft_a, gold_a) in enumerate(steps):
        for draft_b, gold_b in steps[first + 1:]:
            if _sign(draft_a - draft_b) != _sign(gold_a - gold_b):
                return True
    return False


def _sign(number: int) -> int:
    return (number > 0) - (number < 0)


def _related(draft_call: Call, gold_call: Call) -> bool:
    """A pair the Hungarian step made of two unrelated calls is a removal plus an addition: only a
    same-name call, or another function given the same parameters, counts as a fix of the draft's."""
    return draft_call.name == gold_call.name or bool(set(draft_call.arguments) & set(gold_call.arguments))


def _removed(result: SampleDiff, call: Call) -> None:
    result.calls_removed += 1
    result.error_types[DraftError.CALL_REDUNDANT.value] += 1
    result.changes.append(f"call removed: {call.label} {call.name}")


def _added(result: SampleDiff, call: Call) -> None:
    result.calls_added += 1
    result.error_types[DraftError.CALL_MISSING.value] += 1
    result.changes.append(f"call added: {call.label} {call.name}")


def _compare_pair(draft_call: Call, gold_call: Call, tool: Tool | None, result: SampleDiff) -> None:
    if draft_call.name != gold_call.name:
        result.error_types[DraftError.FUNC_ERROR.value] += 1
        result.changes.append(f"function changed: {draft_call.label} {draft_call.name} -> {gold_call.name}")
        return
    properties = (tool.parameters.get("properties") if tool else None) or {}
    for name in list(gold_call.arguments) + [n for n in draft_call.arguments if n not in gold_call.arguments]:
        schema = properties.get(name)
        if name not in draft_call.arguments:
            kind, text = DraftError.PARAM_MISSING, "argument added"
        elif name not in gold_call.arguments:
            kind, text = DraftError.PARAM_HALLUCINATION, "argument removed"
        elif not values_equivalent(draft_call.arguments[name], gold_call.arguments[name], schema):
            kind, text = DraftError.VALUE_ERROR, "argument value fixed"
        else:
            continue
        value = gold_call.arguments.get(name, draft_call.arguments.get(name))
        result.error_types[kind.value] += 1
        result.arguments_fixed_by_type[_parameter_type(schema, value)] += 1
        result.changes.append(f"{text}: {gold_call.label}.{name}")


def _parameter_type(schema: Any, value: Any) -> str:
    names = json_type_names(dict(schema)) if isinstance(schema, dict) else []
    if names:
        return names[0]
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}.get(type(value), "null")


# --------------------------------------------------------------------------------------- agreement
@dataclass(frozen=True)
class Agreement:
    call_agreement: float  # Dice over calls: 2 x calls judged equivalent / (calls of A + calls of B)
    exact_path: bool  # same calls in the same steps
    same_query: bool


def agreement(first: Sample, second: Sample) -> Agreement:
    """How far two annotators' gold paths agree, by the shared scorer's call matching."""
    calls_a = [call for step in first.calls for call in step]
    calls_b = [call for step in second.calls for call in step]
    if not calls_a and not calls_b:
        call_agreement = 1.0
        exact = True
    else:
        match = match_step(calls_a, calls_b, tools=second.tools)
        call_agreement = 2 * len(match.matched_gold) / (len(calls_a) + len(calls_b))
        exact = match.exact and [len(step) for step in first.calls] == [len(step) for step in second.calls]
    same_query = _normal(last_user_text(first)).casefold() == _normal(last_user_text(second)).casefold()
    return Agreement(call_agreement, exact, same_query)


# ----------------------------------------------------------------------------------------- summary
def summarise(diffs: Sequence[SampleDiff], flags_ticked: Sequence[Sequence[str]] = (),
              agreements: Sequence[Agreement] = ()) -> dict[str, Any]:
    """The numbers a QA report shows: what annotators fixed, and how often they agreed."""
    by_type: Counter[str] = Counter()
    arguments_by_type: Counter[str] = Counter()
    for diff in diffs:
        by_type.update({kind: 1 for kind in diff.error_types})  # samples with each error type
        arguments_by_type.update(diff.arguments_fixed_by_type)
    ticked = Counter(flag for flags in flags_ticked for flag in flags)
    summary: dict[str, Any] = {
        "samples": len(diffs),
        "corrected": sum(diff.changed for diff in diffs),
        "accepted_unchanged": sum(not diff.changed for diff in diffs),
        "queries_rewritten": sum(diff.query_rewritten for diff in diffs),
        "calls_added": sum(diff.calls_added for diff in diffs),
        "calls_removed": sum(diff.calls_removed for diff in diffs),
        "samples_reordered": sum(diff.reordered for diff in diffs),
        "arguments_fixed": sum(arguments_by_type.values()),
        "arguments_fixed_by_type": dict(sorted(arguments_by_type.items())),
        "entries_deleted": sum(diff.entries_deleted for diff in diffs),
        "tools_dropped": sum(diff.tools_dropped for diff in diffs),
        "samples_by_error_type": {kind.value: by_type.get(kind.value, 0) for kind in DraftError},
        "flags_ticked_by_annotators": {kind.value: ticked.get(kind.value, 0) for kind in DraftError},
    }
    summary["agreement"] = _agreement_summary(agreements)
    return summary


def _agreement_summary(agreements: Sequence[Agreement]) -> dict[str, Any]:
    if not agreements:
        return {"tasks_with_several_annotations": 0}
    count = len(agreements)
    return {"tasks_with_several_annotations": count,
            "mean_call_agreement": round(sum(a.call_agreement for a in agreements) / count, 4),
            "exact_path_rate": round(sum(a.exact_path for a in agreements) / count, 4),
            "same_query_rate": round(sum(a.same_query for a in agreements) / count, 4)}
