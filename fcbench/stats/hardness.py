"""What makes a function-calling sample hard, measured per sample (pure; the tokenizer is a
deterministic function of the text).

ComplexFuncBench names five aspects beyond multi-step paths; four are measured here, so a built
benchmark can be put next to its Table 3:

- **long context**: tokens of the sample's context (`fcbench.stats.tokens`: messages + tool specs + the
  gold path's responses, counted in cl100k_base);
- **long parameter values**: the longest argument value in characters (a string's length, any
  other value's compact JSON text), references resolved: the value the model must write;
- **parameter values from responses**: the sample has an argument whose value the model can only
  find in an earlier response: a `$label.path$` reference, or a literal (string of 2+ characters,
  or a number) that the query text does not contain and an earlier step's response does;
- **user constraints**: constraints in the query, found by `find_constraints` (rules below).

Constraint rules (documented so counts are reproducible, and deliberately simple: a rule-based
detector counts phrasings, it does not understand them). Over the user messages, lower-cased,
each non-overlapping match of one of three kinds is one constraint:
- superlative: cheapest, most/least expensive, highest/lowest/best/top-rated, shortest, longest,
  earliest, latest, fastest, nearest, closest, largest, smallest, first/last available;
- comparison: under/below/over/above/less than/more than/at least/at most/no more than/up to/
  cheaper than/within/between, followed (within three words) by a number or an amount;
- time bound: before/after/by/until/no later than/no earlier than, followed by a clock time
  ("10 am", "10:30", "noon", "midnight"), a weekday or a date with a month name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterator

from fcbench.json_values import json_leaves
from fcbench.references import parse_reference
from fcbench.resolve import CallSite, UnresolvedReference, resolve_arguments
from fcbench.sample import Sample
from fcbench.stats.tokens import context_tokens

_SUPERLATIVE = (r"\b(?:cheapest|most expensive|least expensive|highest[- ]rated|best[- ]rated|top[- ]rated|"
                r"highest|lowest|best|shortest|longest|earliest|latest|fastest|nearest|closest|largest|"
                r"smallest|first available|last available)\b")
_AMOUNT = r"(?:[$€£¥]\s*)?\d[\d,.]*"
_COMPARISON = (r"\b(?:under|below|over|above|less than|more than|fewer than|at least|at most|no more than|"
               r"no less than|up to|cheaper than|within|between)\b(?:\W+\w+){0,2}?\W+" + _AMOUNT)
_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
           "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_TIME_POINT = (r"(?:\d{1,2}(?::\d{2})?\s*(?:a\.?m\.?|p\.?m\.?)|\d{1,2}:\d{2}|noon|midnight|"
               r"(?:" + _WEEKDAYS + r")|(?:" + _MONTHS + r")\.?\s+\d{1,2}\b|\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:"
               + _MONTHS + r")\b)")
_TIME_BOUND = r"\b(?:before|after|by|until|till|no later than|no earlier than)\s+(?:the\s+)?" + _TIME_POINT
_CONSTRAINT = re.compile(f"(?P<superlative>{_SUPERLATIVE})|(?P<comparison>{_COMPARISON})|(?P<time_bound>{_TIME_BOUND})",
                         re.IGNORECASE)
CONSTRAINT_KINDS = ("superlative", "comparison", "time_bound")


@dataclass(frozen=True)
class Constraint:
    kind: str  # one of CONSTRAINT_KINDS
    text: str


def find_constraints(text: str) -> list[Constraint]:
    """The constraints a query states, by the module's rules, in text order."""
    found = []
    for match in _CONSTRAINT.finditer(text):
        kind = next(name for name in CONSTRAINT_KINDS if match.group(name))
        found.append(Constraint(kind, match.group(0)))
    return found


def user_text(sample: Sample) -> str:
    """Every user message of the sample (and of its later turns), joined."""
    texts = [m.get("content") for m in sample.messages if m.get("role") == "user"]
    for turn in sample.turns or []:
        texts.extend(m.get("content") for m in turn.messages if m.get("role") == "user")
    return "\n".join(text for text in texts if isinstance(text, str))


def value_length(value: Any) -> int:
    """An argument value's length in characters: a string's own, any other value's compact JSON."""
    if isinstance(value, str):
        return len(value)
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _response_values(response: Any) -> tuple[set[str], set[float]]:
    # An explicit stack rather than json_leaves' nested generators: responses of 100k+ tokens
    # hold tens of thousands of leaves, and this runs on every sample of every statistics pass.
    strings: set[str] = set()
    numbers: set[float] = set()
    stack = [response]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            strings.add(item)
        elif isinstance(item, (int, float)) and not isinstance(item, bool):
            numbers.add(item)
    return strings, numbers


def _number_in_text(number: float, text: str) -> bool:
    spelled = str(int(number)) if isinstance(number, float) and number.is_integer() else str(number)
    return re.search(rf"(?<![\d.]){re.escape(spelled)}(?![\d])", text) is not None


def needs_response_values(sample: Sample, query: str) -> bool:
    """Whether an argument's value must be read from an earlier step's response (module docstring)."""
    strings: set[str] = set()
    numbers: set[float] = set()
    lowered = query.lower()
    for step in sample.all_steps():
        for call in step:
            for leaf in json_leaves(call.arguments):
                if parse_reference(leaf) is not None:
                    return True
                if isinstance(leaf, str) and len(leaf) >= 2 and leaf in strings and leaf.lower() not in lowered:
                    return True
                if (isinstance(leaf, (int, float)) and not isinstance(leaf, bool) and leaf in numbers
                        and not _number_in_text(leaf, query)):
                    return True
        for call in step:  # parallel calls cannot read each other: responses count from the next step
            if "response" in call.model_fields_set:
                more_strings, more_numbers = _response_values(call.response)
                strings |= more_strings
                numbers |= more_numbers
    return False


@dataclass(frozen=True)
class SampleHardness:
    context_tokens: int
    longest_value: int  # characters
    needs_response_values: bool
    constraints: tuple[Constraint, ...]


def resolved_argument_values(sample: Sample) -> Iterator[Any]:
    """Every argument value of the gold path as the model must write it: a `$label.path$`
    reference replaced by the value it points at in the earlier responses (ComplexFuncBench's
    500-character parameter values are booking tokens copied out of responses), or kept as written
    when it cannot be resolved (a response was not recorded)."""
    outputs: dict[str, Any] = {}
    for step_index, step in enumerate(sample.all_steps()):
        for call in step:
            try:
                arguments = resolve_arguments(call.arguments, outputs, CallSite(call.label, call.name, step_index))
            except UnresolvedReference:
                arguments = call.arguments
            yield from arguments.values()
        for call in step:  # parallel calls cannot read each other: outputs count from the next step
            if "response" in call.model_fields_set:
                outputs[call.label] = call.response


def measure_hardness(sample: Sample) -> SampleHardness:
    query = user_text(sample)
    longest = max((value_length(value) for value in resolved_argument_values(sample)), default=0)
    return SampleHardness(
        context_tokens=context_tokens(sample),
        longest_value=longest,
        needs_response_values=needs_response_values(sample, query),
        constraints=tuple(find_constraints(query)),
    )
