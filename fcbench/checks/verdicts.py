"""What the filter decides about one candidate (pure): the verdict type, the static checks
(format, grounding) and the execution verdict (ran, reproduces, deterministic). The filter stage
runs them over files and an environment; stage3 uses the static checks on its variants, so they
live here, one floor below both stages.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Sequence

from fcbench.answers import AnswerComparison, NumberMode, answers_match
from fcbench.checks.call_format import check_call_format
from fcbench.config import FilterConfig
from fcbench.checks.constraints import pick_problems
from fcbench.environments.execution import GoldPathResult
from fcbench.checks.grounding import grounding_report
from fcbench.checks.query_text import query_text_problems
from fcbench.references import is_reference
from fcbench.sample import Sample, path_shape
from fcbench.checks.validate import semantic_problems

# Verdicts that said "could not decide", not "bad": a re-run decides these samples again instead of
# reading the verdict back from the journal.
UNDECIDED_SEMANTIC = "semantic.undecided"
DECIDE_AGAIN_ON_RERUN = frozenset({UNDECIDED_SEMANTIC})


class FilterCategory(str, Enum):
    PASSED = "passed"
    FAILED_FORMAT = "failed_format"
    FAILED_TEXT = "failed_text"  # the query reads wrong (fcbench.checks.query_text): reasons text.*
    FAILED_GROUNDING = "failed_grounding"
    FAILED_GOLD = "failed_gold"  # the gold audit: the path does not do exactly what the query asks
    FAILED_EXECUTION = "failed_execution"
    FAILED_REPRODUCTION = "failed_reproduction"
    FAILED_SEMANTIC = "failed_semantic"  # only when a semantic check is given (an LLM judges meaning)
    # kind: conversation only: a conversation type its scenario asks for does not occur (reasons
    # type_missing.<type>, fcbench.checks.conversation_types)
    FAILED_TYPE = "failed_type"


@dataclass
class Verdict:
    id: str
    category: FilterCategory
    reason: str | None = None  # e.g. "format.missing_required", "execution.timeout"
    detail: str | None = None  # what exactly, for a person
    notes: list[str] = field(default_factory=list)  # reported, not rejected (grounding in report mode)
    # argument values the query implies, each with the rule that explains it (fcbench.checks.grounding)
    derived: list[dict[str, Any]] = field(default_factory=list)
    # values no rule explains, left to the semantic check instead of rejected here
    deferred: list[str] = field(default_factory=list)

    @property
    def kept(self) -> bool:
        return self.category is FilterCategory.PASSED

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["category"] = self.category.value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Verdict":
        return cls(**{**data, "category": FilterCategory(data["category"])})


def _reject(sample_id: str, category: FilterCategory, reason: str, detail: str) -> Verdict:
    return Verdict(sample_id, category, reason, detail)


# ----------------------------------------------------------------------------------- static checks
_SEMANTIC_REASONS = (("unknown tool", "format.unknown_tool"), ("reference", "format.bad_reference"),
                     ("duplicate label", "format.duplicate_label"), ("no call has label", "format.acceptable_label"))


def static_verdict(sample: Sample, settings: FilterConfig, semantic_check: bool = False) -> Verdict:
    """Format and grounding checks, no execution. PASSED means: go on and execute.

    A value that no grounding rule explains rejects the sample (grounding: reject) unless a semantic
    check follows (`semantic_check`): then that check, which reads the query and the responses,
    decides, and only what it rejects is rejected. Without one the check fails closed."""
    for where, message in semantic_problems(sample):
        if where == "difficulty":
            continue  # derived, rewritten on output
        reason = next((code for key, code in _SEMANTIC_REASONS if key in message), "format.invalid")
        return _reject(sample.id, FilterCategory.FAILED_FORMAT, reason, f"{where}: {message}")
    for step in sample.all_steps():
        for call in step:
            issue = check_call_format(call, sample.tools, skip_type_check=is_reference)
            if issue is not None:
                return _reject(sample.id, FilterCategory.FAILED_FORMAT, f"format.{issue.kind}",
                               f"{call.label}: {issue.message}")
    text = text_verdict(sample)
    if text is not None:
        return text
    nested = path_shape(sample).n_nested_calls
    if nested < settings.min_nested_calls:
        return _reject(sample.id, FilterCategory.FAILED_GOLD, "gold.too_few_nested_calls",
                       f"{nested} call(s) read an earlier call's output; the pipeline asks for at least "
                       f"{settings.min_nested_calls} (stages.filter.min_nested_calls)")
    report = grounding_report(sample)
    notes = [f"ungrounded value {value.describe()}" for value in report.ungrounded]
    derived = [value.as_dict() for value in report.derived]
    if report.ungrounded and settings.grounding == "reject":
        if not semantic_check:
            verdict = _reject(sample.id, FilterCategory.FAILED_GROUNDING, "grounding.ungrounded_value", "; ".join(notes))
            verdict.derived = derived
            return verdict
        return Verdict(sample.id, FilterCategory.PASSED, derived=derived,
                       deferred=[value.describe() for value in report.ungrounded])
    return Verdict(sample.id, FilterCategory.PASSED, notes=notes, derived=derived)


def text_verdict(sample: Sample) -> Verdict | None:
    """The query text lint over every user message (fcbench.checks.query_text): a reject
    `text.<code>` naming the first glitch of the first message that has one, else None. Cheap (a
    few regular expressions per message), so it runs before grounding and execution."""
    user_messages = [m for m in sample.messages if m.get("role") == "user"]
    for turn in sample.turns or []:
        user_messages += [m for m in turn.messages if m.get("role") == "user"]
    texts = [m.get("content") for m in user_messages if isinstance(m.get("content"), str)]
    for number, text in enumerate(texts, start=1):
        problems = query_text_problems(text, sample.tools)
        if problems:
            where = f"user message {number}: " if len(texts) > 1 else ""
            detail = "; ".join(problem.describe() for problem in problems[:3])
            more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
            return _reject(sample.id, FilterCategory.FAILED_TEXT, problems[0].reason, f"{where}{detail}{more}")
    return None


# ------------------------------------------------------------------------------- execution checks
def comparison_of(settings: FilterConfig) -> AnswerComparison:
    tolerance = settings.tolerance
    return AnswerComparison(NumberMode(tolerance.mode), abs_tol=tolerance.absolute, rel_tol=tolerance.relative)


def execution_verdict(sample: Sample, runs: Sequence[GoldPathResult], comparison: AnswerComparison,
                      notes: list[str]) -> Verdict:
    """Judge the repeated runs of one sample's gold path against what the sample recorded."""
    first = runs[0]
    if not first.ok:
        failed = first.failure
        reason = failed.outcome.reason.value if failed and failed.outcome.reason else "not_run"
        where = f"{failed.label} ({failed.name}): {failed.outcome.error}" if failed else "the path did not run"
        return _reject(sample.id, FilterCategory.FAILED_EXECUTION, f"execution.{reason}", where)
    if "answer" in sample.model_fields_set and not answers_match(first.answer, sample.answer, comparison):
        return _reject(sample.id, FilterCategory.FAILED_REPRODUCTION, "reproduction.answer_mismatch",
                       f"executed answer {_short(first.answer)} != recorded {_short(sample.answer)}")
    recorded = [call for step in sample.all_steps() for call in step]
    executed = [call for step in first.sample.all_steps() for call in step]
    for before, after in zip(recorded, executed):
        if "response" in before.model_fields_set and not answers_match(after.response, before.response, comparison):
            return _reject(sample.id, FilterCategory.FAILED_REPRODUCTION, "reproduction.response_mismatch",
                           f"{before.label} ({before.name}) answered differently from its recorded response")
    picks = pick_problems(first.sample)
    if picks:  # the query's constraint must single out the entry the path reads: one valid path
        return _reject(sample.id, FilterCategory.FAILED_REPRODUCTION, "reproduction.pick_not_unique", picks[0])
    for attempt, run in enumerate(runs[1:], start=2):
        if run.path != first.path:
            return _reject(sample.id, FilterCategory.FAILED_REPRODUCTION, "reproduction.nondeterministic",
                           f"run {attempt} gave other responses than run 1")
    return Verdict(sample.id, FilterCategory.PASSED, notes=notes)


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."
